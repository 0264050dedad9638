package mcpserver

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/config"
	"github.com/toolsearch/toolsearch/pkg/internal/jsontree"
	"github.com/toolsearch/toolsearch/pkg/redact"
	"github.com/toolsearch/toolsearch/pkg/search"
	"github.com/toolsearch/toolsearch/pkg/tooldef"
)

// metaInferred is the _meta key under which a directly listed tool names
// the annotations toolsearch inferred rather than its server declared.
const metaInferred = "io.github.toolsearch/annotations_inferred"

// exposed is a core tool listed as itself (expose: core_and_meta).
type exposed struct {
	server, name string
	def          string            // the listed definition, to tell a change from none
	args         map[string]string // parameters listed under new names: new -> own (tooldef.SafeKeys)
	noOutput     string            // why its upstream's output schema is left out, if it is
	refused      string            // why the SDK refused its definition, if it did: then it is not listed
}

// DirectWarnings are the core tools that a client reading tools/list
// gets short in the last published snapshot, by server and tool: not
// listed there at all, so found only by search, or listed without their
// upstream's output schema. Empty unless expose is core_and_meta. The
// log says each once; the status page says it for as long as it holds.
func (s *Server) DirectWarnings() []catalog.Warning {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.directWarnings)
}

// What a DirectWarnings entry says, before its reason.
const (
	notListed      = "not listed directly"
	noOutputListed = "listed directly without its output schema"
)

// directWarning is a DirectWarnings entry. A tool listed directly came
// from a live upstream (uncallable), so its source is the catalog's for
// that upstream's tools.
func directWarning(server, tool, what, why string) catalog.Warning {
	return catalog.Warning{Source: "upstream:" + server, Server: server, Tool: tool, Message: what + ": " + why}
}

// exposeCore lists the core whitelist's callable tools as themselves,
// beside the meta-tools, for clients that load tools/list once and never
// search. Adding or removing one makes the SDK send list_changed. Tools a
// session's key cannot see are taken out of its tools/list (see
// filterList) and answer a direct call as unknown.
func (s *Server) exposeCore(snap *search.Snapshot) {
	if s.opts.Expose != config.ExposeCoreAndMeta {
		return
	}
	next := map[string]exposed{}
	tools := map[string]*mcp.Tool{}
	var warnings []catalog.Warning
	for _, t := range snap.CoreTools() {
		if s.uncallable(t) != "" {
			continue // listed is callable: a catalog file's or a task's tool is found by search instead
		}
		def, args, noOutput, err := direct(t)
		if err != nil {
			warnings = append(warnings, directWarning(t.Server, t.Name, notListed, err.Error()))
			continue
		}
		b, _ := json.Marshal(def)
		next[def.Name] = exposed{server: t.Server, name: t.Name, def: string(b), args: args, noOutput: noOutput}
		tools[def.Name] = def
	}
	// The SDK is called outside s.mu: it notifies sessions, whose
	// requests take s.mu in filterList. Announce runs once per published
	// snapshot, one at a time, so no two of these interleave.
	s.mu.Lock()
	prev := s.exposed
	s.exposed = next
	s.mu.Unlock()
	var gone []string
	for name := range prev {
		if _, ok := next[name]; !ok {
			gone = append(gone, name)
		}
	}
	if len(gone) > 0 {
		s.srv.RemoveTools(gone...)
	}
	// next is published: sessions read it under s.mu (listing) while the
	// SDK is told of each tool, so what it refuses is written on a copy,
	// published with the warnings. Written on next, it raced a session's
	// listing that a list_changed of the same rebuild set off.
	done := maps.Clone(next)
	for _, name := range slices.Sorted(maps.Keys(done)) {
		e := done[name]
		if old, ok := prev[name]; ok && old.def == e.def {
			e.refused = old.refused // not offered to the SDK again, nor logged again
		} else if err := s.add(tools[name], func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return s.callDirect(ctx, req, e)
		}); err != nil {
			e.refused = err.Error()
		}
		done[name] = e
		switch {
		case e.refused != "":
			warnings = append(warnings, directWarning(e.server, e.name, notListed, e.refused))
		case e.noOutput != "":
			warnings = append(warnings, directWarning(e.server, e.name, noOutputListed, e.noOutput))
		}
	}
	slices.SortFunc(warnings, func(a, b catalog.Warning) int {
		return cmp.Or(cmp.Compare(a.Server, b.Server), cmp.Compare(a.Tool, b.Tool))
	})
	s.mu.Lock()
	s.exposed = done
	was := s.directWarnings
	s.directWarnings = warnings
	s.mu.Unlock()
	// Once a fault, not at every publish: a client reading
	// structuredContent by the listed schema finds none, or one that
	// never searches cannot call the tool, and the operator should learn
	// why here rather than from that client.
	for _, w := range warnings {
		if !slices.Contains(was, w) {
			what, why, _ := strings.Cut(w.Message, ": ")
			s.opts.Logger.Warn("core tool "+what, "server", w.Server, "tool", w.Tool, "reason", why)
		}
	}
}

// add registers an upstream's tool with the SDK, which panics on some
// schemas it would refuse; an upstream's schema is untrusted input, and a
// panic here would take the process down with it.
func (s *Server) add(t *mcp.Tool, h mcp.ToolHandler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the MCP SDK refused its definition: %v", r)
		}
	}()
	s.srv.AddTool(t, h)
	return nil
}

// direct is t as a tools/list entry under its qualified name, with its
// output schema, the parameters it lists under new names (new -> own),
// and why its output schema is left out, if it is (outputFault). Its input schema comes from an upstream: one the SDK would
// refuse (it panics on a schema that is not an object) is refused here
// instead, and what model providers would refuse is mended (tooldef.Mend)
// and renamed (tooldef.SafeKeys), since clients hand tools/list to theirs
// whole, and one tool they refuse fails every turn. callDirect gives a
// call's arguments back their own names.
func direct(t search.Found) (*mcp.Tool, map[string]string, string, error) {
	schema := map[string]any{}
	var args map[string]string
	if t.Schemas.HasInput() {
		mended, _ := tooldef.Mend(t.Schemas.Input())
		mended, args = tooldef.SafeKeys(mended)
		// A tree whose numbers keep their text (jsontree), not float64s.
		m, err := jsontree.Object(mended)
		if err != nil {
			return nil, nil, "", fmt.Errorf("input schema: %w", err)
		}
		schema = m
	}
	if typ, ok := schema["type"]; !ok {
		schema["type"] = "object"
	} else if typ != "object" {
		return nil, nil, "", fmt.Errorf("input schema has type %v, not object", typ)
	}
	if _, ok := schema["x-mcp-header"]; ok {
		return nil, nil, "", fmt.Errorf("input schema carries parameter header annotations")
	}
	h := t.Hints
	var ann mcp.ToolAnnotations
	if json.Unmarshal(h.Annotations, &ann) != nil {
		ann = mcp.ToolAnnotations{}
	}
	def := &mcp.Tool{Name: tooldef.Qualified(t.Tool), Title: t.Title, Description: t.Description, InputSchema: schema, Annotations: &ann}
	if def.Title == "" {
		def.Title = t.ID()
	}
	if len(h.Inferred) > 0 {
		def.Meta = mcp.Meta{metaInferred: h.Inferred}
	}
	// The upstream's output schema as it wrote it: a call's result is
	// forwarded unchanged, structuredContent and all, so it is the
	// upstream's schema that describes it, and a client typing or
	// checking results by it reads the same as from the upstream. But
	// the TypeScript SDK's client compiles every listed output schema
	// when it lists tools, and one it cannot compile (a type "strin", a
	// $ref to nothing) fails its whole tools/list: such a schema is left
	// out, as the go-sdk's resolver or Malformed finds it
	// (get_tool_schema still gives it).
	out := t.Schemas.Output()
	noOutput := outputFault(out)
	if len(out) > 0 && noOutput == "" {
		v, err := jsontree.Decode(out)
		if err != nil {
			return nil, nil, "", fmt.Errorf("output schema: %w", err)
		}
		def.OutputSchema = v
	}
	return def, args, noOutput, nil
}

// outputFault is why an output schema is not listed directly: a fault
// Malformed finds, or a reader that cannot resolve it; "" for one that
// is listed, or none.
func outputFault(out []byte) string {
	if len(out) == 0 {
		return ""
	}
	if m := tooldef.Malformed(out); m != "" {
		return m
	}
	if compileSchema(out).resolved == nil {
		return "a JSON Schema reader cannot resolve it (a $ref it cannot follow, a pattern it cannot compile)"
	}
	return ""
}

// callDirect runs a directly listed core tool as call_tool would: for the
// session's key only, arguments checked, destructive calls confirmed.
func (s *Server) callDirect(ctx context.Context, req *mcp.CallToolRequest, e exposed) (*mcp.CallToolResult, error) {
	caller, err := s.caller(req.Session)
	if err != nil {
		return nil, s.toolError(err)
	}
	t, err := s.svc.Lookup(caller, e.server, e.name)
	if err != nil {
		// The SDK's own answer for a tool that is not there, word for word.
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "unknown tool " + redact.Echo(req.Params.Name)}
	}
	args := req.Params.Arguments
	if len(e.args) > 0 {
		if args, err = ownNames(args, e.args); err != nil {
			return errorResult(fmt.Sprintf("arguments for %s/%s: %v", t.Server, t.Name, err)), nil
		}
	}
	return s.forward(ctx, req, caller, t, args, false)
}

// ownNames gives a call's arguments, listed under new names, the names
// the tool has (names: new -> own); any other argument passes as it is.
// One given under both names is refused: neither can be chosen.
func ownNames(args json.RawMessage, names map[string]string) (json.RawMessage, error) {
	if len(args) == 0 || string(args) == "null" {
		return args, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(args, &m); err != nil {
		return nil, errors.New("arguments must be a JSON object")
	}
	out := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		if _, renamed := names[k]; !renamed {
			out[k] = v
		}
	}
	for k, v := range m {
		own, ok := names[k]
		if !ok {
			continue
		}
		if _, twice := out[own]; twice {
			return nil, fmt.Errorf("%s is given twice, also as %s", redact.Echo(own), redact.Echo(k))
		}
		out[own] = v
	}
	return json.Marshal(out)
}

// filterList takes out of a tools/list answer the directly listed tools
// the session's key cannot see.
func (s *Server) filterList(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		lr, ok := res.(*mcp.ListToolsResult)
		if err != nil || !ok || method != "tools/list" {
			return res, err
		}
		s.mu.Lock()
		ex := s.exposed
		s.mu.Unlock()
		if len(ex) == 0 {
			return res, err
		}
		ss, _ := req.GetSession().(*mcp.ServerSession)
		caller, cerr := s.caller(ss)
		lr.Tools = slices.DeleteFunc(slices.Clone(lr.Tools), func(t *mcp.Tool) bool {
			e, ok := ex[t.Name]
			if !ok {
				return false
			}
			if cerr != nil {
				return true
			}
			_, lerr := s.svc.Lookup(caller, e.server, e.name)
			return lerr != nil
		})
		return lr, nil
	}
}
