// Command testupstream is an MCP server (Streamable HTTP, the official
// go-sdk) that misbehaves on request, for toolsearch's reliability runs
// (cmd/reliability, make reliability): a test drives it, kills it,
// restarts it on the same port, makes it hang, and changes its tools.
//
// Its tools: echo (answers at once), slow (answers after -slow), huge
// (answers -huge bytes of text), progress (four progress notifications
// back to back, then at once an answer), delete_item (destructive), and wide_tool (a
// -desc-bytes description and -params parameters). POST /control/add?name=N
// adds a tool named N, GET /control/ran?name=N says how many times tool N
// ran; with -hang it accepts connections and never answers, with -events
// it keeps its streams' events so that a client can resume one (as
// server-everything does).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "testupstream:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("testupstream", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	slow := fs.Duration("slow", 20*time.Second, "how long the slow tool takes")
	huge := fs.Int("huge", 10<<20, "bytes of text the huge tool answers")
	descBytes := fs.Int("desc-bytes", 1<<20, "bytes of wide_tool's description")
	params := fs.Int("params", 2000, "wide_tool's parameters")
	hang := fs.Bool("hang", false, "accept connections and never answer")
	token := fs.String("token", "", "when set, /mcp answers 401 to a request without Authorization: Bearer TOKEN")
	events := fs.Bool("events", false, "keep each stream's events, so a client whose connection drops resumes it with Last-Event-ID")
	stateless := fs.Bool("stateless", false, "serve protocol 2026-07-28 as well: no sessions, list_changed only on a client's subscriptions/listen stream")
	tool := fs.String("tool", "", "when set, one more tool of this name, as a new version of the upstream brings")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	logger := slog.New(slog.NewTextHandler(stderr, nil))
	// The SDK's server logs the requests it refuses as errors, which an
	// upstream's operator reads (and alerts on); its every request's
	// session, without sessions, is noise.
	sdkLog := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv := mcp.NewServer(&mcp.Implementation{Name: "testupstream", Version: "1"}, &mcp.ServerOptions{Logger: sdkLog})
	object := map[string]any{"type": "object"}
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true}
	// echo's schema holds a default no float64 holds: what a proxy's
	// reading does to a listed schema shows.
	echoSchema := json.RawMessage(`{"type":"object","properties":{"id":{"type":"integer","description":"An id to echo.","default":1234567890123456789}}}`)
	srv.AddTool(&mcp.Tool{Name: "echo", Description: "Echo the arguments back at once.", InputSchema: echoSchema, Annotations: readOnly},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res := text("echo " + string(req.Params.Arguments))
			if args := req.Params.Arguments; len(args) > 0 && args[0] == '{' {
				// As structured content and its text block's _meta too,
				// numbers as they came: what a proxy does to them shows.
				res.StructuredContent = args
				res.Content[0].(*mcp.TextContent).Meta = mcp.Meta{"arguments": args}
			}
			return res, nil
		})
	srv.AddTool(&mcp.Tool{Name: "slow", Description: "Take a long time before answering.", InputSchema: object, Annotations: readOnly},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(*slow):
			}
			return text("finally"), nil
		})
	srv.AddTool(&mcp.Tool{Name: "huge", Description: "Answer with a very large text.", InputSchema: object, Annotations: readOnly},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text(strings.Repeat("x", *huge)), nil
		})
	srv.AddTool(&mcp.Tool{Name: "progress", Description: "Report progress four times, then answer.", InputSchema: object, Annotations: readOnly},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			// Work, then four notices back to back and the result: the
			// last notice is sent in the same instant as the result, as
			// server-everything's last step's is.
			time.Sleep(200 * time.Millisecond)
			for i := range 4 {
				if tok := req.Params.GetProgressToken(); tok != nil {
					_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i + 1), Total: 4, Message: "working"})
				}
			}
			return text("done"), nil
		})
	srv.AddTool(&mcp.Tool{Name: "delete_item", Description: "Delete an item for good.", InputSchema: object,
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true)}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("deleted"), nil })
	props := map[string]any{}
	for i := range *params {
		props[fmt.Sprintf("parameter_%d", i)] = map[string]any{"type": "string", "description": fmt.Sprintf("The value of parameter number %d.", i)}
	}
	srv.AddTool(&mcp.Tool{Name: "wide_tool", Description: "Frobnicate quaternions. " + strings.Repeat("Very long words. ", *descBytes/17),
		InputSchema: map[string]any{"type": "object", "properties": props}, Annotations: readOnly},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("wide"), nil })

	if *tool != "" {
		srv.AddTool(&mcp.Tool{Name: *tool, Description: "A tool this version of the upstream brings.", InputSchema: object},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text(*tool), nil })
	}

	// How many times each tool ran: a call must not run twice.
	var ran sync.Map // tool name → *atomic.Int64
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && method == "tools/call" {
				n, _ := ran.LoadOrStore(p.Name, new(atomic.Int64))
				n.(*atomic.Int64).Add(1)
			}
			return next(ctx, method, req)
		}
	})

	mux := http.NewServeMux()
	opts := mcp.StreamableHTTPOptions{Stateless: *stateless}
	if *events {
		opts.EventStore = mcp.NewMemoryEventStore(nil)
	}
	var mcpHandler http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &opts)
	var refused atomic.Int64 // requests refused for their credentials
	if *token != "" {
		next := mcpHandler
		mcpHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer "+*token {
				refused.Add(1)
				w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
				http.Error(w, "invalid token", http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	mux.Handle("/mcp", mcpHandler)
	mux.HandleFunc("GET /control/refused", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, refused.Load())
	})
	mux.HandleFunc("GET /control/ran", func(w http.ResponseWriter, r *http.Request) {
		var n int64
		if v, ok := ran.Load(r.URL.Query().Get("name")); ok {
			n = v.(*atomic.Int64).Load()
		}
		fmt.Fprint(w, n)
	})
	mux.HandleFunc("POST /control/add", func(w http.ResponseWriter, r *http.Request) {
		name := r.URL.Query().Get("name")
		srv.AddTool(&mcp.Tool{Name: name, Description: "A tool added while running.", InputSchema: object},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) { return text("added"), nil })
		w.WriteHeader(http.StatusNoContent)
	})
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	logger.Info("listening", "addr", ln.Addr().String(), "hang", *hang)
	var h http.Handler = mux
	if *hang {
		h = http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

func ptr[T any](v T) *T { return &v }
