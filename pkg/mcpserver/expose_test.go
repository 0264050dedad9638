package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/config"
	"github.com/toolsearch/toolsearch/pkg/logbuf"
	"github.com/toolsearch/toolsearch/pkg/search"
	"github.com/toolsearch/toolsearch/pkg/upstream"
)

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	list, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// TestExposeCoreAndMeta: with expose core_and_meta, the core whitelist's
// callable tools are listed as themselves beside the meta-tools, callable
// directly, and only for keys that may see them; a change to them reaches
// clients as list_changed.
func TestExposeCoreAndMeta(t *testing.T) {
	keys := []access.Key{
		{Name: "all", Hash: access.HashSecret("all-secret")},
		{Name: "github-only", Hash: access.HashSecret("gh-secret"), Visibility: access.Visibility{Servers: []string{"github"}}},
	}
	// platform/get_platform_info is core but comes from a catalog file:
	// not callable, so not listed.
	conditions := map[string]any{"type": "object", "properties": map[string]any{
		"temp_c": map[string]any{"type": "number", "maximum": 60}, "sky": map[string]any{"type": "string"}}, "required": []any{"temp_c", "sky"}}
	withConditions := func(s *mcp.Server) {
		s.AddTool(&mcp.Tool{Name: "get_conditions", Description: "Get the current weather conditions in a city.", InputSchema: map[string]any{"type": "object"}, OutputSchema: conditions},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"sky":"clear","temp_c":21.5}`}}, StructuredContent: map[string]any{"temp_c": 21.5, "sky": "clear"}}, nil
			})
	}
	r := newRigWith(t, keys, Options{Expose: config.ExposeCoreAndMeta}, withConditions, "weather/get_forecast", "weather/get_alerts", "weather/get_conditions", "platform/get_platform_info")
	all := connectWith(t, r.url, "all-secret", &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		select {
		case r.changed <- struct{}{}:
		default:
		}
	}})
	names := toolNames(t, all)
	for _, want := range []string{"search_tools", "call_tool", "weather__get_forecast", "weather__get_alerts"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list %v lacks %s", names, want)
		}
	}
	if slices.Contains(names, "platform__get_platform_info") {
		t.Errorf("tools/list %v has a core tool toolsearch cannot call", names)
	}
	list, _ := all.ListTools(t.Context(), nil)
	for _, tl := range list.Tools {
		if tl.Name != "weather__get_forecast" {
			continue
		}
		if tl.Annotations == nil || !tl.Annotations.ReadOnlyHint || tl.Meta[metaInferred] == nil {
			t.Errorf("listed get_forecast: annotations %+v meta %v, want readOnlyHint inferred", tl.Annotations, tl.Meta)
		}
		if s, ok := tl.InputSchema.(map[string]any); !ok || s["required"] == nil {
			t.Errorf("listed get_forecast has not its own schema: %v", tl.InputSchema)
		}
	}
	// A tool with an output schema is listed with it, and its structured
	// result comes through.
	raw, err := json.Marshal(list.Tools[slices.IndexFunc(list.Tools, func(tl *mcp.Tool) bool { return tl.Name == "weather__get_conditions" })].OutputSchema)
	if want, _ := json.Marshal(conditions); err != nil || !jsonEqual(raw, want) {
		t.Errorf("listed get_conditions: output schema %s, want the upstream's %s", raw, want)
	}
	if res := call(t, all, "weather__get_conditions", map[string]any{}); res.IsError || !reflect.DeepEqual(res.StructuredContent, map[string]any{"temp_c": 21.5, "sky": "clear"}) {
		t.Errorf("direct call of get_conditions: %+v", res)
	}
	res := call(t, all, "weather__get_forecast", map[string]any{"city": "Oslo", "days": 3})
	if res.IsError || text(res) != "Oslo: sunny for 3 days" {
		t.Errorf("direct call: %+v %q", res, text(res))
	}
	if res := call(t, all, "weather__get_forecast", map[string]any{"days": "three"}); !res.IsError {
		t.Error("a direct call with bad arguments was forwarded")
	}

	// A key that cannot see the weather server neither sees nor calls its
	// core tools, and the refusal reads as for a tool that does not exist.
	gh := connectWith(t, r.url, "gh-secret", &mcp.ClientOptions{})
	if names := toolNames(t, gh); slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(n, "weather__") }) {
		t.Errorf("a key without the weather server lists %v", names)
	}
	_, hidden := gh.CallTool(t.Context(), &mcp.CallToolParams{Name: "weather__get_forecast", Arguments: map[string]any{"city": "Oslo"}})
	_, absent := gh.CallTool(t.Context(), &mcp.CallToolParams{Name: "weather__get_forecasz", Arguments: map[string]any{"city": "Oslo"}})
	if hidden == nil || absent == nil || strings.ReplaceAll(hidden.Error(), "get_forecast", "get_forecasz") != absent.Error() {
		t.Errorf("hidden core tool: %v; absent tool: %v; want the same error", hidden, absent)
	}

	// The upstream changes a core tool: clients hear list_changed and
	// see the new definition.
	for len(r.changed) > 0 {
		<-r.changed
	}
	addTool(r.upstream, "get_alerts", "List active severe weather and flood alerts for a city.")
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(describe(t, all, "weather__get_alerts"), "flood") {
		if time.Now().After(deadline) {
			t.Fatal("weather__get_alerts not updated after its upstream changed it")
		}
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case <-r.changed:
	case <-time.After(10 * time.Second):
		t.Error("no notifications/tools/list_changed")
	}
}

func describe(t *testing.T, cs *mcp.ClientSession, name string) string {
	t.Helper()
	list, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range list.Tools {
		if tl.Name == name {
			return tl.Description
		}
	}
	return ""
}

// TestExposeMetaByDefault: without expose, tools/list is the meta-tools.
func TestExposeMetaByDefault(t *testing.T) {
	r := newRigWith(t, nil, Options{}, nil, "weather/get_forecast")
	names := toolNames(t, r.connect(t, ""))
	slices.Sort(names)
	if !slices.Equal(names, []string{"call_tool", "get_tool_schema", "list_servers", "search_tools", "search_tools_regex"}) {
		t.Errorf("tools/list = %v", names)
	}
}

// TestDirectMendsSchemas: a tool listed as itself carries its schema
// mended where model providers would refuse it, since clients forward
// tools/list to theirs whole; one whose type is not an object is refused.
func TestDirectMendsSchemas(t *testing.T) {
	tests := []struct {
		schema string
		want   map[string]any // nil: refused
	}{
		{`{"properties":{"ids":{"type":"array"},"n":{"type":"int"}}}`, map[string]any{"type": "object", "properties": map[string]any{
			"ids": map[string]any{"type": "array", "items": map[string]any{}}, "n": map[string]any{"type": "integer"}}}},
		{`{"type":"object","properties":{"q":{"type":"string"}}}`, map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}}},
		{`{"type":"array","items":{"type":"string"}}`, nil},
	}
	for _, tt := range tests {
		def, _, _, err := direct(search.Found{Tool: catalog.Tool{Server: "s", Name: "t", Description: "d", Schemas: catalog.MakeSchemas(json.RawMessage(tt.schema), nil, nil)}})
		switch {
		case tt.want == nil && err == nil:
			t.Errorf("%s: listed, want refused", tt.schema)
		case tt.want != nil && err != nil:
			t.Errorf("%s: %v", tt.schema, err)
		case tt.want != nil && !reflect.DeepEqual(def.InputSchema, tt.want):
			t.Errorf("%s: listed with %v, want %v", tt.schema, def.InputSchema, tt.want)
		}
	}
}

// TestDirectOutputSchema: a listed tool has its upstream's output
// schema as written, numbers whole; one without has none, and so has one
// the TypeScript SDK's client would fail its tools/list on compiling
// (each row's fault made ajv throw, 2026-12-06).
func TestDirectOutputSchema(t *testing.T) {
	for _, tt := range []struct {
		out    string
		listed bool
	}{
		{`{"properties":{"id":{"maximum":1234567890123456789,"type":"integer"}},"type":"object"}`, true}, // keys in the order a map is written
		{`{"items":{"type":"string"},"type":"array"}`, true},
		{`{"$defs":{"n":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/n"}},"type":"object"}`, true},
		{``, false},
		{`{"properties":{"a":{"type":"strin"}},"type":"object"}`, false},
		{`{"properties":{"a":{"$ref":"#/$defs/missing"}},"type":"object"}`, false},
		{`{"properties":{"a":{"$ref":"https://example.com/s.json"}},"type":"object"}`, false},
		{`{"required":"a","type":"object"}`, false},
		{`{"properties":[],"type":"object"}`, false},
	} {
		def, _, _, err := direct(search.Found{Tool: catalog.Tool{Server: "s", Name: "t", Description: "d", Schemas: catalog.MakeSchemas(nil, json.RawMessage(tt.out), nil)}})
		if err != nil {
			t.Fatalf("%s: %v", tt.out, err)
		}
		got, err := json.Marshal(def.OutputSchema)
		switch {
		case !tt.listed && def.OutputSchema != nil:
			t.Errorf("%s: listed with %s, want none", tt.out, got)
		case tt.listed && (err != nil || string(got) != tt.out):
			t.Errorf("listed with output schema %s, want %s", got, tt.out)
		}
	}
}

// TestDirectRenamesParameters: a core tool whose parameter names Anthropic
// refuses ("filter[id]") is listed under names it takes, and a call under
// those names reaches the upstream under the tool's own.
func TestDirectRenamesParameters(t *testing.T) {
	got := make(chan map[string]any, 1)
	r := newRigWith(t, nil, Options{Expose: config.ExposeCoreAndMeta}, func(s *mcp.Server) {
		s.AddTool(&mcp.Tool{Name: "list_stations", Description: "List the weather stations of a region.", InputSchema: map[string]any{
			"type": "object", "properties": map[string]any{"filter[region]": map[string]any{"type": "string"}, "año": map[string]any{"type": "integer"}},
			"required": []any{"filter[region]"}}},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				var a map[string]any
				json.Unmarshal(req.Params.Arguments, &a)
				got <- a
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
			})
	}, "weather/list_stations")
	cs := connectWith(t, r.url, "", &mcp.ClientOptions{})
	list, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	for _, tl := range list.Tools {
		if tl.Name == "weather__list_stations" {
			schema, _ = tl.InputSchema.(map[string]any)
		}
	}
	props, _ := schema["properties"].(map[string]any)
	if props["filter_region_"] == nil || props["a_o"] == nil || props["filter[region]"] != nil || !reflect.DeepEqual(schema["required"], []any{"filter_region_"}) {
		t.Fatalf("listed schema %v, want filter_region_ (required) and a_o", schema)
	}
	if res := call(t, cs, "weather__list_stations", map[string]any{"filter_region_": "north", "a_o": 2026}); res.IsError {
		t.Fatalf("direct call: %s", text(res))
	}
	if a := <-got; a["filter[region]"] != "north" || a["año"] != float64(2026) || len(a) != 2 {
		t.Errorf("the upstream got %v, want its own names", a)
	}
}

func TestOwnNames(t *testing.T) {
	names := map[string]string{"filter_id_": "filter[id]"}
	tests := []struct{ args, want, err string }{
		{`{"filter_id_":"x","limit":2}`, `{"filter[id]":"x","limit":2}`, ""},
		{`{"filter[id]":"x"}`, `{"filter[id]":"x"}`, ""},
		{`{"filter_id_":"x","filter[id]":"y"}`, "", `"filter[id]" is given twice, also as "filter_id_"`},
		{`[1]`, "", "must be a JSON object"},
		{`null`, `null`, ""},
	}
	for _, tt := range tests {
		got, err := ownNames(json.RawMessage(tt.args), names)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%s: error %v, want %q", tt.args, err, tt.err)
		case tt.err == "" && (err != nil || string(got) != tt.want):
			t.Errorf("%s: %s, %v; want %s", tt.args, got, err, tt.want)
		}
	}
}

// jsonEqual reports whether a and b are the same JSON value.
func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// liveServers are Upstreams that have the servers named, and call none.
type liveServers []string

func (l liveServers) Has(server string) bool  { return slices.Contains(l, server) }
func (liveServers) Status() []upstream.Status { return nil }
func (liveServers) Call(context.Context, string, string, json.RawMessage, upstream.CallOptions) (*mcp.CallToolResult, error) {
	return nil, errors.New("not called")
}

// TestUncallable: call_tool runs a live upstream's tool, unless it runs
// only as an MCP task (which the SDK cannot ask for): that one, like a
// catalog file's, is refused up front with the reason, said by
// get_tool_schema's callable too, and not listed directly.
func TestUncallable(t *testing.T) {
	s := &Server{opts: Options{Upstreams: liveServers{"live"}}}
	for _, tt := range []struct {
		server string
		tasks  catalog.TaskSupport
		why    string
	}{
		{"live", catalog.TasksForbidden, ""},
		{"live", catalog.TasksOptional, ""},
		{"live", catalog.TasksRequired, `runs only as an MCP task (its execution.taskSupport is "required")`},
		{"file", catalog.TasksForbidden, "comes from a catalog file"},
	} {
		found := search.Found{Tool: catalog.Tool{Server: tt.server, Name: "t", Tasks: tt.tasks}}
		if got := s.uncallable(found); (tt.why == "") != (got == "") || !strings.Contains(got, tt.why) {
			t.Errorf("%s, tasks %s: %q, want %q", tt.server, tt.tasks, got, tt.why)
		}
	}
	if got := (&Server{}).uncallable(search.Found{Tool: catalog.Tool{Server: "live"}}); got == "" {
		t.Error("without upstreams, a tool is callable")
	}
}

// TestDirectOutputSchemaLeftOutIsLogged: a core tool listed directly
// without its upstream's output schema is logged with why, once for its
// definition, not at every publish.
func TestDirectOutputSchemaLeftOutIsLogged(t *testing.T) {
	logs := &logbuf.Buffer{}
	bad := map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"$ref": "#/$defs/missing"}}}
	r := newRigWith(t, nil, Options{Expose: config.ExposeCoreAndMeta, Logger: slog.New(slog.NewTextHandler(logs, nil))}, func(s *mcp.Server) {
		s.AddTool(&mcp.Tool{Name: "get_station", Description: "Get a weather station.", InputSchema: map[string]any{"type": "object"}, OutputSchema: bad},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "{}"}}}, nil
			})
	}, "weather/get_station", "weather/get_forecast")
	if _, err := r.svc.Rebuild(t.Context()); err != nil {
		t.Fatal(err)
	}
	got := logs.String()
	if n := strings.Count(got, "without its output schema"); n != 1 || !strings.Contains(got, "tool=get_station") || !strings.Contains(got, "cannot resolve") {
		t.Errorf("logged %d times, want once naming get_station and why:\n%s", n, got)
	}
	if strings.Contains(got, "get_forecast") {
		t.Errorf("a tool without an output schema was logged:\n%s", got)
	}
}

// TestDirectWarningsInStatus: the status page names each core tool that
// tools/list leaves out or lists without its output schema, and why, for
// as long as that holds: the log says it once, not at every publish, and
// an operator arriving later reads it there.
func TestDirectWarningsInStatus(t *testing.T) {
	bad := map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"$ref": "#/$defs/missing"}}}
	station := func(out map[string]any) *mcp.Tool {
		return &mcp.Tool{Name: "get_station", Description: "Get a weather station.", InputSchema: map[string]any{"type": "object"}, OutputSchema: out}
	}
	answer := func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "{}"}}}, nil
	}
	logs := &logbuf.Buffer{}
	r := newRigWith(t, nil, Options{Expose: config.ExposeCoreAndMeta, Logger: slog.New(slog.NewTextHandler(logs, nil))}, func(s *mcp.Server) {
		s.AddTool(station(bad), answer)
		s.AddTool(&mcp.Tool{Name: "set_units", Description: "Set the units forecasts are given in.", InputSchema: map[string]any{"type": "object", "x-mcp-header": map[string]any{"units": "X-Units"}}}, answer)
	}, "weather/get_station", "weather/set_units", "weather/get_forecast")
	read := func() []catalog.Warning {
		t.Helper()
		resp, err := http.Get(r.status)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st struct {
			CoreDirect []catalog.Warning `json:"core_direct_warnings"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			t.Fatal(err)
		}
		return st.CoreDirect
	}
	got := read()
	want := []struct{ tool, why string }{
		{"get_station", "listed directly without its output schema: a JSON Schema reader cannot resolve it"},
		{"set_units", "not listed directly: input schema carries parameter header annotations"},
	}
	if len(got) != len(want) {
		t.Fatalf("core_direct_warnings %+v, want %d", got, len(want))
	}
	for i, w := range want {
		if g := got[i]; g.Source != "upstream:weather" || g.Server != "weather" || g.Tool != w.tool || !strings.HasPrefix(g.Message, w.why) {
			t.Errorf("warning %d: %+v, want weather/%s from upstream:weather: %s", i, g, w.tool, w.why)
		}
	}
	// Published again with the same definitions, the warnings stay.
	if _, err := r.svc.Rebuild(t.Context()); err != nil {
		t.Fatal(err)
	}
	if again := read(); !reflect.DeepEqual(again, got) {
		t.Errorf("after a rebuild: %+v, want %+v", again, got)
	}
	if n := strings.Count(logs.String(), `msg="core tool not listed directly" server=weather tool=set_units reason="input schema carries`); n != 1 {
		t.Errorf("set_units logged %d times, want once:\n%s", n, logs)
	}
	// The upstream mends its schema: the warning goes with the next
	// listing, and get_station is listed with its output schema.
	r.upstream.AddTool(station(map[string]any{"type": "object", "properties": map[string]any{"id": map[string]any{"type": "string"}}}), answer)
	for ctx := t.Context(); ; {
		if now := read(); len(now) == 1 && now[0].Tool == "set_units" {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("warnings after the mend: %+v", read())
		case <-time.After(10 * time.Millisecond):
		}
	}
	cs := r.connect(t, "")
	list, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range list.Tools {
		if strings.HasSuffix(tool.Name, "get_station") && tool.OutputSchema == nil {
			t.Errorf("%s listed without its mended output schema", tool.Name)
		}
	}
}

// TestAnnounceWhileListed: a rebuild's announcement and a session's
// listing, at once, as a list_changed of one rebuild sets off listings
// while the next rebuild announces. Run with -race: the announcement
// wrote on the map it had published.
func TestAnnounceWhileListed(t *testing.T) {
	r := newRigWith(t, nil, Options{Expose: config.ExposeCoreAndMeta}, nil, "weather/get_forecast", "weather/get_alerts")
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				r.mcp.listing("")
			}
		}
	}()
	for range 20 {
		if _, err := r.svc.Rebuild(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	<-done
}
