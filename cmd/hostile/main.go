// Command hostile runs a bounded load of hostile requests against a
// toolsearch binary it starts on 127.0.0.1, and reports the server's
// memory (RSS from /proc) before, during and after, with the size of
// /metrics and of the answers: RELIABILITY.md's attack table comes from it.
//
// The mix: made-up and oversized HTTP methods, long paths and request ids,
// a recursive-schema tool rendered for gemini, MCP initialize floods,
// bodies held back by slow clients, and anonymous status polling. Every loop is bounded by -d; nothing is sent
// anywhere but the server it started. -tls serves the API over HTTPS and
// sends the mix so. -flood measures a flood of TLS handshakes instead
// (flood.go), -hog one address holding every connection it can (hog.go),
// -open one address asking what no key pays for as fast as it can (open.go).
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolsearch/toolsearch/cmd/internal/serveproc"
	"github.com/toolsearch/toolsearch/pkg/testpki"
)

func main() {
	ctx, stop := serveproc.Interruptible()
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "hostile:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("hostile", flag.ContinueOnError)
	fs.SetOutput(stderr)
	bin := fs.String("bin", "bin/toolsearch", "the toolsearch binary to attack")
	dur := fs.Duration("d", 60*time.Second, "how long the attack runs")
	workers := fs.Int("c", 8, "concurrent attackers")
	throttled := fs.Bool("throttle", true, "keep the server's search throttle on (off: every request reaches the handlers)")
	useTLS := fs.Bool("tls", false, "serve the API over HTTPS (-tls-cert-file, a certificate of a CA made for the run), and attack it so")
	flood := fs.Bool("flood", false, "instead of the mix: -c flooders replay one recorded ClientHello on new connections for -d, while one client searches on a connection it keeps (implies -tls)")
	handshakeRate := fs.Float64("handshake-rate", 0, "the server's limits.tls_handshake_rate: 0 its default, -1 none")
	openOnes := fs.Bool("open", false, "instead of the mix: -c flooders at 127.0.0.1 ask what no key pays for (status, /healthz, an unknown path, a search without a key) as fast as they are answered, for -d, while a client at 127.0.0.2 searches with its key")
	hog := fs.Int("hog", 0, "instead of the mix: hold this many connections from 127.0.0.1, their headers unfinished, for -d, while a client at 127.0.0.2 searches")
	perAddress := fs.Int("per-address", 0, "the server's limits.max_connections_per_address: 0 its default, -1 none")
	rsaBits := fs.Int("rsa", 0, "with -tls, serve a certificate with an RSA key of this many bits (cert-manager's default kind, 2048) instead of ECDSA P-256")
	if err := fs.Parse(args); err != nil {
		return err
	}
	*useTLS = *useTLS || *flood
	dir, err := os.MkdirTemp("", "hostile")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cat, cfg := filepath.Join(dir, "catalog.json"), filepath.Join(dir, "config.yaml")
	if err := writeFixtures(cat, cfg, *throttled, *handshakeRate, *perAddress); err != nil {
		return err
	}
	metricsAddr, err := serveproc.FreeAddr()
	if err != nil {
		return err
	}
	serveArgs := []string{"-metrics-addr", metricsAddr, "-catalog", cat, "-config", cfg, "-log-level", "error"}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	if *useTLS {
		ca, err := testpki.NewCA("hostile CA")
		if err != nil {
			return err
		}
		ca.RSABits = *rsaBits
		certFile, keyFile, err := ca.ServerFiles(dir, "127.0.0.1")
		if err != nil {
			return err
		}
		serveArgs = append(serveArgs, "-tls-cert-file", certFile, "-tls-key-file", keyFile)
		transport.TLSClientConfig = &tls.Config{RootCAs: ca.Pool()}
	}
	// Its learning file is the run's own, not the working directory's
	// (make run's, or a test's package directory).
	env := []string{"HOSTILE_KEY=key-hostile", "TOOLSEARCH_ADMIN_TOKEN=admin-hostile", "TOOLSEARCH_LEARNING_PATH=" + filepath.Join(dir, "learned.db")}
	srv, err := serveproc.Start(ctx, *bin, env, 30*time.Second, serveArgs...)
	if err != nil {
		return err
	}
	defer srv.Stop()
	base := srv.Base
	switch {
	case *flood:
		return handshakeFlood(ctx, srv, &http.Client{Transport: transport}, *workers, *dur, stdout)
	case *hog > 0:
		return connectionHog(ctx, srv, *hog, *dur, stdout)
	case *openOnes:
		return openFlood(ctx, srv, *workers, *dur, stdout)
	}
	rss := func() int64 { n, _ := srv.Memory("VmRSS"); return n }
	time.Sleep(2 * time.Second)
	idle := rss()
	var peak atomic.Int64
	peak.Store(idle)
	st := &stats{}
	actx, cancel := context.WithTimeout(ctx, *dur)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // sample memory
		defer wg.Done()
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-actx.Done():
				return
			case <-t.C:
				if r := rss(); r > peak.Load() {
					peak.Store(r)
				}
			}
		}
	}()
	for w := range *workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 99))
			client := &http.Client{Timeout: 30 * time.Second, Transport: transport.Clone()}
			for actx.Err() == nil {
				kind := attacks[r.IntN(len(attacks))]
				code, n := kind.send(actx, client, base, r)
				st.add(kind.name, code, n)
			}
		}()
	}
	wg.Wait()
	time.Sleep(time.Second)
	end := rss()
	metrics := size("http://"+metricsAddr+"/metrics", http.DefaultClient)
	status := size(base+"/mcp/tool-search/status", &http.Client{Transport: transport})
	fmt.Fprintf(stdout, "duration %s, %d attackers, %d requests\n", *dur, *workers, st.total)
	fmt.Fprintf(stdout, "RSS idle %.1f MB, peak %.1f MB (%.2fx), after %.1f MB (%.2fx)\n",
		mb(idle), mb(peak.Load()), float64(peak.Load())/float64(idle), mb(end), float64(end)/float64(idle))
	fmt.Fprintf(stdout, "/metrics %d bytes, anonymous status %d bytes\n", metrics, status)
	fmt.Fprintln(stdout, "attack                         requests  largest answer  status codes")
	for _, a := range attacks {
		fmt.Fprintf(stdout, "%-30s %8d  %14d  %s\n", a.name, st.count[a.name], st.largest[a.name], st.codesOf(a.name))
	}
	return nil
}

type attack struct {
	name string
	send func(ctx context.Context, c *http.Client, base string, r *rand.Rand) (int, int)
}

var attacks = []attack{
	{"made-up method", func(ctx context.Context, c *http.Client, base string, r *rand.Rand) (int, int) {
		m := fmt.Sprintf("M%08X", r.Uint32())
		return do(ctx, c, m, base+"/mcp/tool-search", "", "", nil)
	}},
	{"30 KB method", func(ctx context.Context, c *http.Client, base string, r *rand.Rand) (int, int) {
		return do(ctx, c, strings.Repeat("X", 30<<10), base+"/mcp/tool-search", "", "", nil)
	}},
	{"30 KB path and request id", func(ctx context.Context, c *http.Client, base string, r *rand.Rand) (int, int) {
		return do(ctx, c, http.MethodGet, base+"/"+strings.Repeat("p", 30<<10), "", "", map[string]string{"X-Request-Id": strings.Repeat("i", 20<<10)})
	}},
	{"recursive schema, gemini", func(ctx context.Context, c *http.Client, base string, r *rand.Rand) (int, int) {
		return do(ctx, c, http.MethodPost, base+"/mcp/tool-search", "key-hostile",
			`{"query":"select:evil/recurse","format":"gemini","include_schema":true}`, nil)
	}},
	{"MCP initialize flood", func(ctx context.Context, c *http.Client, base string, r *rand.Rand) (int, int) {
		return do(ctx, c, http.MethodPost, base+"/mcp", "key-hostile",
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"h","version":"1"}}}`,
			map[string]string{"Accept": "application/json, text/event-stream"})
	}},
	{"MCP 500 KB method", func(ctx context.Context, c *http.Client, base string, r *rand.Rand) (int, int) {
		return do(ctx, c, http.MethodPost, base+"/mcp", "key-hostile",
			`{"jsonrpc":"2.0","id":1,"method":"`+strings.Repeat("m", 500<<10)+`"}`, map[string]string{"Accept": "application/json, text/event-stream"})
	}},
	{"anonymous status", func(ctx context.Context, c *http.Client, base string, r *rand.Rand) (int, int) {
		return do(ctx, c, http.MethodGet, base+"/mcp/tool-search/status", "", "", nil)
	}},
	{"search, keyed", func(ctx context.Context, c *http.Client, base string, r *rand.Rand) (int, int) {
		return do(ctx, c, http.MethodPost, base+"/mcp/tool-search", "key-hostile", fmt.Sprintf(`{"query":"open issue %d"}`, r.IntN(1e6)), nil)
	}},
	{"MCP batch of 400 calls", func(ctx context.Context, c *http.Client, base string, r *rand.Rand) (int, int) {
		call := `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"search_tools","arguments":{"query":"issue %d"}}}`
		var calls []string
		for i := range 400 {
			calls = append(calls, fmt.Sprintf(call, i, r.IntN(1e6)))
		}
		return do(ctx, c, http.MethodPost, base+"/mcp", "key-hostile", "["+strings.Join(calls, ",")+"]",
			map[string]string{"Accept": "application/json, text/event-stream", "Mcp-Protocol-Version": "2025-03-26"})
	}},
	{"MCP initialize, 500 KB clientInfo", func(ctx context.Context, c *http.Client, base string, r *rand.Rand) (int, int) {
		return do(ctx, c, http.MethodPost, base+"/mcp", "key-hostile",
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"bogus","capabilities":{},"clientInfo":{"name":"`+strings.Repeat("c", 500<<10)+`","version":"1"}}}`,
			map[string]string{"Accept": "application/json, text/event-stream"})
	}},
	{"30 KB template name", func(ctx context.Context, c *http.Client, base string, r *rand.Rand) (int, int) {
		return do(ctx, c, http.MethodPost, base+"/mcp/tool-search", "key-hostile", `{"template":"`+strings.Repeat("t", 30<<10)+`"}`, nil)
	}},
	{"malformed query string", func(ctx context.Context, c *http.Client, base string, r *rand.Rand) (int, int) {
		return do(ctx, c, http.MethodGet, base+"/mcp/tool-search/catalog?server=%zz", "key-hostile", "", nil)
	}},
	{"10 MB body", func(ctx context.Context, c *http.Client, base string, r *rand.Rand) (int, int) {
		return do(ctx, c, http.MethodPost, base+"/mcp/tool-search", "key-hostile", `{"query":"`+strings.Repeat("q", 10<<20)+`"}`, nil)
	}},
	{"console path to nothing", func(ctx context.Context, c *http.Client, base string, r *rand.Rand) (int, int) {
		return do(ctx, c, http.MethodGet, base+"/console/"+strings.Repeat("n", 100), "", "", nil)
	}},
	{"HEAD readyz", func(ctx context.Context, c *http.Client, base string, r *rand.Rand) (int, int) {
		return do(ctx, c, http.MethodHead, base+"/readyz", "", "", nil)
	}},
	{"50 MCP bodies of 1 MB, held back", func(ctx context.Context, c *http.Client, base string, r *rand.Rand) (int, int) {
		return heldBodies(ctx, c, base, 50, 1<<20)
	}},
	{"1 MB conversation, keyed", func(ctx context.Context, c *http.Client, base string, r *rand.Rand) (int, int) {
		// A search's largest body, its dearest to decode: a tool's
		// output of 37,000 parts, then the ask.
		parts := strings.Repeat(`{"type":"text","text":"a"},`, 37_000)
		return do(ctx, c, http.MethodPost, base+"/mcp/tool-search", "key-hostile",
			`{"messages":[{"role":"tool","content":[`+parts+`{"type":"text","text":"b"}]},`+fmt.Sprintf(`{"role":"user","content":"open issue %d"}]}`, r.IntN(1e6)), nil)
	}},
}

// heldBodies opens n connections to /mcp, each sending all of a body of
// size bytes but its last byte, as a slow client does, and holds them for
// two seconds; then each sends its last byte and reads its answer. It
// returns 503 if the server refused any of them (it holds a budget of
// bodies: limits.request_body_budget_bytes), else the first's status.
func heldBodies(ctx context.Context, client *http.Client, base string, n, size int) (int, int) {
	addr := base[strings.Index(base, "://")+3:]
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_tools","arguments":{"query":"` +
		strings.Repeat("a", size-200) + `"}}}`
	body += strings.Repeat(" ", size-len(body))
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range n {
		c, err := dial(ctx, client, addr)
		if err != nil {
			break
		}
		conns = append(conns, c)
		fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer key-hostile\r\nContent-Type: application/json\r\n"+
			"Accept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s", addr, len(body), body[:len(body)-1])
	}
	select {
	case <-ctx.Done():
	case <-time.After(2 * time.Second):
	}
	code, largest := 0, 0
	for _, c := range conns {
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write([]byte(body[len(body)-1:])); err != nil {
			continue
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			continue
		}
		m, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		largest = max(largest, int(m))
		if code == 0 || resp.StatusCode == http.StatusServiceUnavailable {
			code = resp.StatusCode
		}
	}
	return code, largest
}

func do(ctx context.Context, c *http.Client, method, url, key, body string, headers map[string]string) (int, int) {
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return -1, 0
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, 0 // refused or cut: counted as status 0
	}
	defer resp.Body.Close()
	n, _ := io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, int(n)
}

type stats struct {
	mu      sync.Mutex
	total   int
	count   map[string]int
	largest map[string]int
	byKind  map[string]map[int]int
}

func (s *stats) add(kind string, code, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.count == nil {
		s.count, s.largest, s.byKind = map[string]int{}, map[string]int{}, map[string]map[int]int{}
	}
	s.total++
	s.count[kind]++
	s.largest[kind] = max(s.largest[kind], n)
	if s.byKind[kind] == nil {
		s.byKind[kind] = map[int]int{}
	}
	s.byKind[kind][code]++
}

func (s *stats) codesOf(kind string) string {
	var codes []int
	for c := range s.byKind[kind] {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	var parts []string
	for _, c := range codes {
		parts = append(parts, fmt.Sprintf("%d×%d", c, s.byKind[kind][c]))
	}
	return strings.Join(parts, " ")
}

func size(url string, c *http.Client) int {
	_, n := do(context.Background(), c, http.MethodGet, url, "", "", nil)
	return n
}

// dial connects to addr as c would: over TLS when c's transport has a
// TLS config.
func dial(ctx context.Context, c *http.Client, addr string) (net.Conn, error) {
	var d net.Dialer
	if t, ok := c.Transport.(*http.Transport); ok && t.TLSClientConfig != nil {
		return (&tls.Dialer{NetDialer: &d, Config: t.TLSClientConfig}).DialContext(ctx, "tcp", addr)
	}
	return d.DialContext(ctx, "tcp", addr)
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }

// writeFixtures writes a catalog with a recursive-schema tool and 5,000
// undescribed tools (a warning each), and a config with one API key (and
// the search throttle off, when not throttled).
func writeFixtures(catPath, cfgPath string, throttled bool, handshakeRate float64, perAddress int) error {
	type tool struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	}
	// 1.5 KB whose inlining never ends: 30 properties that each refer
	// back to the definition that holds them.
	var props []string
	for i := range 30 {
		props = append(props, fmt.Sprintf(`"p%d":{"$ref":"#/$defs/n"}`, i))
	}
	recursive := fmt.Sprintf(`{"type":"object","properties":{"root":{"$ref":"#/$defs/n"}},"$defs":{"n":{"type":"object","properties":{%s}}}}`, strings.Join(props, ","))
	bulk := make([]tool, 5000)
	for i := range bulk {
		bulk[i] = tool{Name: fmt.Sprintf("bulk_%d", i)}
	}
	cat := map[string]any{"servers": []any{
		map[string]any{"name": "evil", "tools": []tool{{Name: "recurse", Description: "A tool whose schema refers to itself.", InputSchema: json.RawMessage(recursive)}}},
		map[string]any{"name": "github", "tools": []tool{{Name: "create_issue", Description: "Open an issue in a repository."}}},
		map[string]any{"name": "bulk", "tools": bulk},
	}}
	b, err := json.Marshal(cat)
	if err != nil {
		return err
	}
	if err := os.WriteFile(catPath, b, 0o600); err != nil {
		return err
	}
	cfg := "auth:\n  keys:\n    - name: hostile\n      key_env: HOSTILE_KEY\n"
	cfg += "limits:\n"
	if !throttled {
		cfg += "  search_rate: -1\n"
	}
	cfg += fmt.Sprintf("  tls_handshake_rate: %g\n  max_connections_per_address: %d\n", handshakeRate, perAddress)
	return os.WriteFile(cfgPath, []byte(cfg), 0o600)
}
