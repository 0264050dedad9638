// Command reliability measures how toolsearch, as an MCP gateway, lives
// through what real upstreams do: a process killed and restarted, an
// outage, answers too large, slow tools, oversized tool definitions, and
// clients that only listen. It starts the toolsearch and testupstream
// binaries it is given, drives toolsearch with the official go-sdk client,
// and prints one markdown row per measurement (RELIABILITY.md records
// them). Counts and sizes are the results; seconds are wall clock on
// whatever machine runs it.
//
//	go build -o bin/testupstream ./cmd/testupstream
//	go run ./cmd/reliability -bin bin/toolsearch -upstream bin/testupstream
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolsearch/toolsearch/cmd/internal/serveproc"
)

func main() {
	ctx, stop := serveproc.Interruptible()
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "reliability:", err)
		os.Exit(1)
	}
}

type rig struct {
	bin, upBin, dir string
	stderr          io.Writer
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("reliability", flag.ContinueOnError)
	fs.SetOutput(stderr)
	bin := fs.String("bin", "bin/toolsearch", "the toolsearch binary")
	upBin := fs.String("upstream", "bin/testupstream", "the testupstream binary")
	only := fs.String("run", "", "comma-separated scenarios to run (default: all)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "reliability")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	r := &rig{bin: *bin, upBin: *upBin, dir: dir, stderr: stderr}
	fmt.Fprintln(stdout, "| scenario | measured |")
	fmt.Fprintln(stdout, "|---|---|")
	for _, s := range r.scenarios() {
		if *only != "" && !slices.Contains(strings.Split(*only, ","), s.name) {
			continue
		}
		res, err := s.f(ctx)
		row := res.row
		if err != nil {
			row = "error: " + err.Error()
		}
		fmt.Fprintf(stdout, "| %s | %s |\n", s.name, row)
	}
	return nil
}

// result is a scenario's row and the values it measured.
type result struct {
	row    string
	values map[string]float64
}

func measured(values map[string]float64, format string, args ...any) (result, error) {
	return result{row: fmt.Sprintf(format, args...), values: values}, nil
}

type scenario struct {
	name string
	f    func(context.Context) (result, error)
}

func (r *rig) scenarios() []scenario {
	return []scenario{
		{"blip", r.blip},
		{"outage", r.outage},
		{"hang", r.hang},
		{"huge", r.huge},
		{"slow", r.slow},
		{"wide", r.wide},
		{"listen", r.listen},
		{"progress", r.progress},
		{"exact", r.exact},
		{"change", r.change},
		{"redeploy", r.redeploy},
		{"redeploy-stateless", r.redeployStateless},
		{"upgrade", r.upgrade},
		{"flood", r.flood},
		{"quiet", r.quiet},
		{"refused", r.refused},
		{"cut", r.cut},
		{"relaycut", r.relayCut},
		{"gateway", r.gateway},
	}
}

// proc is a started test upstream.
type proc struct{ cmd *exec.Cmd }

// kill stops the process; on nil (an upstream that failed to start) it
// does nothing.
func (p *proc) kill() {
	if p != nil && p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		_ = p.cmd.Wait()
	}
}

// peakMiB is the process's high-water resident set, in MiB (-1 when
// /proc cannot tell).
func peakMiB(s *serveproc.Server) float64 {
	b, err := s.Memory("VmHWM")
	if err != nil {
		return -1
	}
	return float64(b) / (1 << 20)
}

// upstream starts the test upstream at addr with args, its output
// appended to testupstream.log in the rig's directory, and waits until it
// listens. (toolsearch is started by serveproc, as every harness starts
// it.)
func (r *rig) upstream(addr string, args ...string) (*proc, error) {
	cmd := exec.Command(r.upBin, append([]string{"-addr", addr}, args...)...)
	log, err := os.OpenFile(filepath.Join(r.dir, filepath.Base(r.upBin)+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	defer log.Close() // the child has its own descriptor
	cmd.Stdout, cmd.Stderr = log, log
	serveproc.DieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{cmd: cmd}
	if err := waitTCP(addr); err != nil {
		p.kill()
		return nil, err
	}
	return p, nil
}

func waitTCP(addr string) error {
	for range 200 {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(25 * time.Millisecond)
	}
	return fmt.Errorf("nothing listens on %s", addr)
}

// toolsearch serves with config (YAML) and waits until it is ready.
func (r *rig) toolsearch(ctx context.Context, config string) (*serveproc.Server, error) {
	path := filepath.Join(r.dir, fmt.Sprintf("config-%d.yaml", time.Now().UnixNano()))
	if err := os.WriteFile(path, []byte(config), 0o644); err != nil {
		return nil, err
	}
	// Each process learns into its own file in the rig's directory, not
	// into toolsearch-learned.db wherever the rig was started.
	learned := "TOOLSEARCH_LEARNING_PATH=" + filepath.Join(r.dir, fmt.Sprintf("learned-%d.db", time.Now().UnixNano()))
	return serveproc.Start(ctx, r.bin, []string{learned}, 10*time.Second, "-metrics-addr", "off", "-config", path, "-drain-delay", "0s")
}

func upstreamConfig(addr, extra string) string {
	return fmt.Sprintf("limits:\n  search_rate: -1\nupstreams:\n  - name: up\n    url: http://%s/mcp\n    refresh: 1m\n%s", addr, extra)
}

func connect(ctx context.Context, base string, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "reliability", Version: "1"}, opts)
	return c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", MaxRetries: -1}, nil)
}

// callTool calls an upstream tool through call_tool; ok when it answered
// without isError.
func callTool(ctx context.Context, cs *mcp.ClientSession, name string) (*mcp.CallToolResult, bool) {
	res, err := call(ctx, cs, name)
	return res, err == nil && !res.IsError
}

// call calls an upstream tool through call_tool.
func call(ctx context.Context, cs *mcp.ClientSession, name string) (*mcp.CallToolResult, error) {
	return cs.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": name, "arguments": map[string]any{}}})
}

// otherwise is what calls that a scenario did not count got: none, or
// how many and the first.
func otherwise(other []string) string {
	if len(other) == 0 {
		return ""
	}
	return fmt.Sprintf("; %d neither, the first: %s", len(other), other[0])
}

func resultText(res *mcp.CallToolResult) string {
	if res == nil || len(res.Content) == 0 {
		return ""
	}
	if t, ok := res.Content[0].(*mcp.TextContent); ok {
		return t.Text
	}
	return ""
}

// world is one scenario's processes: a test upstream at addr, toolsearch
// in front of it at base, and a client session to toolsearch.
type world struct {
	addr string
	up   *proc // replaced when a scenario restarts the upstream
	ts   *serveproc.Server
	base string
	cs   *mcp.ClientSession
}

// world starts a scenario: the upstream with upArgs, toolsearch with the
// upstream's config plus extra (lines under the upstream, or whole
// sections after it), and a client with opts.
func (r *rig) world(ctx context.Context, upArgs []string, config func(addr string) string, opts *mcp.ClientOptions) (*world, error) {
	addr, err := serveproc.FreeAddr()
	if err != nil {
		return nil, err
	}
	w := &world{addr: addr}
	if w.up, err = r.upstream(w.addr, upArgs...); err != nil {
		return nil, err
	}
	if w.ts, err = r.toolsearch(ctx, config(w.addr)); err != nil {
		w.up.kill()
		return nil, err
	}
	w.base = w.ts.Base
	if w.cs, err = connect(ctx, w.base, opts); err != nil {
		w.stop()
		return nil, err
	}
	return w, nil
}

func (w *world) stop() {
	if w.cs != nil {
		w.cs.Close()
	}
	w.ts.Stop()
	w.up.kill()
}

// restart starts the upstream again at its address with args.
func (r *rig) restart(w *world, args ...string) error {
	w.up.kill()
	var err error
	w.up, err = r.upstream(w.addr, args...)
	return err
}

func plain(addr string) string { return upstreamConfig(addr, "") }

// callTimeout is plain with the upstream's call timeout set to d.
func callTimeout(d string) func(addr string) string {
	return func(addr string) string { return upstreamConfig(addr, "    timeout: "+d+"\n") }
}

// blip: the upstream is killed and restarted 1 s later (on its own
// clock, as a deploy's is) while a client calls through toolsearch once a
// second: the call made while it is down meets a refused connection.
func (r *rig) blip(ctx context.Context) (result, error) {
	w, err := r.world(ctx, nil, plain, nil)
	if err != nil {
		return result{}, err
	}
	defer w.stop()
	lost, firstOK := 0, time.Duration(-1)
	var back atomic.Int64 // unix nanoseconds the upstream listened again
	restarted := make(chan error, 1)
	for i := range 20 {
		if i == 3 {
			w.up.kill()
			time.AfterFunc(time.Second, func() {
				err := r.restart(w)
				back.Store(time.Now().UnixNano())
				restarted <- err
			})
		}
		_, ok := callTool(ctx, w.cs, "echo")
		switch at := back.Load(); {
		case !ok:
			lost++
		case at != 0 && firstOK < 0:
			firstOK = time.Since(time.Unix(0, at))
		}
		time.Sleep(time.Second)
	}
	if err := <-restarted; err != nil {
		return result{}, err
	}
	return measured(map[string]float64{"lost": float64(lost)},
		"killed and restarted 1 s later, a call a second for 20 s: %d calls lost; first success %.1f s after the upstream was back", lost, firstOK.Seconds())
}

// outage: the upstream is down for 20 s; once it is back, how long until
// a call goes through (calls every 200 ms).
func (r *rig) outage(ctx context.Context) (result, error) {
	w, err := r.world(ctx, nil, plain, nil)
	if err != nil {
		return result{}, err
	}
	defer w.stop()
	callTool(ctx, w.cs, "echo")
	w.up.kill()
	for down := time.Now(); time.Since(down) < 20*time.Second; time.Sleep(time.Second) {
		callTool(ctx, w.cs, "echo")
	}
	if err := r.restart(w); err != nil {
		return result{}, err
	}
	for back := time.Now(); time.Since(back) < 90*time.Second; time.Sleep(200 * time.Millisecond) {
		if _, ok := callTool(ctx, w.cs, "echo"); ok {
			took := time.Since(back).Seconds()
			return measured(map[string]float64{"recovery_s": took}, "down 20 s (a call a second meanwhile): first success %.1f s after the upstream was back", took)
		}
	}
	return measured(map[string]float64{"recovery_s": 90}, "no success within 90 s of the upstream being back")
}

// hang: the upstream accepts connections and never answers; three calls.
func (r *rig) hang(ctx context.Context) (result, error) {
	w, err := r.world(ctx, nil, callTimeout("2s"), nil)
	if err != nil {
		return result{}, err
	}
	defer w.stop()
	if err := r.restart(w, "-hang"); err != nil {
		return result{}, err
	}
	var took []float64
	var last *mcp.CallToolResult
	for range 3 {
		start := time.Now()
		last, _ = callTool(ctx, w.cs, "echo")
		took = append(took, time.Since(start).Seconds())
	}
	return measured(map[string]float64{"breaker_refused": boolf(strings.Contains(resultText(last), "breaker"))},
		"hung upstream, call timeout 2 s: three calls took %.1f, %.1f and %.1f s (the breaker answers the third)", took[0], took[1], took[2])
}

// huge: 16 concurrent calls, each on its own session, of a tool that
// answers 10 MB. The upstream encodes 160 MB between them; on a machine
// busy with other work (-race tests beside it) that outlasted the default
// call timeout once, and every call timed out before the size limit was
// reached. The call timeout is long, so that what is measured is the
// limit, whatever the machine's speed.
func (r *rig) huge(ctx context.Context) (result, error) {
	w, err := r.world(ctx, []string{"-huge", strconv.Itoa(10 << 20)}, callTimeout("2m"), nil)
	if err != nil {
		return result{}, err
	}
	defer w.stop()
	before := peakMiB(w.ts)
	var wg sync.WaitGroup
	var ok, refused atomic.Int32
	var mu sync.Mutex
	var other []string // what the calls neither answered nor refused got, to say why
	for range 16 {
		wg.Go(func() {
			cs, err := connect(ctx, w.base, nil)
			if err != nil {
				mu.Lock()
				other = append(other, fmt.Sprintf("connect: %.120v", err))
				mu.Unlock()
				return
			}
			defer cs.Close()
			res, err := call(ctx, cs, "huge")
			switch text := resultText(res); {
			case err == nil && !res.IsError:
				ok.Add(1)
			case strings.Contains(text, "limit") || strings.Contains(text, "budget"):
				refused.Add(1)
			default:
				mu.Lock()
				other = append(other, fmt.Sprintf("call: %.120v %.120s", err, text))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	peak := peakMiB(w.ts)
	return measured(map[string]float64{"peak_rss_mib": peak, "refused": float64(refused.Load())},
		"16 concurrent 10 MB results: peak RSS %.0f MiB (%.0f MiB before); %d answered, %d refused naming the limit%s", peak, before, ok.Load(), refused.Load(), otherwise(other))
}

// slow: two concurrent calls of a tool slower than the call timeout, then
// a fast call; and what status says.
func (r *rig) slow(ctx context.Context) (result, error) {
	w, err := r.world(ctx, []string{"-slow", "20s"}, callTimeout("2s"), nil)
	if err != nil {
		return result{}, err
	}
	defer w.stop()
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { callTool(ctx, w.cs, "slow") })
	}
	wg.Wait()
	res, ok := callTool(ctx, w.cs, "echo")
	var st struct {
		Upstreams []map[string]any `json:"upstreams"`
	}
	if resp, err := http.Get(w.base + "/mcp/tool-search/status"); err == nil {
		json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
	}
	var breaker, stale any
	if len(st.Upstreams) > 0 {
		breaker, stale = st.Upstreams[0]["breaker"], st.Upstreams[0]["stale"]
	}
	verdict := "answered"
	if !ok {
		verdict = fmt.Sprintf("refused (%.80s)", resultText(res))
	}
	return measured(map[string]float64{"fast_ok": boolf(ok), "breaker_closed": boolf(breaker == "closed"), "stale": boolf(stale == true)},
		"2 concurrent calls past the 2 s timeout, then a fast call: %s; breaker %v, stale %v", verdict, breaker, stale)
}

// wide: a tool with a 1 MB description and 2,000 parameters; the bytes of
// a search answer that returns it and of its get_tool_schema.
func (r *rig) wide(ctx context.Context) (result, error) {
	w, err := r.world(ctx, nil, plain, nil)
	if err != nil {
		return result{}, err
	}
	defer w.stop()
	size := func(res *mcp.CallToolResult, err error) int {
		if err != nil {
			return -1
		}
		b, _ := json.Marshal(res)
		return len(b)
	}
	search := size(w.cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "frobnicate quaternions", "limit": 3}}))
	schema := size(w.cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_tool_schema", Arguments: map[string]any{"name": "wide_tool"}}))
	return measured(map[string]float64{"search_bytes": float64(search), "schema_bytes": float64(schema)},
		"1 MB description, 2,000 parameters: search answer %d bytes, get_tool_schema %d bytes", search, schema)
}

// listen: a session that keeps its GET stream open and sends nothing past
// the idle limit, then calls; and whether list_changed still reaches it.
func (r *rig) listen(ctx context.Context) (result, error) {
	var changes atomic.Int32
	// The confirmation timeout must be shorter than the idle limit.
	config := func(addr string) string {
		return strings.Replace(upstreamConfig(addr, ""), "limits:\n", "limits:\n  mcp_session_idle: 2s\n", 1) + "mcp:\n  confirm_timeout: 1s\n"
	}
	w, err := r.world(ctx, nil, config, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changes.Add(1) }})
	if err != nil {
		return result{}, err
	}
	defer w.stop()
	time.Sleep(8 * time.Second) // four idle limits, with the GET stream open
	_, callErr := w.cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "echo"}})
	if err := w.add("added_later"); err != nil {
		return result{}, err
	}
	for deadline := time.Now().Add(5 * time.Second); changes.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	alive := "kept"
	if callErr != nil {
		alive = "closed (" + callErr.Error() + ")"
	}
	return measured(map[string]float64{"kept": boolf(callErr == nil), "list_changed": float64(changes.Load())},
		"listening session, idle limit 2 s, silent 8 s: %s; list_changed after it: %d", alive, changes.Load())
}

// found reports whether search_tools, asked to select name, answers
// with a tool of that name: its answer names a name it does not know as
// well, among the unknown, so the name in its text says nothing.
func (w *world) found(ctx context.Context, name string) bool {
	res, err := w.cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "select:" + name}})
	if err != nil || res.IsError {
		return false
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		return false
	}
	var out struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if json.Unmarshal(b, &out) != nil {
		return false
	}
	return slices.ContainsFunc(out.Tools, func(t struct {
		Name string `json:"name"`
	}) bool {
		return t.Name == name
	})
}

// add has the upstream add a tool named name.
func (w *world) add(name string) error {
	resp, err := http.Post(fmt.Sprintf("http://%s/control/add?name=%s", w.addr, name), "", nil)
	if err != nil {
		return err
	}
	return resp.Body.Close()
}

// progress: a call_tool with a progressToken to a tool that reports four
// times back to back and answers at once, so that the last notice (each,
// often) is sent in the same instant as the result.
func (r *rig) progress(ctx context.Context) (result, error) {
	var got atomic.Int32
	w, err := r.world(ctx, nil, plain, &mcp.ClientOptions{ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { got.Add(1) }})
	if err != nil {
		return result{}, err
	}
	defer w.stop()
	params := &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "progress", "arguments": map[string]any{}}}
	params.SetProgressToken("p-1")
	if _, err := w.cs.CallTool(ctx, params); err != nil {
		return result{}, err
	}
	time.Sleep(500 * time.Millisecond)
	return measured(map[string]float64{"progress": float64(got.Load())}, "%d of 4 upstream progress notifications reached the caller", got.Load())
}

// exact: call_tool of the upstream's echo, whose structuredContent (and
// its text block's _meta) is its arguments, with integers past 2^53, and get_tool_schema of echo, whose
// schema has one as a default. The answers are read as raw JSON: the
// go-sdk client would read their numbers through float64s too.
func (r *rig) exact(ctx context.Context) (result, error) {
	w, err := r.world(ctx, nil, plain, nil)
	if err != nil {
		return result{}, err
	}
	defer w.stop()
	const args = `{"id":1234567890123456789,"n":9007199254740993}`
	var session string
	post := func(body string) (string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.base+"/mcp", strings.NewReader(body))
		if err != nil {
			return "", err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		session = cmp.Or(resp.Header.Get("Mcp-Session-Id"), session)
		return string(b), err
	}
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"reliability","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	} {
		if _, err := post(body); err != nil {
			return result{}, err
		}
	}
	answer, err := post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"echo","arguments":` + args + `}}}`)
	if err != nil {
		return result{}, err
	}
	_, got, _ := strings.Cut(answer, `"structuredContent":`)
	got, _, _ = strings.Cut(got, "}")
	exact := got+"}" == args
	meta := strings.Contains(answer, `"_meta":{"arguments":`+args+`}`)
	// echo's listed schema has "default": 1234567890123456789.
	schema, err := post(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_tool_schema","arguments":{"name":"echo"}}}`)
	if err != nil {
		return result{}, err
	}
	def := "rounded"
	if strings.Contains(schema, "1234567890123456789") && !strings.Contains(schema, "1234567890123456800") {
		def = "as listed"
	}
	metaSaid := "rounded or lost"
	if meta {
		metaSaid = "as written"
	}
	return measured(map[string]float64{"exact": boolf(exact), "meta_exact": boolf(meta), "schema_exact": boolf(def == "as listed")},
		"structuredContent %s} for the upstream's %s; its text block's _meta %s; the schema's default of 1234567890123456789 %s", got, args, metaSaid, def)
}

// change: the upstream adds a tool; how long until a search finds it.
func (r *rig) change(ctx context.Context) (result, error) {
	w, err := r.world(ctx, nil, plain, nil)
	if err != nil {
		return result{}, err
	}
	defer w.stop()
	if err := w.add("added_later"); err != nil {
		return result{}, err
	}
	for start := time.Now(); time.Since(start) < 30*time.Second; time.Sleep(20 * time.Millisecond) {
		if w.found(ctx, "added_later") {
			took := time.Since(start).Seconds()
			return measured(map[string]float64{"found": 1}, "a tool added upstream is found by search %.2f s later", took)
		}
	}
	return measured(map[string]float64{"found": 0}, "a tool added upstream was not found within 30 s")
}

// redeploy: the upstream is killed and started again 1 s later with a
// new tool, as a deploy does; how long until a search finds the tool,
// and what status says of the upstream.
func (r *rig) redeploy(ctx context.Context) (result, error) {
	return r.redeployWith(ctx, nil, "2025-11-25")
}

// redeployStateless is redeploy with an upstream at protocol 2026-07-28,
// which has no sessions and tells of new tools only on its listening
// stream.
func (r *rig) redeployStateless(ctx context.Context) (result, error) {
	return r.redeployWith(ctx, []string{"-stateless"}, "2026-07-28")
}

func (r *rig) redeployWith(ctx context.Context, args []string, protocol string) (result, error) {
	w, err := r.world(ctx, args, plain, nil)
	if err != nil {
		return result{}, err
	}
	defer w.stop()
	if _, ok := callTool(ctx, w.cs, "echo"); !ok {
		return result{}, errors.New("echo failed before the deploy")
	}
	killed := time.Now()
	w.up.kill()
	time.Sleep(time.Second)
	if err := r.restart(w, append(args, "-tool", "deployed_tool")...); err != nil {
		return result{}, err
	}
	back := time.Now()
	gone := back.Sub(killed).Seconds()
	found := -1.0
	for time.Since(back) < 30*time.Second {
		if w.found(ctx, "deployed_tool") {
			found = time.Since(back).Seconds()
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	st, err := w.status()
	if err != nil {
		return result{}, err
	}
	if len(st.Upstreams) == 0 {
		return result{}, errors.New("status lists no upstream")
	}
	up := st.Upstreams[0]
	said := "no error"
	if up.LastError != "" {
		said = fmt.Sprintf("last error %.60q", up.LastError)
	}
	if found < 0 {
		return measured(map[string]float64{"found": 0}, "restarted with a new tool (protocol %s): not found within 30 s; the upstream %s in status, %s", protocol, up.State, said)
	}
	return measured(map[string]float64{"found": 1, "connected": boolf(up.State == "connected"), "clean": boolf(up.LastError == ""), "gone_s": gone},
		"restarted with a new tool (protocol %s), back %.1f s after the kill: found by search %.1f s after the upstream was back; the upstream %s in status, %s", protocol, gone, found, up.State, said)
}

// upgrade: an upstream served with sessions (protocol 2025-11-25) is
// replaced by a version that serves without them (and at 2026-07-28
// too), which then adds a tool while running; whether a search finds it
// before the refresh (a minute away).
func (r *rig) upgrade(ctx context.Context) (result, error) {
	w, err := r.world(ctx, nil, plain, nil)
	if err != nil {
		return result{}, err
	}
	defer w.stop()
	if _, ok := callTool(ctx, w.cs, "echo"); !ok {
		return result{}, errors.New("echo failed before the upgrade")
	}
	if err := r.restart(w, "-stateless"); err != nil {
		return result{}, err
	}
	// The first call after the restart finds the old session gone and
	// connects to the new version.
	if _, ok := callTool(ctx, w.cs, "echo"); !ok {
		return result{}, errors.New("echo failed after the upgrade")
	}
	if err := w.add("added_after_upgrade"); err != nil {
		return result{}, err
	}
	start := time.Now()
	for time.Since(start) < 20*time.Second {
		if w.found(ctx, "added_after_upgrade") {
			return measured(map[string]float64{"found": 1},
				"replaced by a version without sessions (and 2026-07-28), which adds a tool: found by search %.1f s later", time.Since(start).Seconds())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return measured(map[string]float64{"found": 0},
		"replaced by a version without sessions (and 2026-07-28), which adds a tool: not found within 20 s (the refresh is a minute away)")
}

// flood: the upstream adds 300 tools, 20 ms apart, each announced with
// list_changed; how many rebuilds toolsearch makes of them (the index
// version counts builds), and whether the last one is found.
func (r *rig) flood(ctx context.Context) (result, error) {
	w, err := r.world(ctx, nil, plain, nil)
	if err != nil {
		return result{}, err
	}
	defer w.stop()
	before, err := w.builds()
	if err != nil {
		return result{}, err
	}
	const adds = 300
	start := time.Now()
	for i := range adds {
		if err := w.add(fmt.Sprintf("flood_%d", i)); err != nil {
			return result{}, err
		}
		time.Sleep(20 * time.Millisecond)
	}
	took := time.Since(start).Seconds()
	last := fmt.Sprintf("flood_%d", adds-1)
	found := false
	for start := time.Now(); !found && time.Since(start) < 30*time.Second; time.Sleep(50 * time.Millisecond) {
		found = w.found(ctx, last)
	}
	after, err := w.builds()
	if err != nil {
		return result{}, err
	}
	return measured(map[string]float64{"rebuilds": float64(after - before), "found": boolf(found)},
		"%d tools added upstream over %.1f s, each announced: %d rebuilds; the last found: %v", adds, took, after-before, found)
}

// quiet: the upstream is killed, then stopped (SIGSTOP) after a restart,
// while nobody calls it; how long until status says it is failing (the
// refresh is a minute away), and whether it is connected again once back.
func (r *rig) quiet(ctx context.Context) (result, error) {
	w, err := r.world(ctx, nil, plain, nil)
	if err != nil {
		return result{}, err
	}
	defer w.stop()
	// Until the state is want, at most limit: the seconds it took, or -1.
	until := func(want string, limit time.Duration) float64 {
		for start := time.Now(); time.Since(start) < limit; time.Sleep(100 * time.Millisecond) {
			if st, err := w.upstreamState(); err == nil && st == want {
				return time.Since(start).Seconds()
			}
		}
		return -1
	}
	if until("connected", 10*time.Second) < 0 {
		return result{}, errors.New("the upstream never connected")
	}
	w.up.kill()
	killed := until("failing", 40*time.Second)
	if err := r.restart(w); err != nil {
		return result{}, err
	}
	back := until("connected", 10*time.Second)
	if err := w.up.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return result{}, err
	}
	stopped := until("failing", 40*time.Second)
	_ = w.up.cmd.Process.Signal(syscall.SIGCONT)
	again := until("connected", 10*time.Second)
	return measured(map[string]float64{"killed_s": killed, "stopped_s": stopped, "back": boolf(back >= 0 && again >= 0)},
		"no calls, refresh 1m: failing in status %.1f s after the kill, connected %.1f s after the restart; failing %.1f s after SIGSTOP, connected %.1f s after SIGCONT",
		killed, back, stopped, again)
}

// refused: a second upstream refuses toolsearch's token (401) for 15 s;
// how many requests it refused, which it counts. (The first upstream
// accepts, so toolsearch has tools and is ready.)
func (r *rig) refused(ctx context.Context) (result, error) {
	locked, err := serveproc.FreeAddr()
	if err != nil {
		return result{}, err
	}
	up, err := r.upstream(locked, "-token", "right")
	if err != nil {
		return result{}, err
	}
	defer up.kill()
	config := func(addr string) string {
		return upstreamConfig(addr, fmt.Sprintf("  - name: locked\n    url: http://%s/mcp\n    headers: {Authorization: \"Bearer wrong\"}\n", locked))
	}
	w, err := r.world(ctx, nil, config, nil)
	if err != nil {
		return result{}, err
	}
	defer w.stop()
	const window = 15 * time.Second
	time.Sleep(window)
	resp, err := http.Get("http://" + locked + "/control/refused")
	if err != nil {
		return result{}, err
	}
	defer resp.Body.Close()
	var n int
	if _, err := fmt.Fscan(resp.Body, &n); err != nil {
		return result{}, fmt.Errorf("the upstream's count of refused requests: %w", err)
	}
	st, err := w.status()
	if err != nil {
		return result{}, err
	}
	state := "missing"
	for _, u := range st.Upstreams {
		if u.Name == "locked" {
			state = u.State
		}
	}
	return measured(map[string]float64{"refused": float64(n), "failing": boolf(state == "failing")},
		"an upstream refuses toolsearch's token: %d requests refused in %s, the upstream %s in status", n, window, state)
}

// status is what the reliability scenarios read of toolsearch's status page.
type status struct {
	IndexVersion string `json:"index_version"`
	Upstreams    []struct {
		Name      string `json:"name"`
		State     string `json:"state"`
		LastError string `json:"last_error"`
	} `json:"upstreams"`
}

func (w *world) status() (status, error) {
	var st status
	resp, err := http.Get(w.base + "/mcp/tool-search/status")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// upstreamState is the state status reports for the world's upstream.
func (w *world) upstreamState() (string, error) {
	st, err := w.status()
	switch {
	case err != nil:
		return "", err
	case len(st.Upstreams) == 0:
		return "", errors.New("status lists no upstream")
	}
	return st.Upstreams[0].State, nil
}

// builds is how many indexes toolsearch has built: the counter its index
// version starts with.
func (w *world) builds() (int, error) {
	st, err := w.status()
	if err != nil {
		return 0, err
	}
	n, _, _ := strings.Cut(st.IndexVersion, "-")
	return strconv.Atoi(n)
}

func boolf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
