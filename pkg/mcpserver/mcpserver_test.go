package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/pkg/access"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/embedding"
	"github.com/toolsearch/toolsearch/pkg/httpapi"
	"github.com/toolsearch/toolsearch/pkg/search"
	"github.com/toolsearch/toolsearch/pkg/upstream"
)

// countingEmbedder is not *embedding.Local, so the service caches its vectors;
// texts counts what it was asked to embed.
type countingEmbedder struct {
	local *embedding.Local
	texts atomic.Int64
}

func (c *countingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	c.texts.Add(int64(len(texts)))
	return c.local.Embed(ctx, texts)
}

func (c *countingEmbedder) Info() embedding.Info {
	return embedding.Info{Provider: "counting", Model: "m", Dimensions: 256}
}

type rig struct {
	upstream *mcp.Server
	emb      *countingEmbedder
	svc      *search.Service
	mcp      *Server
	url      string
	status   string // the status page's URL
	changed  chan struct{}
}

func addTool(s *mcp.Server, name, desc string) {
	s.AddTool(&mcp.Tool{Name: name, Description: desc, InputSchema: map[string]any{
		"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}, "days": map[string]any{"type": "integer"}},
		"required": []any{"city"}}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a struct {
				City string
				Days int
			}
			json.Unmarshal(req.Params.Arguments, &a)
			if a.City == "Atlantis" {
				return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no such city"}}}, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s: sunny for %d days", a.City, a.Days)}}}, nil
		})
}

// newRig wires an in-process upstream, the upstream manager, the search
// service and the MCP server behind the HTTP API, as serve does.
func newRig(t *testing.T, keys []access.Key) *rig {
	t.Helper()
	return newRigWith(t, keys, Options{}, nil)
}

// newRigWith is newRig with the MCP server's options and more upstream
// tools.
func newRigWith(t *testing.T, keys []access.Key, opts Options, more func(*mcp.Server), core ...string) *rig {
	t.Helper()
	return newLearningRig(t, keys, opts, more, nil, core...)
}

// newLearningRig is newRigWith with the service's learning (nil: off).
func newLearningRig(t *testing.T, keys []access.Key, opts Options, more func(*mcp.Server), learning *search.Learning, core ...string) *rig {
	t.Helper()
	r := &rig{emb: &countingEmbedder{local: embedding.NewLocal(256)}, changed: make(chan struct{}, 16)}
	r.upstream = mcp.NewServer(&mcp.Implementation{Name: "weather", Version: "1"}, &mcp.ServerOptions{PageSize: 2})
	addTool(r.upstream, "get_forecast", "Get the weather forecast for a city for the next days.")
	addTool(r.upstream, "get_air_quality", "Get the air quality index of a city.")
	addTool(r.upstream, "get_alerts", "List active severe weather alerts for a city.")
	if more != nil {
		more(r.upstream)
	}
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return r.upstream }, nil))
	t.Cleanup(up.Close)

	files, err := catalog.DefaultPart()
	if err != nil {
		t.Fatal(err)
	}
	var ups *upstream.Manager
	load := func(context.Context) (*search.Setup, error) {
		cat, err := catalog.New(append([]catalog.Part{files}, ups.Parts()...))
		if err != nil {
			return nil, err
		}
		return &search.Setup{Catalog: cat, Keys: keys, Core: core}, nil
	}
	r.svc = search.New(search.Config{Embedder: r.emb, Load: load, Learning: learning})
	ups, err = upstream.New([]upstream.Config{{Name: "weather", URL: up.URL, Refresh: time.Hour}}, upstream.Options{OnChange: func() {
		if _, err := r.svc.Rebuild(context.Background()); err != nil {
			t.Errorf("rebuild after upstream change: %v", err)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	opts.Upstreams = ups
	srv := New(r.svc, opts)
	r.svc.OnPublish(srv.Announce)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ups.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	ups.WaitFirst(t.Context())
	if _, err := r.svc.Rebuild(t.Context()); err != nil {
		t.Fatal(err)
	}
	api := httptest.NewServer(httpapi.NewServer(r.svc, httpapi.Options{MCP: srv.Handler(), Upstreams: ups, CoreDirect: srv}))
	t.Cleanup(api.Close)
	r.mcp, r.url, r.status = srv, api.URL+"/mcp", api.URL+"/mcp/tool-search/status"
	return r
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}

func (r *rig) connect(t *testing.T, token string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case r.changed <- struct{}{}:
			default:
			}
		},
	})
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: r.url, HTTPClient: &http.Client{Transport: bearer{token}}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func structured[T any](t *testing.T, res *mcp.CallToolResult) T {
	t.Helper()
	var out T
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
	return out
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestMetaTools(t *testing.T) {
	r := newRig(t, nil)
	cs := r.connect(t, "")
	if caps := cs.InitializeResult().Capabilities; caps.Tools == nil || !caps.Tools.ListChanged {
		t.Errorf("capabilities = %+v, want tools.listChanged", caps)
	}
	list, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tl := range list.Tools {
		got = append(got, tl.Name)
		s, _ := json.Marshal(tl.InputSchema)
		if !strings.Contains(string(s), `"additionalProperties":false`) {
			t.Errorf("%s input schema is not strict: %s", tl.Name, s)
		}
		// A json.RawMessage field, inferred, is an array of bytes.
		if strings.Contains(string(s), `"maximum":255`) {
			t.Errorf("%s input schema has a byte array: %s", tl.Name, s)
		}
		var in struct {
			Properties map[string]struct{ Type any }
		}
		if err := json.Unmarshal(s, &in); err != nil || tl.Name == "call_tool" && in.Properties["arguments"].Type != "object" {
			t.Errorf("call_tool's arguments are not an object: %s", s)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, []string{"call_tool", "get_tool_schema", "list_servers", "search_tools", "search_tools_regex"}) {
		t.Errorf("tools/list = %v", got)
	}

	res := call(t, cs, "search_tools", map[string]any{"query": "will it rain in Oslo this week", "limit": 3})
	out := structured[searchOut](t, res)
	if len(out.Tools) == 0 || out.Tools[0].Server != "weather" || out.Tools[0].Name != "get_forecast" || !strings.Contains(text(res), "weather/get_forecast") {
		t.Errorf("search_tools = %+v / %q", out, text(res))
	}
	weak := call(t, cs, "search_tools", map[string]any{"query": "play some jazz music", "limit": 2})
	if out := structured[searchOut](t, weak); !out.NoMatch || !strings.HasPrefix(text(weak), "No tool clearly fits") || !strings.Contains(text(weak), "list_servers") {
		t.Errorf("a weak answer: no_match %v, text %q", out.NoMatch, text(weak))
	}
	// Names that match nothing are said first in the text, and at most
	// maxNamesWritten of them; the structure lists search's first
	// MaxUnknownListed and counts the rest.
	var hundred, listed []string
	for i := range 100 {
		hundred = append(hundred, fmt.Sprintf("s%02d", i))
		if i < search.MaxUnknownListed {
			listed = append(listed, fmt.Sprintf("server s%02d", i))
		}
	}
	for _, tt := range []struct {
		args      map[string]any
		text      string
		structure []string
	}{
		{map[string]any{"query": "rain", "servers": []string{"wether"}}, `Not found (nothing you can see has these names; list_servers gives the servers): "server wether" (did you mean "weather"?).` + "\n", []string{"server wether"}},
		{map[string]any{"query": "rain", "server_match": "wet"}, `Not found (nothing you can see has these names; list_servers gives the servers): "server_match wet".` + "\n", []string{"server_match wet"}},
		{map[string]any{"query": "select:get_forecast,a,b,c,d,e,f,g,h,i,j,k"}, `"i", "j" and 1 more.` + "\n1. weather/get_forecast", []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"}},
		{map[string]any{"query": "rain", "servers": hundred}, `"server s09" and 90 more.` + "\n", listed},
	} {
		res := call(t, cs, "search_tools", tt.args)
		if out := structured[searchOut](t, res); !strings.HasPrefix(text(res), "Not found") || !strings.Contains(text(res), tt.text) || !slices.Equal(out.Unknown, tt.structure) {
			t.Errorf("search_tools(%v): unknown %v, text %q", tt.args, out.Unknown, text(res))
		}
	}
	// An argument a meta-tool does not take is an error that names the
	// one meant, where one is near, and every one it takes.
	for _, tt := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"search_tools", map[string]any{"query": "x", "bogus": 1}, `search_tools: argument key "bogus" is unknown; it takes query, messages, limit,`},
		{"search_tools", map[string]any{"qeury": "x"}, `key "qeury" is unknown (did you mean "query"?)`},
		{"search_tools_regex", map[string]any{"patern": "^get"}, `(did you mean "pattern"?); it takes pattern,`},
		{"get_tool_schema", map[string]any{"tool": "get_forecast"}, `get_tool_schema: argument key "tool" is unknown; it takes name, server`},
		{"list_servers", map[string]any{"limt": 2}, `(did you mean "limit"?)`},
	} {
		res := call(t, cs, tt.tool, tt.args)
		if !res.IsError || !strings.Contains(text(res), tt.want) {
			t.Errorf("%s(%v) = %q, want an isError with %q", tt.tool, tt.args, text(res), tt.want)
		}
	}
	// A value the schema refuses is told what it must be, and what came,
	// not the SDK's validator's terms ("0/1 is less than 1.000000").
	for _, tt := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"search_tools", map[string]any{"query": 5}, `search_tools: argument "query" must be a string, got 5`},
		{"search_tools", map[string]any{"query": "x", "limit": "5"}, `search_tools: argument "limit" must be an integer from 1 to 50, got "5"`},
		{"search_tools", map[string]any{"query": "x", "limit": 0}, `argument "limit" must be an integer from 1 to 50, got 0`},
		{"search_tools", map[string]any{"query": "x", "limit": 2.5}, `argument "limit" must be an integer from 1 to 50, got 2.5`},
		{"search_tools", map[string]any{"query": "x", "operation": "delete"}, `argument "operation" must be one of "search", "list", got "delete"`},
		{"search_tools", map[string]any{"query": "x", "servers": "weather"}, `argument "servers" must be an array of strings, got "weather"`},
		{"search_tools", map[string]any{"query": "x", "read_only": "yes"}, `argument "read_only" must be true or false, got "yes"`},
		{"search_tools", map[string]any{"query": strings.Repeat("q", 100), "limit": strings.Repeat("9", 5000)}, `argument "limit" must be an integer from 1 to 50, got "9999`},
		{"search_tools_regex", map[string]any{"pattern": ""}, `search_tools_regex: argument "pattern" must be a string of 1 to 256 characters, got ""`},
		{"list_servers", map[string]any{"limit": 500}, `list_servers: argument "limit" must be an integer from 1 to 200, got 500`},
		{"get_tool_schema", map[string]any{"name": []string{"a"}}, `get_tool_schema: argument "name" must be a string, got ["a"]`},
		// Inside an argument: the value's path.
		{"search_tools", map[string]any{"messages": []map[string]any{{"role": "developer", "content": "x"}}}, `search_tools: argument "messages[0].role" must be one of "user", "assistant", "system", "tool", got "developer"`},
		{"search_tools", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "a"}, map[string]any{"role": "user", "content": 5}}}, `argument "messages[1].content" must be a string`},
		{"search_tools", map[string]any{"messages": []map[string]any{{"role": "user"}}}, `argument "messages[0].content" is required`},
		{"search_tools", map[string]any{"messages": []map[string]any{{"role": "user", "content": "a", "nmae": "x"}}}, `argument key "nmae" in messages[0] is unknown; it takes role, content`},
		{"search_tools", map[string]any{"messages": []any{5}}, `argument "messages[0]" must be an object, got 5`},
		{"get_tool_schema", map[string]any{}, `get_tool_schema: argument "name" is required`},
	} {
		res := call(t, cs, tt.tool, tt.args)
		if !res.IsError || !strings.Contains(text(res), tt.want) || len(text(res)) > 300 {
			t.Errorf("%s(%.80v) = %q, want an isError with %q", tt.tool, tt.args, text(res), tt.want)
		}
	}
	// Arguments that are no object: the SDK said so in Go's words ("into
	// Go value of type map[string]interface {}").
	for _, args := range []any{[]int{1}, "query=x", 5} {
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "search_tools", Arguments: args})
		if err != nil || !res.IsError || !strings.Contains(text(res), `search_tools: "arguments" must be an object, got `) || strings.Contains(text(res), "Go value") {
			t.Errorf("search_tools(%v) = %v, %v; want an isError saying the arguments must be an object", args, res, err)
		}
	}
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"nam": "get_forecast"}}); err == nil || !strings.Contains(err.Error(), `call_tool: argument key "nam" is unknown; it takes name, server, arguments, confirm`) {
		t.Errorf("call_tool with an unknown argument: %v", err)
	}

	sch := structured[schemaOut](t, call(t, cs, "get_tool_schema", map[string]any{"name": "get_forecast"}))
	if sch.Server != "weather" || !sch.Callable || sch.InputSchema["required"] == nil {
		t.Errorf("get_tool_schema = %+v", sch)
	}
	if res := call(t, cs, "get_tool_schema", map[string]any{"name": "nope"}); !res.IsError {
		t.Error("get_tool_schema of an unknown tool is not an error")
	}

	rx := structured[searchOut](t, call(t, cs, "search_tools_regex", map[string]any{"pattern": "^get_a", "servers": []string{"weather"}}))
	if rx.Mode != "regex" || len(rx.Tools) != 2 || rx.Tools[0].Name != "get_air_quality" || rx.Tools[1].Name != "get_alerts" {
		t.Errorf("search_tools_regex = %+v, want get_air_quality then get_alerts", rx)
	}
	if res := call(t, cs, "search_tools_regex", map[string]any{"pattern": "(get"}); !res.IsError || !strings.Contains(text(res), "missing closing )") {
		t.Errorf("an invalid pattern: %q, want an isError naming the problem", text(res))
	}
	inferred := structured[schemaOut](t, call(t, cs, "get_tool_schema", map[string]any{"name": "create_issue"}))
	if inferred.Annotations["readOnlyHint"] != false || !slices.Contains(inferred.AnnotationsInferred, "readOnlyHint") {
		t.Errorf("get_tool_schema(create_issue) annotations %v inferred %v, want readOnlyHint false, inferred", inferred.Annotations, inferred.AnnotationsInferred)
	}
	ro := structured[searchOut](t, call(t, cs, "search_tools", map[string]any{"query": "open a new issue", "read_only": true}))
	for _, tl := range ro.Tools {
		if tl.Name == "create_issue" {
			t.Errorf("read_only search returned create_issue: %+v", ro)
		}
	}

	servers := structured[listServersOut](t, call(t, cs, "list_servers", map[string]any{"query": "weath"}))
	if len(servers.Servers) != 1 || servers.Servers[0].Tools != 3 || servers.Servers[0].Health == nil || servers.Servers[0].Health.State != "connected" {
		t.Errorf("list_servers = %+v", servers)
	}

	res = call(t, cs, "call_tool", map[string]any{"name": "get_forecast", "arguments": map[string]any{"city": "Oslo", "days": 3}})
	if res.IsError || text(res) != "Oslo: sunny for 3 days" {
		t.Errorf("call_tool = %+v %q", res, text(res))
	}
	res = call(t, cs, "call_tool", map[string]any{"name": "get_forecast", "server": "weather", "arguments": map[string]any{"city": "Atlantis"}})
	if !res.IsError || text(res) != "no such city" {
		t.Errorf("the upstream's isError result did not pass through: %+v %q", res, text(res))
	}
	res = call(t, cs, "call_tool", map[string]any{"name": "get_forecast", "arguments": map[string]any{"days": "three"}})
	if !res.IsError || !strings.Contains(text(res), "city") && !strings.Contains(text(res), "days") {
		t.Errorf("bad arguments: %+v %q, want an isError naming the field", res, text(res))
	}
	if res := call(t, cs, "call_tool", map[string]any{"name": "create_issue", "arguments": map[string]any{}}); !res.IsError || !strings.Contains(text(res), "not a live upstream") {
		t.Errorf("call_tool of a catalog-file tool: %q", text(res))
	}
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "no_such_tool"}}); err == nil {
		t.Error("call_tool of an unknown tool is not a protocol error")
	}
}

func TestUpstreamChangeReachesClients(t *testing.T) {
	r := newRig(t, nil)
	cs := r.connect(t, "")
	addTool(r.upstream, "get_pollen_count", "Report today's pollen count for hay fever sufferers.")
	select {
	case <-r.changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no notifications/tools/list_changed reached the client")
	}
	var out searchOut
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		out = structured[searchOut](t, call(t, cs, "search_tools", map[string]any{"query": "pollen hay fever", "limit": 1}))
		if len(out.Tools) > 0 && out.Tools[0].Name == "get_pollen_count" {
			break
		}
	}
	if len(out.Tools) == 0 || out.Tools[0].Name != "get_pollen_count" {
		t.Fatalf("the added tool is not findable: %+v", out)
	}
	// Queries are embedded too; the build of the new snapshot counts its own.
	if got := r.svc.Current().Embedded; got != 1 {
		t.Errorf("adding one upstream tool embedded %d tool texts, want 1 (the others are cached)", got)
	}
	r.upstream.RemoveTools("get_alerts")
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := r.svc.Lookup(access.Caller{}, "weather", "get_alerts"); err != nil {
			break
		}
	}
	if res := call(t, cs, "get_tool_schema", map[string]any{"name": "get_alerts", "server": "weather"}); !res.IsError {
		t.Error("the removed tool is still there")
	}
}

func TestVisibility(t *testing.T) {
	keys := []access.Key{
		{Name: "all", Hash: sha256.Sum256([]byte("k-all"))},
		{Name: "no-weather", Hash: sha256.Sum256([]byte("k-files")), Visibility: access.Visibility{Servers: []string{"files"}}},
	}
	r := newRig(t, keys)
	c := mcp.NewClient(&mcp.Implementation{Name: "anon", Version: "1"}, nil)
	if _, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: r.url, MaxRetries: -1}, nil); err == nil {
		t.Error("connected without an API key")
	}
	cs := r.connect(t, "k-files")
	out := structured[searchOut](t, call(t, cs, "search_tools", map[string]any{"query": "weather forecast for a city"}))
	for _, tl := range out.Tools {
		if tl.Server != "files" {
			t.Errorf("a files-only key saw %s/%s", tl.Server, tl.Name)
		}
	}
	if res := call(t, cs, "get_tool_schema", map[string]any{"name": "get_forecast"}); !res.IsError {
		t.Error("a files-only key read the schema of a weather tool")
	}
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "get_forecast", "arguments": map[string]any{"city": "x"}}}); err == nil {
		t.Error("a files-only key called a weather tool")
	}
	servers := structured[listServersOut](t, call(t, cs, "list_servers", map[string]any{}))
	if len(servers.Servers) != 1 || servers.Servers[0].Name != "files" {
		t.Errorf("list_servers for a files-only key = %+v", servers)
	}
}

// A client that does not take SSE (Accept: application/json only) gets
// plain JSON answers.
func TestJSONOnlyClient(t *testing.T) {
	r := newRig(t, nil)
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`
	req, _ := http.NewRequest("POST", r.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got struct {
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
			Capabilities    struct {
				Tools struct {
					ListChanged bool `json:"listChanged"`
				} `json:"tools"`
			} `json:"capabilities"`
		} `json:"result"`
	}
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("initialize with Accept: application/json = %d %s", resp.StatusCode, ct)
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || got.Result.ProtocolVersion != "2025-06-18" || !got.Result.Capabilities.Tools.ListChanged {
		t.Errorf("initialize result = %+v, %v", got, err)
	}
}

// TestSearchConversation: search_tools takes the conversation form, and
// its schema refuses a turn it cannot read.
func TestSearchConversation(t *testing.T) {
	r := newRig(t, nil)
	cs := r.connect(t, "")
	res := call(t, cs, "search_tools", map[string]any{"messages": []map[string]any{
		{"role": "user", "content": "Is the air in Delhi safe to breathe today?"},
		{"role": "assistant", "content": "I can check that."},
		{"role": "user", "content": "and in Oslo?"},
	}, "limit": 3})
	if out := structured[searchOut](t, res); len(out.Tools) == 0 || out.Tools[0].Name != "get_air_quality" {
		t.Errorf("conversation search = %+v", out)
	}
	// A tool's output is context, as the HTTP API reads it.
	res = call(t, cs, "search_tools", map[string]any{"messages": []map[string]any{
		{"role": "user", "content": "Is the air in Delhi safe to breathe today?"},
		{"role": "tool", "content": "AQI 182 (unhealthy)"},
		{"role": "user", "content": "and in Oslo?"},
	}, "limit": 3})
	if out := structured[searchOut](t, res); res.IsError || len(out.Tools) == 0 || out.Tools[0].Name != "get_air_quality" {
		t.Errorf("conversation with a tool turn: %q, %+v", text(res), out)
	}
	for _, bad := range []map[string]any{
		{"messages": []map[string]any{{"role": "robot", "content": "x"}}},
		{"messages": []map[string]any{{"role": "user", "content": "x", "mood": "glad"}}},
		{"messages": []map[string]any{{"role": "user", "content": "x"}}, "query": "y"},
	} {
		if res := call(t, cs, "search_tools", bad); !res.IsError {
			t.Errorf("search_tools(%v) is not an error", bad)
		}
	}
}

// TestListChangedOnlyForWhatAKeySees: an upstream change reaches the
// sessions of keys that see the upstream, and not those of a key that
// cannot: hearing of it would tell that key the upstream exists.
func TestListChangedOnlyForWhatAKeySees(t *testing.T) {
	r := newRig(t, []access.Key{
		{Name: "all", Hash: access.HashSecret("all-secret")},
		{Name: "github", Hash: access.HashSecret("gh-secret"), Visibility: access.Visibility{Servers: []string{"github"}}},
	})
	heard := map[string]*atomic.Int32{"all-secret": {}, "gh-secret": {}}
	for token, n := range heard {
		connectWith(t, r.url, token, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { n.Add(1) }})
	}
	addTool(r.upstream, "get_pollen_count", "Report today's pollen count for hay fever sufferers.")
	waitFor(t, "the all-seeing key to hear of the change", func() bool { return heard["all-secret"].Load() > 0 })
	// A second change that the all-seeing key hears too: the restricted
	// key's session has had every chance to be told by now.
	addTool(r.upstream, "get_uv_index", "Report today's UV index.")
	waitFor(t, "the second change", func() bool { return heard["all-secret"].Load() > 1 })
	if n := heard["gh-secret"].Load(); n != 0 {
		t.Errorf("a key that cannot see the upstream heard %d list_changed", n)
	}
}

// TestCallToolCountsHops: call_tool forwards one more than the hops its
// request came with, and refuses a call that has come through
// upstream.MaxHops toolsearch services.
func TestCallToolCountsHops(t *testing.T) {
	r := newRigWith(t, nil, Options{}, func(s *mcp.Server) {
		s.AddTool(&mcp.Tool{Name: "echo_hops", Description: "Say the hops header.", InputSchema: map[string]any{"type": "object"}},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hops=" + req.Extra.Header.Get(upstream.HopsHeader)}}}, nil
			})
	})
	send := func(session, hops, body string) (*http.Response, string) {
		h := http.Header{}
		if hops != "" {
			h.Set(upstream.HopsHeader, hops)
		}
		return postWith(t, r.url, session, body, h)
	}
	resp, _ := send("", "", initBody)
	id := resp.Header.Get("Mcp-Session-Id")
	send(id, "", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for _, tt := range []struct{ hops, want string }{
		{"", "hops=1"},
		{"junk", "hops=1"},
		{"3", "hops=4"},
		{fmt.Sprint(upstream.MaxHops - 1), fmt.Sprintf("hops=%d", upstream.MaxHops)},
		{fmt.Sprint(upstream.MaxHops), "too many times"},
	} {
		_, body := send(id, tt.hops, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"echo_hops"}}}`)
		if !strings.Contains(body, tt.want) {
			t.Errorf("hops %q: %s, want %q", tt.hops, body, tt.want)
		}
	}
}
