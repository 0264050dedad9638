package mcpserver

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/internal/jsontree"
	"github.com/toolsearch/toolsearch/pkg/redact"
	"github.com/toolsearch/toolsearch/pkg/search"
	"github.com/toolsearch/toolsearch/pkg/upstream"
)

const searchPreamble = `Find tools in this server's catalog by describing what you want to do. ` +
	`Use it before assuming a capability is missing: the catalog holds far more tools than are listed here. ` +
	`Returns the best matches (name, server, description, score), best first. ` +
	`Query operators: "select:name1,name2" fetches tools by name; "+term" requires a term in the tool's name or description. ` +
	`Set operation "list" with servers or server_match to page through a server's tools in name order (pass next_cursor as cursor). ` +
	`Then call get_tool_schema for a tool's parameters.`

// scopeIn is what both search meta-tools take to narrow the tools they
// look at; its fields appear in each tool's input as if declared there.
type scopeIn struct {
	Servers  []string `json:"servers,omitempty" jsonschema:"only tools of these servers (exact names, see list_servers)"`
	ReadOnly bool     `json:"read_only,omitempty" jsonschema:"only tools known to change nothing (declared or inferred readOnlyHint)"`
	// The name says what is dropped, so false cannot read as "only destructive".
	ExcludeDestructive bool `json:"exclude_destructive,omitempty" jsonschema:"leave out tools known to delete or overwrite (declared or inferred destructiveHint)"`
}

// request is a search request narrowed to the scope.
func (in scopeIn) request() search.Request {
	return search.Request{Servers: in.Servers, ReadOnly: in.ReadOnly, ExcludeDestructive: in.ExcludeDestructive}
}

type searchIn struct {
	Query string `json:"query,omitempty" jsonschema:"what you want to do, in plain words; or select:name1,name2; +term requires a term"`
	// The conversation form: the SDK infers the items' schema from search.Message.
	Messages    []search.Message `json:"messages,omitempty" jsonschema:"instead of query: the recent turns of the conversation, newest last ({role: user|assistant|system|tool, content}; a tool turn is a tool's output); tools are found for the newest user turn, with the earlier turns as context"`
	Limit       int              `json:"limit,omitempty" jsonschema:"how many tools to return, 1 to 50; default 10"`
	ServerMatch string           `json:"server_match,omitempty" jsonschema:"only tools of servers whose name contains this text, any case"`
	Operation   string           `json:"operation,omitempty" jsonschema:"search (default) ranks by relevance; list pages through the tools of servers or server_match in name order, and takes no query"`
	Cursor      string           `json:"cursor,omitempty" jsonschema:"next_cursor from the previous list page"`
	scopeIn
}

type toolOut struct {
	Name        string   `json:"name"`
	Server      string   `json:"server"`
	Description string   `json:"description"`
	Score       *float32 `json:"score,omitempty"`
	Source      string   `json:"source"`
}

type searchOut struct {
	Tools       []toolOut         `json:"tools"`
	Mode        string            `json:"mode"`
	Degraded    bool              `json:"degraded"`
	Confident   *bool             `json:"confident,omitempty"`
	NoMatch     bool              `json:"no_match,omitempty"`
	Withheld    int               `json:"withheld,omitempty"`
	Total       *int              `json:"total,omitempty"`
	NextCursor  string            `json:"next_cursor,omitempty"`
	Unknown     []string          `json:"unknown,omitempty"`
	UnknownMore int               `json:"unknown_more,omitempty"`
	Ambiguous   []string          `json:"ambiguous,omitempty"`
	DidYouMean  map[string]string `json:"did_you_mean,omitempty"`
	// searchID is the answer's search id while learning is on: the
	// session's next uses of its tools teach (never sent to the model).
	searchID string
}

func (s *Server) addSearch() {
	mcp.AddTool(s.srv, &mcp.Tool{Name: "search_tools", Title: "Search the tool catalog", Description: searchPreamble,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)}, InputSchema: searchSchema()}, s.search)
}

// searchSchema is search_tools' input schema, made afresh for each
// registration (Announce registers it again).
func searchSchema() *jsonschema.Schema {
	in := strict[searchIn]()
	in.Properties["operation"].Enum = []any{"search", "list"}
	msgs := in.Properties["messages"]
	msgs.MaxItems = ptr(search.MaxMessages)
	msgs.Items.Properties["role"].Enum = []any{"user", "assistant", "system", search.RoleTool} // as the HTTP API reads them
	msgs.Items.Required = []string{"role", "content"}
	msgs.Items.AdditionalProperties = &jsonschema.Schema{Not: &jsonschema.Schema{}}
	in.Properties["limit"].Minimum, in.Properties["limit"].Maximum = ptr(1.0), ptr(float64(search.MaxTopK))
	return in
}

func (s *Server) search(ctx context.Context, req *mcp.CallToolRequest, in searchIn) (*mcp.CallToolResult, searchOut, error) {
	caller, err := s.caller(req.Session)
	if err != nil {
		return nil, searchOut{}, s.toolError(err)
	}
	sr := in.request()
	sr.Query, sr.Messages, sr.ServerMatch, sr.Operation, sr.Cursor = in.Query, in.Messages, in.ServerMatch, in.Operation, in.Cursor
	res, out, err := s.answer(ctx, "search_tools", sr, in.Limit, caller)
	if err == nil && out.searchID != "" {
		// What the session uses next of this answer's tools teaches.
		s.sessions.searched(req.Session.ID(), out.searchID)
	}
	return res, out, err
}

// maxNamesWritten bounds the names a diagnostic line repeats: a select:
// list may name thousands, all of them in the structured answer.
const maxNamesWritten = 10

// writeNames writes a diagnostic line: what, then names, each with the
// name it was nearly (near), if any.
func writeNames(b *strings.Builder, what string, names []string, more int, near map[string]string) {
	if len(names) == 0 {
		return
	}
	fmt.Fprintf(b, "%s:", what)
	for i, n := range names[:min(len(names), maxNamesWritten)] {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(b, " %q", n)
		if s, ok := near[n]; ok {
			fmt.Fprintf(b, " (did you mean %q?)", s)
		}
	}
	if more += max(len(names)-maxNamesWritten, 0); more > 0 {
		fmt.Fprintf(b, " and %d more", more)
	}
	b.WriteString(".\n")
}

// used records that the session used tool (its schema asked for, or a call
// that succeeded) after its last search: learning from use.
func (s *Server) used(ctx context.Context, ss *mcp.ServerSession, caller access.Caller, t search.Found) {
	if id := s.sessions.lastSearch(ss.ID()); id != "" {
		s.svc.Used(ctx, caller, id, t.ID())
	}
}

// answer runs a search for meta-tool tool, limit tools a page (the
// default when 0), and words it for a model.
func (s *Server) answer(ctx context.Context, tool string, sr search.Request, limit int, caller access.Caller) (*mcp.CallToolResult, searchOut, error) {
	if limit != 0 {
		sr.TopK = &limit
	}
	res, err := s.svc.Search(ctx, sr, caller)
	if err != nil {
		return nil, searchOut{}, s.toolError(inToolWords(tool, err))
	}
	out := searchOut{Tools: make([]toolOut, len(res.Tools)), Mode: string(res.Mode), Degraded: res.Degraded, Confident: res.Confident, NoMatch: res.NoMatch,
		Withheld: res.Withheld, Total: res.Total, NextCursor: res.NextCursor, searchID: res.SearchID}
	var b strings.Builder
	if res.Diagnostic != nil {
		d := res.Diagnostic
		out.Unknown, out.UnknownMore, out.Ambiguous, out.DidYouMean = d.Unknown, d.UnknownMore, d.Ambiguous, d.DidYouMean
		// Said first, in the text a model reads: an empty or weak answer
		// is often a misnamed server, not a missing tool.
		writeNames(&b, "Not found (nothing you can see has these names; list_servers gives the servers)", out.Unknown, out.UnknownMore, out.DidYouMean)
		writeNames(&b, "Ambiguous (several tools have these names; name them as server/tool)", out.Ambiguous, 0, nil)
	}
	if res.NoMatch {
		b.WriteString("No tool clearly fits this request. The closest candidates are below, but none matches well: " +
			"do not call one unless its description says it does the job. Next: rephrase with the action and the thing it acts on, " +
			"call list_servers to see what is connected, page through a server with operation list, or find tools by name with search_tools_regex.\n")
	}
	for i, h := range res.Tools {
		out.Tools[i] = toolOut{Name: h.Name, Server: h.Server, Description: h.Description, Score: h.Score, Source: string(h.Source)}
		fmt.Fprintf(&b, "%d. %s/%s", i+1, h.Server, h.Name)
		if h.Score != nil {
			fmt.Fprintf(&b, " (%.3f)", *h.Score)
		} else {
			fmt.Fprintf(&b, " (%s)", h.Source)
		}
		fmt.Fprintf(&b, ": %s\n", firstLine(h.Description))
	}
	if len(res.Tools) == 0 {
		b.WriteString("No tools matched. Try other words, list_servers, or operation list.\n")
	}
	if res.NextCursor != "" {
		fmt.Fprintf(&b, "More: call again with cursor %q.\n", res.NextCursor)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: b.String()}}}, out, nil
}

const regexDescription = `Find tools by a regular expression (RE2 syntax) over their names, and optionally their descriptions: ` +
	`"^github_" returns every tool whose name starts with github_. Use it when you know how tools are named; ` +
	`search_tools is better for describing what you want to do. Returns every match sorted by name, a page at a time (pass next_cursor as cursor). ` +
	`Matching is case-sensitive; start the pattern with (?i) to ignore case.`

type regexIn struct {
	Pattern      string `json:"pattern" jsonschema:"an RE2 regular expression, up to 256 bytes, matched against tool names"`
	Descriptions bool   `json:"descriptions,omitempty" jsonschema:"also match against the opening of each tool's description"`
	Limit        int    `json:"limit,omitempty" jsonschema:"how many tools per page, 1 to 50; default 10"`
	Cursor       string `json:"cursor,omitempty" jsonschema:"next_cursor from the previous page"`
	scopeIn
}

func (s *Server) addRegex() {
	mcp.AddTool(s.srv, &mcp.Tool{Name: "search_tools_regex", Title: "Find tools by a name pattern", Description: regexDescription,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)}, InputSchema: regexSchema()}, s.searchRegex)
}

func regexSchema() *jsonschema.Schema {
	in := strict[regexIn]()
	in.Properties["pattern"].MinLength, in.Properties["pattern"].MaxLength = ptr(1), ptr(search.MaxRegexBytes)
	in.Properties["limit"].Minimum, in.Properties["limit"].Maximum = ptr(1.0), ptr(float64(search.MaxTopK))
	in.Properties["descriptions"].Description += fmt.Sprintf("; refused when the tools in scope offer more than %d MiB of text: narrow with servers", search.MaxRegexText>>20)
	return in
}

func (s *Server) searchRegex(ctx context.Context, req *mcp.CallToolRequest, in regexIn) (*mcp.CallToolResult, searchOut, error) {
	caller, err := s.caller(req.Session)
	if err != nil {
		return nil, searchOut{}, s.toolError(err)
	}
	sr := in.request()
	sr.Regex, sr.RegexDescription, sr.Cursor = in.Pattern, in.Descriptions, in.Cursor
	return s.answer(ctx, "search_tools_regex", sr, in.Limit, caller)
}

// inToolWords says a request error of search in the words of tool's
// arguments. Search's messages name the HTTP API's fields, and a model
// mends its call by what the error names: told of "template" or "regex",
// which search_tools does not take, it sends them and is refused again.
func inToolWords(tool string, err error) error {
	var re *search.RequestError
	if !errors.As(err, &re) {
		return err
	}
	msg := re.Message
	switch {
	case errors.Is(err, search.ErrNoQuery):
		msg = `"query" (or "messages") is required and must not be blank, unless "operation" is "list"; search_tools_regex finds tools by a name pattern`
	case errors.Is(err, search.ErrCursorAlone):
		msg = `"cursor" pages an "operation":"list" answer; a cursor of search_tools_regex goes back to search_tools_regex`
	case tool == "search_tools_regex":
		// Its pattern is the HTTP API's "regex", named first in each
		// message about it, before any of the pattern is quoted.
		msg = strings.Replace(msg, `"regex"`, `"pattern"`, 1)
	}
	if msg == re.Message {
		return err
	}
	return &search.RequestError{Code: re.Code, Message: msg}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if r := []rune(s); len(r) > 200 {
		return string(r[:199]) + "…"
	}
	return s
}

const getSchemaDescription = `Return one tool's full definition: its input schema (the parameters to pass), ` +
	`output schema and annotations. Name the tool as search_tools returned it; give server too when several servers have a tool of that name.`

type getSchemaIn struct {
	Name   string `json:"name" jsonschema:"the tool's name"`
	Server string `json:"server,omitempty" jsonschema:"the tool's server; needed only when the name alone is ambiguous"`
}

// schemaOut's schemas are maps, not json.RawMessage: the SDK validates
// structured output against a schema inferred from this type, and a
// RawMessage would be inferred as a byte array.
type schemaOut struct {
	Name         string         `json:"name"`
	Server       string         `json:"server"`
	Title        string         `json:"title,omitempty"`
	Description  string         `json:"description"`
	InputSchema  map[string]any `json:"inputSchema"`
	OutputSchema map[string]any `json:"outputSchema,omitempty"`
	Annotations  map[string]any `json:"annotations,omitempty"`
	// AnnotationsInferred names the hints in Annotations that toolsearch
	// inferred because the server declared none.
	AnnotationsInferred []string           `json:"annotationsInferred,omitempty"`
	Execution           *catalog.Execution `json:"execution,omitempty"` // its task support, when it has one
	Callable            bool               `json:"callable"`            // call_tool can run it
}

// object is raw, a JSON object, as a tree whose numbers keep their text
// (jsontree): read into float64s, a schema's "default":
// 1234567890123456789 went out as 1234567890123456800.
func object(raw json.RawMessage) map[string]any {
	m, _ := jsontree.Object(raw)
	return m
}

func (s *Server) getSchema(ctx context.Context, req *mcp.CallToolRequest, in getSchemaIn) (*mcp.CallToolResult, schemaOut, error) {
	caller, err := s.caller(req.Session)
	if err != nil {
		return nil, schemaOut{}, s.toolError(err)
	}
	t, err := s.svc.Lookup(caller, in.Server, in.Name)
	if err != nil {
		return nil, schemaOut{}, fmt.Errorf("%w; search_tools finds tools by what they do", s.toolError(err))
	}
	input := object(t.Schemas.Input())
	if input == nil {
		input = map[string]any{"type": "object", "properties": map[string]any{}}
	}
	out := schemaOut{Name: t.Name, Server: t.Server, Title: t.Title, Description: t.Description, InputSchema: input,
		OutputSchema: object(t.Schemas.Output()), Annotations: object(t.Hints.Annotations), AnnotationsInferred: t.Hints.Inferred,
		Execution: t.Execution(), Callable: s.uncallable(t) == ""}
	s.used(ctx, req.Session, caller, t)
	if kept, ok := ctx.Value(exactSchemaKey{}).(*json.RawMessage); ok {
		*kept = exactSchema(out)
	}
	return nil, out, nil
}

// The SDK reads a typed tool's output back into float64s (to apply its
// output schema's defaults) and writes that, so get_tool_schema sent a
// schema's "default": 1234567890123456789 as 1234567890123456800.
// exactSchemas has get_tool_schema's answer written from its own output,
// in the SDK's form (keys sorted, as encoding/json writes a map), with
// numbers as the schema has them.
type exactSchemaKey struct{}

func exactSchemas(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		p, ok := req.GetParams().(*mcp.CallToolParamsRaw)
		if method != "tools/call" || !ok || p.Name != "get_tool_schema" {
			return next(ctx, method, req)
		}
		var kept json.RawMessage
		res, err := next(context.WithValue(ctx, exactSchemaKey{}, &kept), method, req)
		if r, ok := res.(*mcp.CallToolResult); ok && err == nil && !r.IsError && kept != nil {
			r.StructuredContent = kept
			for _, c := range r.Content {
				if t, ok := c.(*mcp.TextContent); ok {
					t.Text = string(kept)
				}
			}
		}
		return res, err
	}
}

// exactSchema is out as the SDK writes it, its numbers as written; nil
// if it cannot be.
func exactSchema(out schemaOut) json.RawMessage {
	b, err := json.Marshal(out)
	if err == nil {
		b, err = jsontree.Marshal(b)
	}
	if err != nil {
		return nil
	}
	return b
}

const listServersDescription = `List the servers whose tools are in the catalog, with how many tools each offers you, ` +
	`and, for live upstream servers, their health, a page at a time (next_cursor continues). Use the names with search_tools' servers filter.`

// defaultServerPage is list_servers' page without a limit: a model reads
// every entry, and a catalog of thousands of servers listed whole was
// 280 KB of one answer.
const defaultServerPage = 50

type listServersIn struct {
	Query  string `json:"query,omitempty" jsonschema:"only servers whose name contains this text, any case"`
	Limit  int    `json:"limit,omitempty" jsonschema:"how many servers per page; default 50"`
	Cursor string `json:"cursor,omitempty" jsonschema:"next_cursor from the previous page"`
}

type serverOut struct {
	Name   string           `json:"name"`
	Tools  int              `json:"tools"`
	Health *upstream.Status `json:"health,omitempty"`
}

type listServersOut struct {
	Servers    []serverOut `json:"servers"`
	Total      int         `json:"total"`
	NextCursor string      `json:"next_cursor,omitempty"`
}

func (s *Server) addListServers() {
	mcp.AddTool(s.srv, &mcp.Tool{Name: "list_servers", Title: "List the servers behind the catalog", Description: listServersDescription,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)}, InputSchema: listServersSchema()}, s.listServers)
}

func listServersSchema() *jsonschema.Schema {
	in := strict[listServersIn]()
	in.Properties["limit"].Minimum, in.Properties["limit"].Maximum = ptr(1.0), ptr(float64(search.MaxServerPage))
	in.Properties["limit"].Description = fmt.Sprintf("how many servers per page, 1 to %d; default %d", search.MaxServerPage, defaultServerPage)
	return in
}

func (s *Server) listServers(ctx context.Context, req *mcp.CallToolRequest, in listServersIn) (*mcp.CallToolResult, listServersOut, error) {
	caller, err := s.caller(req.Session)
	if err != nil {
		return nil, listServersOut{}, s.toolError(err)
	}
	page, err := s.svc.ServersPage(caller, in.Query, cmp.Or(in.Limit, defaultServerPage), in.Cursor)
	if err != nil {
		return nil, listServersOut{}, s.toolError(err)
	}
	health := map[string]upstream.Status{}
	if s.opts.Upstreams != nil {
		for _, st := range s.opts.Upstreams.Status() {
			health[st.Name] = st
		}
	}
	out := listServersOut{Servers: make([]serverOut, len(page.Servers)), Total: page.Total, NextCursor: page.NextCursor}
	for i, c := range page.Servers {
		out.Servers[i] = serverOut{Name: c.Name, Tools: c.Tools}
		if h, ok := health[c.Name]; ok {
			out.Servers[i].Health = &h
		}
	}
	return nil, out, nil
}

const callToolDescription = `Call a tool from the catalog on the upstream server that owns it, and return that server's result unchanged. ` +
	`Find the tool with search_tools and read its parameters with get_tool_schema first: arguments are checked against the tool's input schema before the call. ` +
	`A destructive tool (one that deletes or overwrites) is called only once the user confirms: the user is asked directly when the client supports it; ` +
	`otherwise the call returns an error saying how to confirm.`

type callToolIn struct {
	Name      string          `json:"name" jsonschema:"the tool's name, as search_tools returned it"`
	Server    string          `json:"server,omitempty" jsonschema:"the tool's server; needed only when the name alone is ambiguous"`
	Arguments json.RawMessage `json:"arguments,omitempty" jsonschema:"the tool's arguments, an object matching its input schema"`
	Confirm   bool            `json:"confirm,omitempty" jsonschema:"set only after the user has agreed to this call to a destructive tool; see the error that asks for it"`
}

// callTool forwards a call. An unknown tool is a protocol error; bad
// arguments and an unreachable upstream are isError results the model can
// act on; the upstream's own result, isError or not, passes through.
func (s *Server) callTool(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	caller, err := s.caller(req.Session)
	if err != nil {
		return nil, s.toolError(err)
	}
	var in callToolIn
	dec := json.NewDecoder(strings.NewReader(string(req.Params.Arguments)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil || in.Name == "" {
		if err := unknownArg("call_tool", req.Params.Arguments); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: tame(err.Error())}
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `call_tool needs {"name": ..., "server"?: ..., "arguments"?: {...}}`}
	}
	t, err := s.svc.Lookup(caller, in.Server, in.Name)
	if err != nil {
		if errors.Is(err, search.ErrUnknownTool) || errors.Is(err, search.ErrNotReady) || errors.Is(err, catalog.ErrAmbiguousTool) {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: clip(err.Error())}
		}
		return nil, s.toolError(err)
	}
	res, err := s.forward(ctx, req, caller, t, in.Arguments, in.Confirm)
	if err == nil && res != nil && !res.IsError {
		s.used(ctx, req.Session, caller, t) // a call that failed teaches nothing
	}
	return res, err
}

// uncallable says why call_tool cannot run t, or "" when it can.
func (s *Server) uncallable(t search.Found) string {
	switch {
	case s.opts.Upstreams == nil || !s.opts.Upstreams.Has(t.Server):
		return fmt.Sprintf("%s/%s comes from a catalog file, not a live upstream server: toolsearch can describe it but not call it", t.Server, t.Name)
	case t.Tasks == catalog.TasksRequired:
		// Its upstream refuses a plain tools/call, and the SDK cannot
		// make the task-augmented one: said before the call is sent,
		// rather than as the upstream's -32601.
		return fmt.Sprintf("%s/%s runs only as an MCP task (its execution.taskSupport is \"required\"), which toolsearch does not relay: call it on its server directly", t.Server, t.Name)
	}
	return ""
}

// forward calls t on its upstream, for call_tool and for core tools
// listed directly: arguments checked against its schema, destructive
// calls confirmed as the policy says.
func (s *Server) forward(ctx context.Context, req *mcp.CallToolRequest, caller access.Caller, t search.Found, args json.RawMessage, confirmed bool) (*mcp.CallToolResult, error) {
	if why := s.uncallable(t); why != "" {
		return errorResult(why), nil
	}
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	if err := s.schemas.validate(caller.Key, t.Schemas.Input(), args); err != nil {
		return errorResult(fmt.Sprintf("arguments for %s/%s do not match its input schema: %v", t.Server, t.Name, err)), nil
	}
	if res := s.confirm.gate(ctx, req, caller, t, args, confirmed); res != nil {
		return res, nil
	}
	var hops int
	if req.Extra != nil {
		hops = upstream.Hops(req.Extra.Header.Get(upstream.HopsHeader))
	}
	res, err := s.opts.Upstreams.Call(ctx, t.Server, t.Name, args, upstream.CallOptions{Progress: relayProgress(ctx, req), Hops: hops})
	if err != nil {
		return errorResult(err.Error()), nil
	}
	return res, nil
}

// relayProgress passes an upstream's progress on a forwarded call to the
// client, under the client's own token, when the client asked for
// progress. ctx is the client's request's: the SDK sends what is written
// under it on that request's own stream. The upstream is not trusted with
// the client's stream: a call relays progressBurst notifications, then
// progressRate a second, dropping those in between (a later one says
// more), and a message is clipped to maxProgressMessage bytes.
func relayProgress(ctx context.Context, req *mcp.CallToolRequest) func(context.Context, *mcp.ProgressNotificationParams) {
	token := req.Params.GetProgressToken()
	if token == nil {
		return nil
	}
	pace := rate.NewLimiter(progressRate, progressBurst)
	return func(_ context.Context, p *mcp.ProgressNotificationParams) {
		if !pace.Allow() {
			return
		}
		_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token, Progress: p.Progress, Total: p.Total,
			Message: redact.Clip(p.Message, maxProgressMessage, "…")})
	}
}

// What an upstream's progress may send a client on one call: an upstream
// sending thousands of notifications, or megabytes in each message, was
// relayed one for one.
const (
	progressRate       = 10 // a second
	progressBurst      = 10
	maxProgressMessage = 1 << 10
)

// errorResult is toolsearch's own isError answer; its message is tamed,
// since it can quote the caller's arguments (a schema violation).
func errorResult(msg string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: tame(msg)}}}
}
