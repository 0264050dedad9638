// Package mcpserver makes toolsearch an MCP server: a few meta-tools over
// Streamable HTTP let any MCP client search, inspect and call a catalog far
// larger than it could load upfront.
package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolsearch/toolsearch/pkg/access"

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
}

// Server is the MCP side of the service.
type Server struct {
	svc      *search.Service
	opts     Options
	srv      *mcp.Server
	mu       sync.Mutex
	lastHash string // the catalog last announced
	sessions *sessions
	confirm  *confirmer
	exposed  map[string]exposed // by listed name; guarded by mu
}

// New returns an MCP server over svc.
func New(svc *search.Service, opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{svc: svc, opts: opts, confirm: newConfirmer(opts)}
	s.srv = mcp.NewServer(&mcp.Implementation{Name: "toolsearch", Title: "toolsearch: search a large tool catalog", Version: opts.Version},
		&mcp.ServerOptions{
			Logger:       opts.Logger.With("component", "mcp"),
			Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
			Instructions: "This server fronts a large catalog of tools. Call search_tools with what you want to do, " +
				"get_tool_schema for a tool's full parameters, and call_tool to run it (when offered).",
		})
	s.srv.AddReceivingMiddleware(s.filterList)
	s.addSearch()
	s.addRegex()
	s.sessions = newSessions(s.srv, opts.Sessions)
	mcp.AddTool(s.srv, &mcp.Tool{Name: "get_tool_schema", Title: "Get a tool's full definition", Description: getSchemaDescription,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)}, InputSchema: strict[getSchemaIn]()}, s.getSchema)
	mcp.AddTool(s.srv, &mcp.Tool{Name: "list_servers", Title: "List the servers behind the catalog", Description: listServersDescription,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(false)}, InputSchema: strict[listServersIn]()}, s.listServers)
	if opts.Upstreams != nil {
		s.srv.AddTool(&mcp.Tool{Name: "call_tool", Title: "Call a catalog tool on its upstream server", Description: callToolDescription,
			Annotations: &mcp.ToolAnnotations{OpenWorldHint: ptr(true)}, InputSchema: strict[callToolIn]()}, s.callTool)
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

// Handler serves MCP over Streamable HTTP. Responses are application/json
// for single requests (server notifications go on the standalone GET
// stream), and a POST that accepts only application/json is served too,
// for clients that do not take SSE. Sessions are stateful (list_changed
// reaches clients on their GET stream) and bounded by Options.Sessions;
// a POST's envelope is checked before the SDK sees it, so no method or id
// of unbounded size is echoed back. Transport errors are plain text here;
// the HTTP API turns them into its JSON errors.
func (s *Server) Handler() http.Handler {
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.srv }, &mcp.StreamableHTTPOptions{
		JSONResponse:        true,
		Logger:              s.opts.Logger.With("component", "mcp-http"),
		SessionTimeout:      s.sessions.lim.Idle,
		MaxRequestBodyBytes: MaxRequestBytes,
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := checkHeaders(r.Header); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if r.Method == http.MethodPost {
			if !acceptsEventStream(r.Header.Values("Accept")) {
				r = r.Clone(r.Context())
				r.Header.Add("Accept", "text/event-stream") // it gets JSON anyway
			}
			body, err := checkEnvelope(w, r)
			if err != nil {
				http.Error(w, err.Error(), statusOf(err))
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		// The HTTP API authenticated the request and put its caller in the
		// context; sessions are counted and bound per key.
		s.sessions.serve(w, r, access.CallerFrom(r.Context()).Key, h)
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
	key, ok := s.sessions.keyOf(ss.ID())
	if !ok {
		return access.Caller{}, access.ErrUnauthorized
	}
	return access.Caller{Key: key}, nil
}

// toolError is an error the model can act on: it becomes an isError
// result, not a protocol error.
func toolError(err error) error {
	var re *search.RequestError
	var te *search.UnknownTemplateError
	switch {
	case errors.As(err, &re), errors.As(err, &te),
		errors.Is(err, search.ErrUnknownTool), errors.Is(err, search.ErrNotReady):
		return err
	case errors.Is(err, access.ErrUnauthorized):
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "unauthorized"}
	}
	return errors.New("internal error")
}
