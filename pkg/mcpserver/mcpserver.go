// Package mcpserver makes toolsearch an MCP server: a few meta-tools over
// Streamable HTTP let any MCP client search, inspect and call a catalog far
// larger than it could load upfront.
package mcpserver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/internal/mcphttp"
	"github.com/toolsearch/toolsearch/pkg/jsonkeys"
	"github.com/toolsearch/toolsearch/pkg/redact"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsearch/toolsearch/pkg/search"
	"github.com/toolsearch/toolsearch/pkg/upstream"
)

// Upstreams is what the MCP server needs of live upstream servers.
type Upstreams interface {
	Has(server string) bool
	Status() []upstream.Status
	Call(ctx context.Context, server, tool string, args json.RawMessage, opts upstream.CallOptions) (*mcp.CallToolResult, error)
}

// Options configure the server. Zero values are fine.
type Options struct {
	Logger    *slog.Logger
	Version   string
	Upstreams Upstreams // nil: no call_tool, no upstream health
	Sessions  SessionLimits
	// Confirm is the deployment's policy for calls to destructive tools:
	// ConfirmElicit (the default when empty), ConfirmArgument or
	// ConfirmOff. KeyConfirm returns a key's own policy, "" for the
	// deployment's; ConfirmTimeout bounds the wait for the user's answer
	// (DefaultConfirmTimeout when 0; keep it under Sessions.Idle).
	Confirm        string
	KeyConfirm     func(access.Caller) string
	ConfirmTimeout time.Duration
	// Expose is what tools/list offers: config.ExposeMeta (the default)
	// or config.ExposeCoreAndMeta.
	Expose string
	// Registerer receives the MCP server's metrics; nil registers nowhere.
	Registerer prometheus.Registerer
	// AnyHost turns off the SDK's refusal of a request that reached a
	// loopback address under another host's name (DNS rebinding).
	AnyHost bool
}

// Server is the MCP side of the service.
type Server struct {
	svc       *search.Service
	opts      Options
	sdkLogger *slog.Logger // the SDK's, one line per kind of event a minute
	srv       *mcp.Server
	mu        sync.Mutex
	lastHash  string // the catalog last announced
	sessions  *sessions
	confirm   *confirmer
	schemas   schemaCache        // upstream tools' input schemas, for call_tool
	exposed   map[string]exposed // by listed name; guarded by mu
	resume    *resumeStore       // what streamed calls sent, for a client that reconnects mid-call
	// directWarnings are the core tools exposeCore lists short; guarded by mu.
	directWarnings []catalog.Warning
	// streams is done once EndStreams is called; every GET stream ends then.
	streams    context.Context
	endStreams context.CancelFunc
}

// New returns an MCP server over svc.
func New(svc *search.Service, opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{svc: svc, opts: opts, confirm: newConfirmer(opts), resume: newResumeStore(opts.Registerer), sdkLogger: slog.New(newDedup(opts.Logger.Handler(), time.Minute)).With("component", "mcp")}
	s.streams, s.endStreams = context.WithCancel(context.Background())
	s.srv = mcp.NewServer(&mcp.Implementation{Name: "toolsearch", Title: "toolsearch: search a large tool catalog", Version: opts.Version},
		&mcp.ServerOptions{
			Logger:       s.sdkLogger,
			Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
			Instructions: "This server fronts a large catalog of tools. Call search_tools with what you want to do, " +
				"get_tool_schema for a tool's full parameters, and call_tool to run it (when offered).",
		})
	s.srv.AddReceivingMiddleware(s.filterList, s.rpcCodes, exactSchemas)
	s.srv.AddSendingMiddleware(s.listChanged)
	s.addSearch()
	s.addRegex()
	s.sessions = newSessions(s.srv, opts.Sessions)
	s.sessions.register(opts.Registerer)
	s.sessions.searchDone = svc.SearchDone
	s.sessions.listing = s.listing
	s.confirm.listening = s.sessions.listening
	mcp.AddTool(s.srv, &mcp.Tool{Name: "get_tool_schema", Title: "Get a tool's full definition", Description: getSchemaDescription,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)}, InputSchema: strict[getSchemaIn]()}, s.getSchema)
	s.addListServers()
	if opts.Upstreams != nil {
		in := strict[callToolIn]()
		// Inferred from json.RawMessage, arguments read as an array of
		// bytes or null: a client that checks a call against the schema
		// refused every object, as toolsearch itself did as an upstream.
		args := in.Properties["arguments"]
		args.Type, args.Types, args.Items = "object", nil, nil
		s.srv.AddTool(&mcp.Tool{Name: "call_tool", Title: "Call a catalog tool on its upstream server", Description: callToolDescription,
			Annotations: &mcp.ToolAnnotations{OpenWorldHint: ptr(true)}, InputSchema: in}, s.callTool)
	}
	return s
}

func ptr[T any](v T) *T { return &v }

// strict infers T's input schema and forbids unknown properties, so a
// model's typo is an error it sees instead of an ignored argument.
func strict[T any]() *jsonschema.Schema {
	sch, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("schema for %T: %v", *new(T), err)) // a programming error, caught by any test
	}
	sch.AdditionalProperties = &jsonschema.Schema{Not: &jsonschema.Schema{}}
	return sch
}

// maxInitializeBytes bounds an initialize request, whose params a session
// holds as long as it lives.
const maxInitializeBytes = 16 << 10

// Handler serves MCP over Streamable HTTP. A POST's one message is
// checked before the SDK sees it (no method or id of unbounded size is
// echoed back; unknown methods get -32601, unknown notifications 202;
// batches are refused), and answered as plain JSON unless it is a call
// forwarded upstream to a client that takes an event stream (see
// stream.go). Sessions are stateful (list_changed reaches clients on their
// GET stream), bounded by Options.Sessions, and kept while a GET stream
// is open (sessions.go). Every error is a JSON-RPC error.
func (s *Server) Handler() http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.srv }, &mcp.StreamableHTTPOptions{
		Logger: s.sdkLogger,
		// sessions.go closes idle sessions itself: the SDK's timer counts
		// only POSTs, so it closed sessions whose clients were listening.
		SessionTimeout:             0,
		MaxRequestBodyBytes:        MaxRequestBytes,
		DisableLocalhostProtection: s.opts.AnyHost,
		EventStore:                 s.resume,
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !slices.Contains(mcphttp.Methods, r.Method) {
			// Before the session check, which answered every other method
			// (HEAD, PUT, a CORS preflight's OPTIONS) "send initialize
			// first", and with a session the SDK's plain 405.
			w.Header().Set("Allow", mcphttp.Allow)
			writeRPCError(w, r, http.StatusMethodNotAllowed, nil, jsonrpc.CodeInvalidRequest, "this method is not allowed on /mcp: it takes "+mcphttp.Allow)
			return
		}
		if err := checkHeaders(r.Header); err != nil {
			writeRPCError(w, r, http.StatusBadRequest, nil, jsonrpc.CodeInvalidRequest, err.Error())
			return
		}
		key := access.CallerFrom(r.Context()).Key
		if r.Method == http.MethodGet {
			ctx, cancel := context.WithCancel(r.Context())
			defer cancel()
			defer context.AfterFunc(s.streams, cancel)()
			r = r.WithContext(ctx)
		}
		if r.Method != http.MethodPost {
			s.sessions.serve(w, r, key, envelope{}, h)
			return
		}
		env, err := checkEnvelope(w, r)
		if err != nil {
			var ee *envelopeError
			errors.As(err, &ee)
			writeRPCError(w, r, ee.status, nil, ee.code, ee.msg)
			return
		}
		switch {
		case env.method == "initialize" && len(env.raw) > maxInitializeBytes:
			// The session keeps its initialize params for its whole life.
			writeRPCError(w, r, http.StatusBadRequest, env.id, jsonrpc.CodeInvalidRequest, "initialize is over 16 KiB: a client's name, version and capabilities take far less")
			return
		case env.method != "" && !knownMethods[env.method] && env.id == nil:
			w.WriteHeader(http.StatusAccepted) // an unknown notification is ignored
			return
		case env.method != "" && !knownMethods[env.method]:
			writeRPCError(w, r, http.StatusOK, env.id, jsonrpc.CodeMethodNotFound, "method not found")
			return
		case env.method == "logging/setLevel" && env.id != nil:
			if err := checkSetLevel(env.raw); err != nil {
				writeRPCError(w, r, http.StatusOK, env.id, jsonrpc.CodeInvalidParams, err.Error())
				return
			}
		}
		r = r.Clone(r.Context())
		r.Body = io.NopCloser(bytes.NewReader(env.raw))
		r.Header.Del(streamHeader)
		stream := acceptsEventStream(r.Header.Values("Accept")) && streams(env.raw)
		if stream {
			r.Header.Set(streamHeader, "1")
		} else {
			// The SDK insists on both media types; the answer is JSON anyway.
			r.Header.Set("Accept", "application/json, text/event-stream")
		}
		if stream {
			w = &tamingWriter{ResponseWriter: w}
			r = r.WithContext(resumable(r.Context()))
		} else {
			jw := &jsonWriter{ResponseWriter: w}
			defer jw.finish()
			w = jw
		}
		// The HTTP API authenticated the request and put its caller in the
		// context; sessions are counted and bound per key.
		s.sessions.serve(w, r, key, env, h)
	})
}

func acceptsEventStream(values []string) bool {
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			mt, _, _ := strings.Cut(strings.TrimSpace(part), ";")
			if mt == "text/event-stream" || mt == "*/*" || mt == "text/*" {
				return true
			}
		}
	}
	return false
}

// EndStreams ends every GET stream, open or to come; the sessions stay.
// At shutdown: http.Server.Shutdown waits for requests to finish, and a
// listening client's stream never does, so one open stream held the
// process for the whole shutdown timeout. The client reconnects, to
// another replica behind a load balancer.
func (s *Server) EndStreams() { s.endStreams() }

// Announce tells connected clients that the catalog changed: search_tools
// is registered again, which makes the SDK send
// notifications/tools/list_changed to every session that can receive it.
// Its description never names servers or counts tools: every key reads
// the same description, and a key must not learn of tools it cannot see.
func (s *Server) Announce(snap *search.Snapshot) {
	s.mu.Lock()
	same := snap.Catalog.Hash() == s.lastHash
	s.lastHash = snap.Catalog.Hash()
	s.mu.Unlock()
	if !same {
		s.addSearch()
	}
	s.exposeCore(snap)
}

// caller is whose visibility applies to an MCP request: the key its
// session is bound to. The HTTP layer authenticated every request of the
// session once, and the session registry admits a request only with the
// key that opened the session, so no request is authenticated twice.
func (s *Server) caller(ss *mcp.ServerSession) (access.Caller, error) {
	if ss == nil {
		return access.Caller{}, access.ErrUnauthorized
	}
	c, ok := s.sessions.callerOf(ss.ID())
	if !ok {
		return access.Caller{}, access.ErrUnauthorized
	}
	return c, nil
}

// toolError is what a meta-tool answers for err: an error the model can
// act on stays an error (the SDK makes it an isError result); anything
// else is a protocol error with a code, logged here, where it is handled.
func (s *Server) toolError(err error) error {
	var re *search.RequestError
	var te *search.UnknownTemplateError
	var oe *access.OverBudgetError
	switch {
	case errors.As(err, &re), errors.As(err, &te), errors.As(err, &oe), errors.Is(err, search.ErrUnknownTool),
		errors.Is(err, search.ErrNotReady), errors.Is(err, catalog.ErrAmbiguousTool):
		return err
	case errors.Is(err, access.ErrUnauthorized):
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "unauthorized"}
	}
	s.opts.Logger.Error("mcp tool failed", "err", err)
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
}

// longRun is a run of text without spaces longer than an error may
// quote of an input.
var longRun = regexp.MustCompile(`\S{65,}`)

// tame bounds an error message: no run of it without spaces over 64 bytes
// (an input quoted whole, "enum: MMMM…"), and 500 bytes in all.
func tame(msg string) string {
	msg = longRun.ReplaceAllStringFunc(msg, func(run string) string { return redact.Clip(run, 64, "…") })
	return clip(msg)
}

// tameToolError tames the text of an isError result of a meta-tool, which
// the SDK writes when the arguments fail their schema, quoting them. An
// upstream's result, forwarded by call_tool, passes through as it came.
func tameToolError(req mcp.Request, res mcp.Result) {
	r, ok := res.(*mcp.CallToolResult)
	p, pok := req.GetParams().(*mcp.CallToolParamsRaw)
	if !ok || !r.IsError || !pok || !metaTools[p.Name] {
		return
	}
	if err := unknownArg(p.Name, p.Arguments); err != nil {
		// The SDK's text names the key but neither the one meant nor
		// those the tool takes, which a model needs to call again.
		r.Content = []mcp.Content{&mcp.TextContent{Text: tame(err.Error())}}
		return
	}
	if len(r.Content) == 1 {
		if t, ok := r.Content[0].(*mcp.TextContent); ok {
			if msg := badArg(p.Name, t.Text, p.Arguments); msg != "" {
				t.Text = tame(msg)
				return
			}
		}
	}
	for _, c := range r.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			t.Text = tame(t.Text)
		}
	}
}

// argKeys are the argument names each meta-tool takes.
var argKeys = map[string][]string{
	"search_tools":       jsonkeys.Fields[searchIn](),
	"search_tools_regex": jsonkeys.Fields[regexIn](),
	"get_tool_schema":    jsonkeys.Fields[getSchemaIn](),
	"list_servers":       jsonkeys.Fields[listServersIn](),
	"call_tool":          jsonkeys.Fields[callToolIn](),
}

// unknownArg is the error for a call of the meta-tool named whose
// arguments hold a key it does not take (the nearest one it does, as the
// HTTP API's unknown fields get, and every one), or nil.
func unknownArg(name string, args json.RawMessage) error {
	keys, ok := argKeys[name]
	if !ok {
		return nil
	}
	var ke *jsonkeys.Error
	if err := jsonkeys.Object(args, keys); !errors.As(err, &ke) || ke.Problem != "unknown" {
		return nil
	}
	if ke.Hint == "" {
		return fmt.Errorf("%s: argument %w", name, ke) // which lists them
	}
	return fmt.Errorf("%s: argument %w; it takes %s", name, ke, strings.Join(keys, ", "))
}

// rpcCodes gives every error the SDK would answer without a code (its
// own protocol-state errors are plain Go errors, sent as code 0) the code
// of an invalid request, and clips every error's message.
func (s *Server) rpcCodes(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		var rpcErr *jsonrpc.Error
		switch {
		case err == nil && method == "tools/call":
			tameToolError(req, res)
		case err == nil, ctx.Err() != nil:
		case !errors.As(err, &rpcErr):
			err = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: tame(err.Error())}
		case rpcErr.Code == jsonrpc.CodeInvalidParams && listCursor(req) != "":
			// The SDK's words were "invalid params", naming nothing.
			err = &jsonrpc.Error{Code: rpcErr.Code, Message: `"cursor" is not one this service issued for this listing; list again without it`}
		default:
			// The SDK's own errors can quote the request's params whole.
			err = &jsonrpc.Error{Code: rpcErr.Code, Message: tame(rpcErr.Message)}
		}
		return res, err
	}
}

// listCursor is the cursor of a listing request, or "".
func listCursor(req mcp.Request) string {
	switch p := req.GetParams().(type) {
	case *mcp.ListToolsParams:
		return p.Cursor
	case *mcp.ListPromptsParams:
		return p.Cursor
	case *mcp.ListResourcesParams:
		return p.Cursor
	case *mcp.ListResourceTemplatesParams:
		return p.Cursor
	}
	return ""
}

// listChanged lets notifications/tools/list_changed through to a session
// only when what its key can see changed since the session last heard (or
// opened): a change among tools a key cannot see must not reach it, or it
// learns that they exist. A session with no GET stream open has nowhere
// to receive it, so it is not sent (the SDK would log each failure).
func (s *Server) listChanged(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ss, ok := req.GetSession().(*mcp.ServerSession)
		if method != "notifications/tools/list_changed" || !ok {
			return next(ctx, method, req)
		}
		if !s.sessions.listening(ss.ID()) || !s.sessions.announce(ss.ID()) {
			return nil, nil
		}
		return next(ctx, method, req)
	}
}

// listing names what a key's tools/list and searches draw on: its view's
// catalog, and the core tools listed directly (every key sees the same
// meta-tools).
func (s *Server) listing(key string) string {
	view, err := s.svc.View(access.Caller{Key: key})
	if err != nil {
		return ""
	}
	s.mu.Lock()
	var listed []string
	for name, e := range s.exposed {
		if _, visible := view.Catalog.Lookup(e.server, e.name); visible {
			listed = append(listed, name+"\x00"+e.def)
		}
	}
	s.mu.Unlock()
	slices.Sort(listed)
	h := sha256.Sum256([]byte(strings.Join(listed, "\x00")))
	return view.Catalog.Hash() + "/" + hex.EncodeToString(h[:8])
}

// Run closes idle sessions until ctx is done.
func (s *Server) Run(ctx context.Context) { s.sessions.run(ctx) }
