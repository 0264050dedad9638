package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/pkg/config"
	"github.com/toolsearch/toolsearch/pkg/logbuf"
	"github.com/toolsearch/toolsearch/pkg/snapshot"
)

// fakeOpenAI serves /v1/embeddings with deterministic vectors derived from
// the local embedder's idea of each text's words, so ranking is meaningful.
func fakeOpenAI(tb testing.TB, calls *atomic.Int32, failing *atomic.Bool) *httptest.Server {
	tb.Helper()
	srv := httptest.NewServer(fakeOpenAIHandler(calls, failing))
	tb.Cleanup(srv.Close)
	return srv
}

// fakeOpenAIHandler is fakeOpenAI's handler, for a server of the test's
// own making.
func fakeOpenAIHandler(calls *atomic.Int32, failing *atomic.Bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.Header.Get("Authorization") != "Bearer sk-e2e-secret-key" {
			http.Error(w, `{"error":{"message":"bad key"}}`, http.StatusUnauthorized)
			return
		}
		if failing != nil && failing.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`{"error":{"message":"overloaded"}}`))
			return
		}
		var req struct {
			Input []string `json:"input"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		type item struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		data := make([]item, len(req.Input))
		for i, text := range req.Input {
			v := make([]float32, 32)
			for _, w := range strings.Fields(strings.ToLower(text)) {
				h := 0
				for _, c := range strings.Trim(w, ".,:;()") {
					h = h*31 + int(c)
				}
				v[(h%32+32)%32]++
			}
			data[i] = item{i, v}
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": "fake"})
	})
}

var (
	listenRE  = regexp.MustCompile(`"msg":"listening","addr":"([^"]+)"`)
	metricsRE = regexp.MustCompile(`"msg":"metrics listening","addr":"([^"]+)"`)
)

// metricsBase is the metrics listener's base URL of a server startServe
// or startListening started, read from its log once it is there.
func metricsBase(t *testing.T, stderr *logbuf.Buffer) string {
	t.Helper()
	// The line comes after the API's "listening", which startListening
	// waits for: a server not ready yet may not have written it.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if m := metricsRE.FindStringSubmatch(stderr.String()); m != nil {
			return "http://" + m[1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve never logged its metrics address:\n%s", stderr)
		}
	}
}

// startServe runs `toolsearch serve` in-process and returns its base URL
// once /readyz answers 200.
func startServe(t *testing.T, env map[string]string, args ...string) (base string, stderr *logbuf.Buffer, stop func() error) {
	t.Helper()
	base, stderr, stop = startListening(t, env, args...)
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve never became ready:\n%s", stderr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return base, stderr, stop
}

// startListening runs `toolsearch serve` in-process and returns its base
// URL once it listens, ready or not.
func startListening(t *testing.T, env map[string]string, args ...string) (base string, stderr *logbuf.Buffer, stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	learningPath := filepath.Join(t.TempDir(), "learned.db")
	stderr = &logbuf.Buffer{}
	errc := make(chan error, 1)
	getenv := func(k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		switch k {
		case "TOOLSEARCH_DRAIN_DELAY":
			return "0s" // tests that do not test draining need not wait for it
		case "TOOLSEARCH_LEARNING_PATH":
			return learningPath // each server learns into its own file
		}
		return ""
	}
	go func() {
		errc <- run(ctx, append([]string{"serve", "-addr", "127.0.0.1:0", "-metrics-addr", "127.0.0.1:0"}, args...), getenv, nil, io.Discard, stderr)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for base == "" {
		if m := listenRE.FindStringSubmatch(stderr.String()); m != nil {
			base = "http://" + m[1]
			break
		}
		select {
		case err := <-errc:
			t.Fatalf("serve exited early: %v\n%s", err, stderr)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve never logged its address:\n%s", stderr)
		}
	}
	return base, stderr, func() error {
		cancel()
		return <-errc
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

func postSearch(t *testing.T, base, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(base+"/mcp/tool-search", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func TestServeOpenAI(t *testing.T) {
	var calls atomic.Int32
	fake := fakeOpenAI(t, &calls, nil)
	env := map[string]string{
		"TOOLSEARCH_EMBEDDER":           "openai",
		"TOOLSEARCH_EMBEDDING_BASE_URL": fake.URL + "/v1",
		"OPENAI_API_KEY":                "sk-e2e-secret-key",
		"TOOLSEARCH_LOG_LEVEL":          "debug",
	}
	base, logs, stop := startServe(t, env)
	if got := calls.Load(); got != 1 {
		t.Errorf("catalog build made %d embeddings requests, want 1 batch", got)
	}
	var st struct {
		Ready    bool `json:"ready"`
		Size     int  `json:"size"`
		Embedder struct {
			Provider, Model, BaseURL string
			Dimensions               int
		} `json:"embedder"`
	}
	getJSON(t, base+"/mcp/tool-search/status", &st)
	if !st.Ready || st.Size < 60 || st.Embedder.Provider != "openai" || st.Embedder.Dimensions != 32 {
		t.Errorf("status = %+v", st)
	}
	code, res := postSearch(t, base, `{"query":"merge pull request","top_k":5,"include_core":false}`)
	tools, _ := res["tools"].([]any)
	if code != 200 || len(tools) != 5 {
		t.Fatalf("search = %d %v", code, res)
	}
	if got := calls.Load(); got != 2 {
		t.Errorf("after one search: %d embeddings requests, want 2", got)
	}
	if err := stop(); err != nil {
		t.Errorf("serve returned %v after cancel, want nil (graceful)", err)
	}
	if strings.Contains(logs.String(), "sk-e2e-secret-key") || strings.Contains(logs.String(), "e2e-secret") {
		t.Error("logs contain the API key")
	}
	var access map[string]any
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, `"msg":"request"`) && strings.Contains(line, `"route":"/mcp/tool-search"`) {
			json.Unmarshal([]byte(line), &access)
		}
	}
	if access["status"] != float64(200) || access["mode"] != "hybrid" || access["request_id"] == "" || access["duration_ms"] == nil || access["method"] != "POST" {
		t.Errorf("access log line = %v", access)
	}
}

func TestServeProviderDownAtStart(t *testing.T) {
	var calls atomic.Int32
	var failing atomic.Bool
	failing.Store(true)
	fake := fakeOpenAI(t, &calls, &failing)
	env := map[string]string{
		"TOOLSEARCH_EMBEDDER":           "openai",
		"TOOLSEARCH_EMBEDDING_BASE_URL": fake.URL + "/v1",
		"OPENAI_API_KEY":                "sk-e2e-secret-key",
	}
	base, logs, stop := startServe(t, env)
	defer stop()
	// Ready at once, in keyword mode, saying why.
	var st struct {
		Ready       bool    `json:"ready"`
		Mode        string  `json:"mode"`
		Degraded    bool    `json:"degraded"`
		LastError   string  `json:"last_error"`
		NextRetryAt *string `json:"next_retry_at"`
	}
	getJSON(t, base+"/mcp/tool-search/status", &st)
	if !st.Ready || st.Mode != "keyword" || !st.Degraded || !strings.Contains(st.LastError, "503") {
		t.Errorf("status while the provider is down = %+v", st)
	}
	code, res := postSearch(t, base, `{"query":"merge pull request","top_k":3}`)
	if code != 200 || res["mode"] != "keyword" || res["degraded"] != true {
		t.Errorf("search while down = %d %v", code, res)
	}
	if !strings.Contains(logs.String(), `"msg":"index build failed"`) {
		t.Errorf("the failed build was not logged:\n%s", logs)
	}
	// The provider recovers: the background retry restores semantic mode.
	failing.Store(false)
	deadline := time.Now().Add(15 * time.Second)
	for st.Mode != "semantic" && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		getJSON(t, base+"/mcp/tool-search/status", &st)
	}
	if st.Mode != "semantic" || st.Degraded || st.NextRetryAt != nil {
		t.Errorf("status after recovery = %+v", st)
	}
	if code, res := postSearch(t, base, `{"query":"merge pull request"}`); code != 200 || res["mode"] != "hybrid" {
		t.Errorf("search after recovery = %d %v", code, res)
	}
}

func TestServeLocalCatalogFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "demo.json")
	os.WriteFile(path, []byte(`{"tools":[{"name":"echo","description":"Echo the input back"},{"name":"add","description":"Add two numbers"}]}`), 0o644)
	base, _, stop := startServe(t, map[string]string{"TOOLSEARCH_CATALOG": path})
	defer stop()
	var st struct {
		Size    int `json:"size"`
		Catalog struct {
			Sources []string `json:"sources"`
		} `json:"catalog"`
	}
	getJSON(t, base+"/mcp/tool-search/status", &st)
	if st.Size != 2 || len(st.Catalog.Sources) != 1 || st.Catalog.Sources[0] != path {
		t.Errorf("status = %+v", st)
	}
	_, res := postSearch(t, base, `{"query":"sum of two numbers","top_k":1,"include_core":false}`)
	if tools, _ := res["tools"].([]any); len(tools) != 1 || tools[0].(map[string]any)["name"] != "add" {
		t.Errorf("search = %v", res)
	}
}

// TestSIGHUPRereads: SIGHUP reads the catalog again, as a change does;
// it ended the process, undrained, before.
func TestSIGHUPRereads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "demo.json")
	write := func(tools string) {
		if err := os.WriteFile(path, []byte(`{"tools":[`+tools+`]}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"name":"echo","description":"Echo the input back"},{"name":"add","description":"Add two numbers"}`)
	base, logs, stop := startServe(t, map[string]string{"TOOLSEARCH_CATALOG": path})
	defer stop()
	write(`{"name":"echo","description":"Echo the input back"},{"name":"add","description":"Add two numbers"},{"name":"mul","description":"Multiply two numbers"}`)
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the catalog read again", func() bool {
		var st struct{ Size int }
		getJSON(t, base+"/mcp/tool-search/status", &st)
		return st.Size == 3
	})
	if !strings.Contains(logs.String(), "SIGHUP: reading catalog and config again") {
		t.Errorf("no log line for the SIGHUP:\n%s", logs)
	}
}

// The API holds at most limits.max_connections connections: past it a
// new one waits to be accepted, so slow clients cannot fill the pod's
// memory, and the gauge shows the bound reached.
func TestConnectionBound(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	// One client holds the bound here: no cap of its own
	// (TestConnectionsPerAddress).
	os.WriteFile(cfg, []byte("limits:\n  max_connections: 2\n  max_connections_per_address: -1\n"), 0o644)
	base, logs, stop := startServe(t, map[string]string{"TOOLSEARCH_CONFIG": cfg})
	defer stop()
	metrics := metricsBase(t, logs)
	open := func() string {
		resp, err := http.Get(metrics + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return regexp.MustCompile(`(?m)^toolsearch_http_connections (\S+)$`).FindStringSubmatch(string(b))[1]
	}
	http.DefaultClient.CloseIdleConnections() // startServe's polling kept one
	waitUntil(t, "the API's connections to close", func() bool { return open() == "0" })
	var slow []net.Conn
	for range 2 { // two clients that never finish their headers
		c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write([]byte("POST /mcp/tool-search HTTP/1.1\r\nHost: localhost\r\n"))
		slow = append(slow, c)
	}
	waitUntil(t, "the gauge to count both", func() bool { return open() == "2" })
	client := &http.Client{Timeout: 300 * time.Millisecond, Transport: &http.Transport{DisableKeepAlives: true}}
	if resp, err := client.Get(base + "/healthz"); err == nil {
		resp.Body.Close()
		t.Fatalf("a third connection was served (%s) with the bound of 2 held", resp.Status)
	}
	// The probes answer on the metrics listener all the same: a kubelet
	// probing there does not restart a pod for its callers' connections.
	client.Timeout = 10 * time.Second
	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := client.Get(metrics + path)
		if err != nil {
			t.Fatalf("%s on the metrics listener with the API's bound held: %v", path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s on the metrics listener = %s, want 200", path, resp.Status)
		}
	}
	slow[0].Close()
	resp, err := client.Get(base + "/healthz")
	if err != nil {
		t.Fatalf("with a connection freed: %v", err)
	}
	resp.Body.Close()
	// Connections that sit idle after a request do not hold the bound:
	// reaching it closes them, and a new client is served at once, not
	// after the two minutes of the server's IdleTimeout.
	slow[1].Close()
	waitUntil(t, "the slow connections to close", func() bool { return open() == "0" })
	for range 2 {
		c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n"))
		if _, err := http.ReadResponse(bufio.NewReader(c), nil); err != nil {
			t.Fatal(err)
		}
	}
	if resp, err = client.Get(base + "/healthz"); err != nil {
		t.Fatalf("with the bound held by idle connections: %v", err)
	}
	resp.Body.Close()
}

// TestConnectionsPerAddress: one client address holds at most
// limits.max_connections_per_address connections, so that it cannot take
// the whole bound from the others (a client leaking connections, slow
// bodies): past it a new one of its is reset at accept, counted and
// logged, while another address is served; a connection it closes gives
// its place back.
func TestConnectionsPerAddress(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	os.WriteFile(cfg, []byte("limits:\n  max_connections: 16\n  max_connections_per_address: 2\n"), 0o644)
	base, logs, stop := startServe(t, map[string]string{"TOOLSEARCH_CONFIG": cfg})
	defer stop()
	metrics := metricsBase(t, logs)
	addr := strings.TrimPrefix(base, "http://")
	http.DefaultClient.CloseIdleConnections() // startServe's polling kept one
	waitUntil(t, "the API's connections to close", func() bool {
		return metricValue(t, metrics, "toolsearch_http_connections") == 0
	})
	// from dials addr from the loopback address local and sends a
	// request's first line, its headers unfinished; nil when the dial
	// failed (a reset can come before the connect returns).
	from := func(local string) net.Conn {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			return nil
		}
		c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: localhost\r\n"))
		return c
	}
	// hold is from, for a connection that must be made.
	hold := func(local string) net.Conn {
		c := from(local)
		if c == nil {
			t.Fatalf("a connection from %s to %s was not made", local, addr)
		}
		return c
	}
	// served finishes c's request and reports whether it was answered.
	served := func(c net.Conn) bool {
		if c == nil {
			return false
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		c.Write([]byte("\r\n"))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	held := []net.Conn{hold("127.0.0.1"), hold("127.0.0.1")}
	waitUntil(t, "the gauge to count both", func() bool {
		return metricValue(t, metrics, "toolsearch_http_connections") == 2
	})
	if served(from("127.0.0.1")) {
		t.Error("a third connection of an address holding its two was served")
	}
	const refused = `toolsearch_http_connections_refused_total{listener="api",reason="connections"}`
	waitUntil(t, "the refusal counted", func() bool { return metricValue(t, metrics, refused) == 1 })
	if !strings.Contains(logs.String(), `"msg":"connection refused: its client address holds as many as it may","listener":"api","client":"127.0.0.1","limit":2`) {
		t.Errorf("no line names the refused address:\n%s", logs)
	}
	if !served(from("127.0.0.2")) {
		t.Error("another address was not served while the first held its two")
	}
	if !served(held[0]) {
		t.Error("a held connection's request was not answered")
	}
	// Its place is given back once the server has closed it.
	waitUntil(t, "the address served again", func() bool { return served(from("127.0.0.1")) })
	held[1].Close()

	// The metrics listener, which the kubelet probes, holds 64
	// connections, an address a quarter of them: one pod holding them
	// all made the probes fail.
	// (127.0.0.4: the test's own reads of /metrics come from 127.0.0.1.)
	addr = strings.TrimPrefix(metrics, "http://")
	for range 16 {
		defer hold("127.0.0.4").Close()
	}
	if served(from("127.0.0.4")) {
		t.Error("a 17th connection of an address to the metrics listener was served")
	}
	if !served(from("127.0.0.2")) {
		t.Error("a probe from another address was not answered while one held its 16")
	}
	if n := metricValue(t, metrics, `toolsearch_http_connections_refused_total{listener="metrics",reason="connections"}`); n != 1 {
		t.Errorf("refusals on the metrics listener = %v, want 1", n)
	}
}

// waitUntil polls cond until it holds, failing the test after 10 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func TestServeBadConfig(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"bad embedder", nil, []string{"-embedder", "magic"}, "local or openai"},
		{"bad env number", map[string]string{"TOOLSEARCH_EMBEDDING_DIMENSIONS": "lots"}, nil, "TOOLSEARCH_EMBEDDING_DIMENSIONS"},
		{"bad env boolean", map[string]string{"TOOLSEARCH_ALLOW_ANY_HOST": "maybe"}, nil, `TOOLSEARCH_ALLOW_ANY_HOST="maybe" is not true or false`},
		{"bad log level", nil, []string{"-log-level", "loud"}, "log-level"},
		{"a misspelt flag", nil, []string{"-metrics-adr", "off"}, "toolsearch serve: -metrics-adr is not a flag; did you mean -metrics-addr?"},
		{"bad listen address", nil, []string{"-addr", "256.0.0.1:1"}, "listen"},
		{"a peak profile directory that cannot be made", nil, []string{"-peak-profile", "/proc/self/status/peak"}, "peak profile: mkdir /proc/self/status"},
		{"metrics on the API's address", nil, []string{"-addr", "127.0.0.1:18130", "-metrics-addr", "127.0.0.1:18130"}, `-metrics-addr is -addr's "127.0.0.1:18130"`},
		{"bad catalog", nil, []string{"-catalog", "testdata/bad-catalog.json"}, `server "github": tool #2 "create_issue": name repeated`},
		{"missing catalog", nil, []string{"-catalog", "/nonexistent.json"}, "/nonexistent.json"},
		{"unknown config key", nil, []string{"-config", "testdata/unknown-key.yaml"}, `key "cores" is unknown (did you mean "core"?)`},
		{"a flag in the config file", nil, []string{"-config", "testdata/flag-key.yaml"}, `config testdata/flag-key.yaml: key "addr" is not a config file key: it is set by -addr or TOOLSEARCH_ADDR`},
		{"a flag's name for a config key", nil, []string{"-config", "testdata/file-key.yaml"}, `key "embedder" is unknown: in the config file it is embedding.provider (else -embedder or TOOLSEARCH_EMBEDDER)`},
		{"a key like none", nil, []string{"-config", "testdata/other-key.yaml"}, `key "widgets" is unknown; it takes core, templates, auth, embedding, search, upstreams, limits, mcp, learning`},
		{"config names unknown tool", nil, []string{"-config", "testdata/unknown-tool.yaml"}, `templates.release: unknown tool "ship_it"`},
		{"key env unset", nil, []string{"-config", "testdata/key-env.yaml"}, "environment variable TEAM_KEY is empty"},
		{"a provider's TLS over http", map[string]string{"TOOLSEARCH_EMBEDDER": "openai", "TOOLSEARCH_EMBEDDING_BASE_URL": "http://127.0.0.1:1/v1"}, []string{"-config", "testdata/provider-tls.yaml"},
			"config testdata/provider-tls.yaml: embedding.tls needs an https url"},
		{"a provider CA file that is not there", map[string]string{"TOOLSEARCH_EMBEDDER": "openai", "TOOLSEARCH_EMBEDDING_BASE_URL": "https://127.0.0.1:1/v1"}, []string{"-config", "testdata/provider-tls.yaml"},
			"config testdata/provider-tls.yaml: embedding.tls ca_file: open testdata/no-such-ca.crt: no such file or directory"},
		{"an upstream CA file that is not there", nil, []string{"-config", "testdata/upstream-tls.yaml"}, `config testdata/upstream-tls.yaml: upstream "internal": tls ca_file: open testdata/no-such-ca.crt: no such file or directory`},
		{"a serving certificate without its key", nil, []string{"-tls-cert-file", "testdata/no-such-cert.pem"}, "-tls-cert-file and -tls-key-file go together"},
		{"a serving certificate that is not there", map[string]string{"TOOLSEARCH_TLS_CERT_FILE": "testdata/no-such-cert.pem", "TOOLSEARCH_TLS_KEY_FILE": "testdata/no-such-key.pem"}, nil,
			"-tls-cert-file: open testdata/no-such-cert.pem: no such file or directory"},
		{"a serving certificate that is not PEM", nil, []string{"-tls-cert-file", "testdata/bad-catalog.json", "-tls-key-file", "testdata/unknown-key.yaml"},
			"-tls-cert-file testdata/bad-catalog.json, -tls-key-file testdata/unknown-key.yaml: tls: failed to find any PEM data in certificate input"},
		{"bad quantization", nil, []string{"-index-quantization", "int4"}, "-index-quantization must be none or binary"},
		{"bad quantization env", map[string]string{"TOOLSEARCH_INDEX_QUANTIZATION": "pq"}, nil, `got "pq"`},
		{"bad rescore", nil, []string{"-index-quantization", "binary", "-rescore", "0"}, "-rescore must be at least 1"},
		{"base URL without a scheme", nil, []string{"-embedder", "openai", "-embedding-base-url", "localhost:11434/v1"}, `-embedding-base-url: "localhost:11434/v1" must begin http:// or https://`},
		{"base URL with a query", map[string]string{"TOOLSEARCH_EMBEDDING_BASE_URL": "http://h.example/v1?key=q_secret"}, []string{"-embedder", "openai"}, `"http://h.example/v1" must not have a ?query`},
		{"connection bound below -1", nil, []string{"-config", "testdata/max-connections.yaml"}, "limits.max_connections must be -1 (no bound) or more, got -2"},
		{"batch size too large", map[string]string{"TOOLSEARCH_EMBEDDING_BATCH_SIZE": "5000"}, []string{"-embedder", "openai"}, "-embedding-batch-size must be 1-2048, got 5000"},
		{"dimensions too wide", nil, []string{"-embedding-dimensions", "2000000000"}, "-embedding-dimensions must be 0-8192, got 2000000000"},
		{"negative dimensions", map[string]string{"TOOLSEARCH_EMBEDDING_DIMENSIONS": "-1"}, nil, "-embedding-dimensions must be 0-8192, got -1"},
		{"a zero query timeout", nil, []string{"-query-timeout", "0s"}, "-query-timeout must be positive, got 0s"},
		{"a cache size under -1", nil, []string{"-embedder", "openai", "-query-cache-size", "-5"}, "-query-cache-size must be -1 (off) to 1000000, got -5"},
		{"a cache size past any pod's", nil, []string{"-embedder", "openai", "-query-cache-size", "9000000000000000000"}, "-query-cache-size must be -1 (off) to 1000000, got 9000000000000000000"},
		{"a zero embedding timeout", map[string]string{"TOOLSEARCH_EMBEDDING_TIMEOUT": "0s"}, nil, "-embedding-timeout must be positive, got 0s"},
		{"a negative drain delay", nil, []string{"-drain-delay", "-1s"}, "-drain-delay must not be negative, got -1s"},
		{"NaN from the environment", map[string]string{"TOOLSEARCH_HYBRID_ALPHA": "NaN"}, nil, "-hybrid-alpha must be a finite number, got NaN"},
		// "${A},${B}" with both unset served the embedded demo catalog.
		{"a DSN of two lines", map[string]string{"TOOLSEARCH_LEARNING_DSN": "postgres://ts:pg-s3cret@db/x\nmore"}, []string{"-config", "testdata/postgres.yaml"}, "environment variable TOOLSEARCH_LEARNING_DSN holds a newline"},
		{"an admin token of two lines", map[string]string{"TOOLSEARCH_ADMIN_TOKEN": "adm-s3cret\nx"}, nil, "environment variable TOOLSEARCH_ADMIN_TOKEN holds a newline"},
		{"an API key list entry of two lines", map[string]string{"TOOLSEARCH_API_KEYS": "k-s3cret\nx"}, nil, "environment variable TOOLSEARCH_API_KEYS: entry 1 of 1 holds a newline"},
		{"no model", map[string]string{"TOOLSEARCH_EMBEDDING_MODEL": " "}, []string{"-embedder", "openai"}, "-embedding-model must name a model"},
		{"an API key of two lines", map[string]string{"OPENAI_API_KEY": "sk-s3cret-one\nsk-two"}, []string{"-embedder", "openai"}, "holds a newline or a control character: no request could carry it"},
		{"an empty catalog entry", map[string]string{"TOOLSEARCH_CATALOG": ","}, nil, "environment variable TOOLSEARCH_CATALOG: entry 1 of 2 is empty"},
		{"an empty -catalog", nil, []string{"-catalog", ""}, `invalid value "" for flag -catalog: an empty file name`},
		{"no connection string", nil, []string{"-config", "testdata/postgres.yaml"}, "learning.store is postgres but TOOLSEARCH_LEARNING_DSN is not set"},
		// Learning off with a warning would serve on, each replica
		// learning alone; and pgx's error would quote the password.
		{"a connection string that does not parse", map[string]string{"TOOLSEARCH_LEARNING_DSN": "postgres://ts:pg-s3cret@[::1/db"}, []string{"-config", "testdata/postgres.yaml"},
			"TOOLSEARCH_LEARNING_DSN: learning store: the PostgreSQL connection string cannot be used: it does not parse"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			// Each case must fail before serving; the deadline turns a
			// regression into a failure instead of a hang.
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			learned := filepath.Join(t.TempDir(), "learned.db") // a case that gets as far as the store opens it here
			getenv := func(k string) string {
				if k == "TOOLSEARCH_LEARNING_PATH" {
					return learned
				}
				return tt.env[k]
			}
			err := run(ctx, append([]string{"serve", "-addr", "127.0.0.1:0", "-metrics-addr", "off"}, tt.args...), getenv, nil, io.Discard, &stderr)
			if err == nil || !strings.Contains(err.Error()+stderr.String(), tt.want) {
				t.Errorf("run(serve %v) = %v, stderr %q; want an error mentioning %q", tt.args, err, stderr.String(), tt.want)
			}
			if err != nil && (strings.Contains(err.Error()+stderr.String(), "q_secret") || strings.Contains(err.Error()+stderr.String(), "s3cret")) {
				t.Errorf("run(serve %v) = %v: a secret shows", tt.args, err)
			}
			// A bad file or flag stops start-up before anything is created.
			if _, err := os.Stat(learned); err == nil && tt.name != "bad listen address" {
				t.Errorf("run(serve %v) failed, leaving the learning file behind", tt.args)
			}
		})
	}
}

func TestEvalExitCodes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	good := write("good.jsonl", `{"id":"a","category":"c","query":"merge an approved pull request","expected":["merge_pull_request"]}`+"\n")
	unknown := write("unknown.jsonl", `{"id":"a","category":"c","query":"x","expected":["no_such_tool"]}`+"\n")
	junit := filepath.Join(dir, "report.xml")
	keyed, _, stop := startServe(t, map[string]string{"TOOLSEARCH_API_KEYS": "k1"})
	defer stop()
	// A server whose every search fails: the run measured nothing.
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{"code":"internal","message":"broken"}}`, http.StatusInternalServerError)
	}))
	defer failing.Close()
	// A server that speaks HTTPS alone, and servers whose every answer
	// is one status.
	tlsOnly := httptest.NewTLSServer(http.NotFoundHandler())
	defer tlsOnly.Close()
	answering := func(code int) string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", code) }))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want int
		out  string
	}{
		{"pass", []string{"-cases", good, "-min-recall", "1"}, nil, 0, "recall@10  1.000  (1 expected, 1 found)"},
		{"below threshold", []string{"-cases", good, "-k", "1", "-min-recall", "1.0", "-catalog", write("cat.json", `{"tools":[{"name":"merge_pull_request","description":"x"},{"name":"merge_an_approved_pull_request","description":"merge an approved pull request"}]}`)}, nil, 1, "recall@1  0.000"},
		{"unknown expected tool", []string{"-cases", unknown}, nil, 2, `no_such_tool`},
		{"missing cases", []string{}, nil, 2, "-cases is required"},
		{"bad format", []string{"-cases", good, "-format", "pdf"}, nil, 2, "-format"},
		{"junit", []string{"-cases", good, "-format", "junit", "-out", junit}, nil, 0, "report written"},
		// A run that fails leaves the report written before it (checked
		// below), and an -out that cannot be written fails before the run.
		{"a failed run after it", []string{"-cases", unknown, "-format", "junit", "-out", junit}, nil, 2, "no_such_tool"},
		{"-out in a missing directory", []string{"-cases", good, "-out", filepath.Join(dir, "missing", "r.xml")}, nil, 2, "-out " + filepath.Join(dir, "missing", "r.xml")},
		{"markdown", []string{"-cases", good, "-format", "markdown"}, nil, 0, "| recall@10 | **1.000**"},
		// A gate that compared nothing would pass every run.
		{"-fail-on-regression without a baseline", []string{"-cases", good, "-fail-on-regression"}, nil, 2, "-fail-on-regression needs -baseline FILE"},
		{"a baseline for other cases", []string{"-cases", good, "-baseline", "../../evals/baseline.json"}, nil, 2, "the baseline shares no case id with these 1 cases"},
		{"json", []string{"-cases", good, "-format", "json"}, nil, 0, `"recall": 1`},
		// Misspelt queries: the report says so; a share outside 0 to 1, or
		// -self, whose queries are not the cases', is refused.
		{"misspelt", []string{"-cases", good, "-misspell", "1"}, nil, 0, "[1 of long words misspelt]"},
		{"misspelt, below zero", []string{"-cases", good, "-misspell", "-0.5"}, nil, 2, "the share of words misspelt must be from 0 to 1, got -0.5"},
		{"misspelt, over one", []string{"-cases", good, "-misspell", "2"}, nil, 2, "the share of words misspelt must be from 0 to 1, got 2"},
		{"misspelt -self", []string{"-self", "-misspell", "0.2"}, nil, 2, "-misspell misspells the queries of -cases; -self has none"},
		{"a stray argument among flags", []string{"-cases", good, "stray", "-format", "json"}, nil, 2, `unexpected argument "stray"`},
		{"NaN from the environment", []string{"-cases", good}, map[string]string{"TOOLSEARCH_HYBRID_ALPHA": "NaN"}, 2, "-hybrid-alpha must be a finite number, got NaN"},
		{"a server that wants a key, none sent", []string{"-cases", good, "-url", keyed}, nil, 2, "401 Unauthorized (set TOOLSEARCH_API_KEY to a key the server accepts)"},
		{"a wrong key", []string{"-cases", good, "-url", keyed}, map[string]string{"TOOLSEARCH_API_KEY": "nope"}, 2, "the server does not accept TOOLSEARCH_API_KEY's key"},
		{"the right key", []string{"-cases", good, "-url", keyed}, map[string]string{"TOOLSEARCH_API_KEY": "k1"}, 0, "recall@10  1.000"},
		// In process, a deployment's keys in the environment failed every
		// search: the operator's searches see the whole catalog, and say so.
		{"in process, keys in the environment", []string{"-cases", good, "-min-recall", "1"}, map[string]string{"TOOLSEARCH_API_KEYS": "k1"}, 0, "the API keys configured do not apply here"},
		{"no server", []string{"-cases", good, "-url", "http://127.0.0.1:1"}, nil, 2, "nothing answers at http://127.0.0.1:1 (is toolsearch serve running there?): connect: connection refused"},
		// Without a scheme every search failed, each a miss: recall 0.000, exit 0.
		{"a URL without its scheme", []string{"-cases", good, "-url", "127.0.0.1:8080"}, nil, 2, `-url: "127.0.0.1:8080" must begin http:// or https://`},
		{"every search failing", []string{"-cases", good, "-url", failing.URL}, nil, 1, "every search failed, so nothing was measured; the first: POST /mcp/tool-search: 500 Internal Server Error"},
		{"-wait for a server that never comes", []string{"-cases", good, "-url", "http://127.0.0.1:1", "-wait", "1500ms"}, nil, 2, "http://127.0.0.1:1 not ready after 1.5s"},
		{"-wait for a ready server", []string{"-cases", good, "-url", keyed, "-wait", "1m"}, map[string]string{"TOOLSEARCH_API_KEY": "k1"}, 0, "recall@10  1.000"},
		// An answer no starting server gives ends the wait at once: it
		// would have waited out its minute.
		{"-wait, http:// to an HTTPS server", []string{"-cases", good, "-url", "http://" + strings.TrimPrefix(tlsOnly.URL, "https://"), "-wait", "1m"}, nil, 2,
			`/readyz answered 400 Bad Request ("Client sent an HTTP request to an HTTPS server."), which no starting toolsearch does: the server speaks HTTPS; use an https:// URL`},
		{"-wait, a 403", []string{"-cases", good, "-url", answering(http.StatusForbidden), "-wait", "1m"}, nil, 2, `/readyz answered 403 Forbidden ("no"), which no starting toolsearch does`},
		{"-wait, a proxy's 404 waited out", []string{"-cases", good, "-url", answering(http.StatusNotFound), "-wait", "1500ms"}, nil, 2, "not ready after 1.5s: 404 Not Found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(t.Context(), append([]string{"eval"}, tt.args...), func(k string) string { return tt.env[k] }, nil, &stdout, &stderr)
			code := 0
			if ec, ok := err.(exitCode); ok {
				code = int(ec)
			} else if err != nil {
				t.Fatalf("run = %v", err)
			}
			if code != tt.want {
				t.Errorf("exit %d, want %d; stderr %s", code, tt.want, stderr.String())
			}
			if !strings.Contains(stdout.String()+stderr.String(), tt.out) {
				t.Errorf("output lacks %q:\n%s%s", tt.out, stdout.String(), stderr.String())
			}
		})
	}
	if b, _ := os.ReadFile(junit); !bytes.Contains(b, []byte(`<testcase name="a"`)) {
		t.Errorf("junit report: %s", b)
	}
}

func TestEvalAgainstURL(t *testing.T) {
	base, _, stop := startServe(t, nil)
	defer stop()
	var stdout, stderr bytes.Buffer
	err := run(t.Context(), []string{"eval", "-cases", "../../evals/cases.jsonl", "-url", base, "-format", "json"}, func(string) string { return "" }, nil, &stdout, &stderr)
	if err != nil {
		t.Fatalf("eval -url: %v %s", err, stderr.String())
	}
	var remote struct{ Summary struct{ Found, Expected int } }
	json.Unmarshal(stdout.Bytes(), &remote)
	stdout.Reset()
	if err := run(t.Context(), []string{"eval", "-cases", "../../evals/cases.jsonl", "-format", "json"}, func(string) string { return "" }, nil, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	var local struct{ Summary struct{ Found, Expected int } }
	json.Unmarshal(stdout.Bytes(), &local)
	if remote.Summary != local.Summary || local.Summary.Expected == 0 {
		t.Errorf("eval over HTTP found %+v, in-process %+v: the same cases must give the same answer", remote.Summary, local.Summary)
	}
}

func TestQueryAndVersion(t *testing.T) {
	var stdout bytes.Buffer
	// Flags before the text, after it, or between its words.
	for _, args := range [][]string{
		{"-k", "3", "squash", "and", "merge", "a", "PR"},
		{"squash", "and", "merge", "a", "PR", "-k", "3"},
		{"squash", "and", "-k", "3", "merge", "a", "PR"},
	} {
		stdout.Reset()
		if err := run(t.Context(), append([]string{"query"}, args...), func(string) string { return "" }, nil, &stdout, io.Discard); err != nil {
			t.Fatal(err)
		}
		if lines := strings.Split(strings.TrimSpace(stdout.String()), "\n"); len(lines) != 5 || !strings.Contains(lines[1], "github/merge_pull_request") {
			t.Errorf("query %q output:\n%s", args, stdout.String())
		}
	}
	// A deployment's keys in the environment: the operator's query is of
	// the whole catalog, where it failed as an anonymous caller's.
	var stderr bytes.Buffer
	stdout.Reset()
	keys := func(k string) string { return map[string]string{"TOOLSEARCH_API_KEYS": "k1"}[k] }
	if err := run(t.Context(), []string{"query", "-k", "1", "squash", "and", "merge", "a", "PR"}, keys, nil, &stdout, &stderr); err != nil || !strings.Contains(stdout.String(), "github/merge_pull_request") || !strings.Contains(stderr.String(), "searches see the whole catalog") {
		t.Errorf("query with TOOLSEARCH_API_KEYS set: %v, stdout %q, stderr %q", err, stdout.String(), stderr.String())
	}
	// -format renders definitions, as the endpoint's "format" does, for
	// each provider it takes.
	for _, format := range []struct{ name, field string }{
		{"openai", `"function"`}, {"openai_responses", `"strict": false`}, {"anthropic", `"input_schema"`},
		{"gemini", `"parameters"`}, {"mcp", `"inputSchema"`},
	} {
		stdout.Reset()
		if err := run(t.Context(), []string{"query", "-k", "1", "-format", format.name, "merge", "a", "PR"}, func(string) string { return "" }, nil, &stdout, io.Discard); err != nil ||
			!strings.Contains(stdout.String(), `"definitions"`) || !strings.Contains(stdout.String(), format.field) {
			t.Errorf("query -format %s: %v\n%s", format.name, err, stdout.String())
		}
	}
	stdout.Reset()
	if err := run(t.Context(), []string{"version"}, func(string) string { return "" }, nil, &stdout, io.Discard); err != nil || !strings.HasPrefix(stdout.String(), "toolsearch ") {
		t.Errorf("version = %q, %v", stdout.String(), err)
	}
	for _, c := range []struct{ cmd, want string }{
		{"bogus", `unknown command "bogus"` + "\n"},
		{"serv", `unknown command "serv" (did you mean "serve"?)`},
		{"lnit", `(did you mean "lint"?)`},
		{"Eval", `(did you mean "eval"?)`},
	} {
		var stderr bytes.Buffer
		err := run(t.Context(), []string{c.cmd}, func(string) string { return "" }, nil, io.Discard, &stderr)
		if fmt.Sprint(err) != "exit status 2" || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("unknown command %q: %v, %q; want exit status 2 and %q", c.cmd, err, stderr.String(), c.want)
		}
	}
	for _, args := range [][]string{{"-k", "0", "x"}, {"-k", "51", "x"}, {"-mode", "magic", "x"}} {
		var stderr bytes.Buffer
		err := run(t.Context(), append([]string{"query"}, args...), func(string) string { return "" }, nil, io.Discard, &stderr)
		if fmt.Sprint(err) != "exit status 2" || !strings.HasPrefix(stderr.String(), "toolsearch query: -"+strings.TrimPrefix(args[0], "-")+" must be") {
			t.Errorf("query %q: %v, stderr %q; want exit status 2 naming the flag", args, err, stderr.String())
		}
	}
}

// TestUnreadSettings: a flag typed for a choice not made (a provider's
// model with the local embedder) is refused; the same from the
// environment or a config file is warned of, since one environment or
// config serves several commands and embedders are compared on purpose.
func TestUnreadSettings(t *testing.T) {
	for _, m := range modal {
		if envOf[m.name] == "" {
			t.Errorf("-%s is modal but envOf names no variable for it: its warning would never come", m.name)
		}
	}
	cfg := filepath.Join(t.TempDir(), "provider.yaml")
	if err := os.WriteFile(cfg, []byte("embedding: {provider: openai, model: big-model}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tlsCfg := filepath.Join(t.TempDir(), "provider-tls.yaml")
	if err := os.WriteFile(tlsCfg, []byte("embedding: {tls: {ca_file: ca.crt}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		env    map[string]string
		args   []string
		fails  bool
		stderr string // what stderr must hold; "" for nothing
	}{
		{"a provider's model with the local embedder", nil, []string{"-embedding-model", "big-model"}, true,
			"-embedding-model does nothing here: only -embedder openai reads it, and -embedder is local"},
		{"a provider's address without -embedder", nil, []string{"-embedding-base-url", "http://ollama:11434/v1"}, true,
			"-embedding-base-url does nothing here: only -embedder openai reads it"},
		{"an Azure version for OpenAI's API", nil, []string{"-embedder", "openai", "-embedding-api-version", "2024-10-21"}, true,
			"-embedding-api-version does nothing here: only -embedding-api-type azure reads it, and -embedding-api-type is openai"},
		{"rescoring without binary codes", nil, []string{"-rescore", "50"}, true,
			"-rescore does nothing here: only -index-quantization binary reads it, and -index-quantization is none"},
		{"a convex weight for rrf", nil, []string{"-fusion", "rrf", "-hybrid-alpha", "0.5"}, true,
			"-hybrid-alpha does nothing here: only -fusion convex reads it, and -fusion is rrf"},
		{"a query cache with the local embedder", nil, []string{"-query-cache-size", "10"}, true, "-query-cache-size does nothing here"},
		{"the environment warns", map[string]string{"TOOLSEARCH_EMBEDDING_MODEL": "big-model"}, nil, false,
			"toolsearch: warning: TOOLSEARCH_EMBEDDING_MODEL is set, but only -embedder openai reads it, and -embedder is local"},
		{"a config overridden by a flag warns", nil, []string{"-config", cfg, "-embedder", "local"}, false,
			"toolsearch: warning: config " + cfg + " sets -embedding-model, but only -embedder openai reads it, and -embedder is local"},
		{"a provider's TLS with the local embedder", nil, []string{"-config", tlsCfg}, false,
			"toolsearch: warning: config " + tlsCfg + " sets embedding.tls, but only -embedder openai reads it, and -embedder is local"},
		{"rescoring with binary codes", nil, []string{"-index-quantization", "binary", "-rescore", "50"}, false, ""},
		{"a convex weight", nil, []string{"-fusion", "convex", "-hybrid-alpha", "0.5"}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			args := append(append([]string{"query", "-k", "1"}, tt.args...), "merge", "a", "pull", "request")
			err := run(t.Context(), args, func(k string) string { return tt.env[k] }, nil, io.Discard, &stderr)
			if (err != nil) != tt.fails {
				t.Errorf("query %v = %v, want failure %v (stderr %q)", tt.args, err, tt.fails, stderr.String())
			}
			if tt.stderr == "" && stderr.Len() > 0 || !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("query %v wrote %q to stderr, want %q", tt.args, stderr.String(), tt.stderr)
			}
		})
	}
}

func TestConfigPrecedence(t *testing.T) {
	// The file says 16 dimensions and 9s; the environment says 32; the flag says 48.
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"file", nil, nil, `"dimensions":16`},
		{"env beats file", map[string]string{"TOOLSEARCH_EMBEDDING_DIMENSIONS": "32"}, nil, `"dimensions":32`},
		{"flag beats env", map[string]string{"TOOLSEARCH_EMBEDDING_DIMENSIONS": "32"}, []string{"-embedding-dimensions", "48"}, `"dimensions":48`},
		{"quantization from env", map[string]string{"TOOLSEARCH_INDEX_QUANTIZATION": "binary", "TOOLSEARCH_RESCORE": "50"}, nil, `"quantization":"binary","rescore":50`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base, _, stop := startServe(t, tt.env, append([]string{"-config", "testdata/dims.yaml"}, tt.args...)...)
			defer stop()
			resp, err := http.Get(base + "/mcp/tool-search/status")
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !strings.Contains(string(b), tt.want) {
				t.Errorf("status = %s, want %s", b, tt.want)
			}
		})
	}
}

func TestServeWithKeysAndRebuild(t *testing.T) {
	env := map[string]string{"TOOLSEARCH_API_KEYS": "k1,k2", "TOOLSEARCH_ADMIN_TOKEN": "adm"}
	base, logs, stop := startServe(t, env)
	defer stop()
	post := func(path, token, body string) int {
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := post("/mcp/tool-search", "", `{"query":"x y"}`); got != 401 {
		t.Errorf("no key = %d, want 401", got)
	}
	if got := post("/mcp/tool-search", "k2", `{"query":"x y"}`); got != 200 {
		t.Errorf("key k2 = %d, want 200", got)
	}
	if got := post("/mcp/tool-search/rebuild", "k1", ""); got != 401 {
		t.Errorf("rebuild with a search key = %d, want 401", got)
	}
	if got := post("/mcp/tool-search/rebuild", "adm", ""); got != 200 {
		t.Errorf("rebuild with the admin token = %d, want 200", got)
	}
	for _, secret := range []string{"k1", "k2", "adm"} {
		if strings.Contains(logs.String(), `"`+secret+`"`) {
			t.Errorf("logs contain the secret %q", secret)
		}
	}
}

func TestLintAndSelf(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want int
		out  string
	}{
		{"default catalog lints clean", []string{"lint"}, 0, "0 errors"},
		{"empty description fails", []string{"lint", "-catalog", "testdata/lint-error.json"}, 1, "s/nodesc: no description"},
		{"json", []string{"lint", "-format", "json", "-catalog", "testdata/lint-error.json"}, 1, `"errors": 1`},
		{"bad format", []string{"lint", "-format", "xml"}, 2, "-format"},
		// A name's invisible characters are shown, not printed raw: a soft
		// hyphen hid itself, and a bidirectional override reordered the
		// line in the terminal.
		{"a lookalike name shown escaped", []string{"lint", "-catalog", "testdata/lint-lookalike.json"}, 0, `db/de\u00ADlete_rows: name "de\u00adlete_rows" reads as "delete_rows"`},
		{"a Cyrillic letter among Latin ones shown escaped", []string{"lint", "-catalog", "testdata/lint-lookalike.json"}, 0, `db/d\u0435lete_rows: name "d\u0435lete_rows" reads as "delete_rows"`},
		{"lookalike ids named with escapes", []string{"lint", "-catalog", "testdata/lint-lookalike.json"}, 0, `"db/d\u0435lete_rows" looks the same as "db/delete_rows"`},
		{"a bidirectional override in a name shown escaped", []string{"lint", "-catalog", "testdata/lint-lookalike.json"}, 0, `db/\u202Eswor_tsil: name holds 1 hidden characters`},
		{"says which checks ran", []string{"lint"}, 0, "checks run: names, descriptions, parameters, ambiguous-ids, near-duplicates"},
		{"a provider out of reach skips near-duplicates, and says so", []string{"lint", "-embedder", "openai", "-embedding-base-url", "http://127.0.0.1:1/v1"}, 0, "check skipped: near-duplicates (no embeddings from the openai embedder: "},
		{"-fail-skipped makes that a failure", []string{"lint", "-embedder", "openai", "-embedding-base-url", "http://127.0.0.1:1/v1", "-fail-skipped"}, 1, "a check was skipped and -fail-skipped is set"},
		{"json lists the checks", []string{"lint", "-format", "json", "-embedder", "openai", "-embedding-base-url", "http://127.0.0.1:1/v1"}, 0, `"skipped": {
      "near-duplicates": "no embeddings`},
		{"self audit", []string{"eval", "-self", "-k", "5", "-min-recall", "1"}, 0, "self-description"},
		{"self with cases", []string{"eval", "-self", "-cases", "x.jsonl"}, 2, "cannot be combined"},
		// A command that takes flags only refuses an argument, where it
		// ignored it: `lint catalog.json` linted the embedded catalog and
		// exited 0. query takes its words as arguments.
		{"lint refuses a file given as an argument", []string{"lint", "catalog.json"}, 2, `toolsearch lint: unexpected argument "catalog.json": this command takes flags only (a catalog file is -catalog FILE)`},
		{"an argument after flags", []string{"lint", "-format", "json", "catalog.json"}, 2, `unexpected argument "catalog.json"`},
		{"index", []string{"index", "-out", "x.snap", "catalog.json"}, 2, `toolsearch index: unexpected argument "catalog.json"`},
		{"serve", []string{"serve", "catalog.json"}, 2, `toolsearch serve: unexpected argument "catalog.json"`},
		{"eval", []string{"eval", "-self", "stray"}, 2, `toolsearch eval: unexpected argument "stray"`},
		{"version", []string{"version", "now"}, 2, `toolsearch version: unexpected argument "now"`},
		{"query takes words", []string{"query", "merge", "a", "pull", "request", "-k", "1"}, 0, "github/merge_pull_request"},
		// A file of the wrong kind is refused past its bound, not read
		// until memory runs out (/dev/zero took 8 GB in ten seconds).
		{"a config file without end", []string{"lint", "-config", "/dev/zero"}, 2, "config: /dev/zero: file too large: larger than 4 MiB"},
		{"a catalog file without end", []string{"lint", "-catalog", "/dev/zero"}, 2, "catalog: /dev/zero: file too large: larger than 64 MiB"},
		{"a cases file without end", []string{"eval", "-cases", "/dev/zero"}, 2, "/dev/zero: file too large: larger than 64 MiB"},
		{"a baseline without end", []string{"eval", "-self", "-baseline", "/dev/zero"}, 2, "baseline: /dev/zero: file too large"},
		// Numbers strconv reads but no setting takes: NaN passed every
		// range check and scored every tool NaN.
		{"a format no provider takes", []string{"query", "-format", "openapi", "send an email"}, 2, `-format must be one of mcp, openai, openai_responses, anthropic, gemini, got "openapi"`},
		{"a NaN weight", []string{"query", "-hybrid-alpha", "NaN", "send an email"}, 2, "-hybrid-alpha must be a finite number, got NaN"},
		{"an infinite boost", []string{"query", "-companion-boost", "Inf", "send an email"}, 2, "-companion-boost must be a finite number, got +Inf"},
		{"a negative timeout", []string{"lint", "-embedding-timeout", "-5s"}, 2, "-embedding-timeout must not be negative, got -5s"},
		{"a NaN threshold", []string{"eval", "-self", "-min-recall", "NaN"}, 2, "-min-recall must be a finite number, got NaN"},
		{"a cosine over 1", []string{"lint", "-near-duplicate", "5"}, 2, "-near-duplicate must be in (0, 1], got 5"},
		{"a cosine of -1", []string{"lint", "-near-duplicate", "-1"}, 2, "-near-duplicate must be in (0, 1], got -1"},
		{"negative words", []string{"lint", "-min-description-words", "-4"}, 2, "-min-description-words must not be negative, got -4"},
		{"no bytes", []string{"lint", "-max-description-bytes", "0"}, 2, "-max-description-bytes must be at least 1, got 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(t.Context(), tt.args, func(string) string { return "" }, nil, &stdout, &stderr)
			code := 0
			if ec, ok := err.(exitCode); ok {
				code = int(ec)
			} else if err != nil {
				t.Fatalf("run = %v", err)
			}
			if code != tt.want || !strings.Contains(stdout.String()+stderr.String(), tt.out) {
				t.Errorf("exit %d (want %d); output lacks %q:\n%s%s", code, tt.want, tt.out, stdout.String(), stderr.String())
			}
		})
	}
}

// On SIGTERM the server fails readiness first, keeps serving through the
// drain delay, and lets in-flight requests finish.
func TestDrainOnShutdown(t *testing.T) {
	var queryStarted = make(chan struct{}, 1)
	builds := atomic.Int32{}
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Input []string `json:"input"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		if builds.Add(1) > 1 { // a query: hold it in flight
			select {
			case queryStarted <- struct{}{}:
			default:
			}
			time.Sleep(time.Second)
		}
		type item struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		data := make([]item, len(req.Input))
		for i := range data {
			data[i] = item{i, []float32{1, float32(len(req.Input[i]) % 7), 1}}
		}
		json.NewEncoder(w).Encode(map[string]any{"data": data})
	}))
	defer fake.Close()
	env := map[string]string{"TOOLSEARCH_EMBEDDER": "openai", "TOOLSEARCH_EMBEDDING_BASE_URL": fake.URL + "/v1",
		"TOOLSEARCH_DRAIN_DELAY": "400ms", "TOOLSEARCH_QUERY_TIMEOUT": "5s"}
	base, logs, stop := startServe(t, env)
	result := make(chan int, 1)
	go func() {
		code, _ := postSearch(t, base, `{"query":"merge a pull request"}`)
		result <- code
	}()
	<-queryStarted
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	// During the drain delay: not ready, but still serving.
	deadline := time.Now().Add(2 * time.Second)
	sawDraining := false
	for time.Now().Before(deadline) && !sawDraining {
		if resp, err := http.Get(base + "/readyz"); err == nil {
			sawDraining = resp.StatusCode == 503
			resp.Body.Close()
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !sawDraining {
		t.Error("/readyz never failed during the drain")
	}
	if code := <-result; code != 200 {
		t.Errorf("the in-flight search ended with %d, want 200", code)
	}
	if err := <-stopped; err != nil {
		t.Errorf("serve returned %v", err)
	}
	if !strings.Contains(logs.String(), `"msg":"draining"`) {
		t.Error("no draining log line")
	}
}

// A pod stopped during its first build was never ready, so no load
// balancer sends it traffic: it stops without the drain delay, and the
// build it abandons is no failure (no ERROR line for every pod a rollout
// stops while a slow provider embeds).
func TestStopDuringFirstBuild(t *testing.T) {
	asked := make(chan struct{}, 1)
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case asked <- struct{}{}:
		default:
		}
		io.Copy(io.Discard, r.Body) // read, so that the client's going away ends the request
		<-r.Context().Done()        // the provider never answers
	}))
	defer fake.Close()
	env := map[string]string{"TOOLSEARCH_EMBEDDER": "openai", "TOOLSEARCH_EMBEDDING_BASE_URL": fake.URL + "/v1",
		"TOOLSEARCH_EMBEDDING_TIMEOUT": "1h", "TOOLSEARCH_DRAIN_DELAY": "1h"}
	base, logs, stop := startListening(t, env)
	<-asked
	if resp, err := http.Get(base + "/readyz"); err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("readyz during the first build: %v %v", resp, err)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("serve returned %v", err)
		}
	case <-time.After(30 * time.Second): // a liveness bound, far below the hour's delay
		t.Fatalf("serve waited out the drain delay with nothing to drain:\n%s", logs)
	}
	for _, want := range []string{`"msg":"draining","delay":"0s"`, `"msg":"index build stopped"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("no %s in the log:\n%s", want, logs)
		}
	}
	if strings.Contains(logs.String(), `"level":"ERROR"`) {
		t.Errorf("a stopped build was logged as an error:\n%s", logs)
	}
}

// toolsearch index embeds once; serve -snapshot then builds with no
// provider call when catalog and model match, and says why and embeds
// afresh when they do not.
func TestSnapshotRoundTrip(t *testing.T) {
	var calls atomic.Int32
	fake := fakeOpenAI(t, &calls, nil)
	env := map[string]string{
		"TOOLSEARCH_EMBEDDER":           "openai",
		"TOOLSEARCH_EMBEDDING_BASE_URL": fake.URL + "/v1",
		"OPENAI_API_KEY":                "sk-e2e-secret-key",
		"TOOLSEARCH_LEARNING_PATH":      filepath.Join(t.TempDir(), "learned.db"),
	}
	getenv := func(k string) string { return env[k] }
	path := filepath.Join(t.TempDir(), "index.snap")
	var stdout bytes.Buffer
	if err := run(t.Context(), []string{"index", "-out", path}, getenv, nil, &stdout, io.Discard); err != nil {
		t.Fatalf("index: %v", err)
	}
	if calls.Load() != 1 || !strings.Contains(stdout.String(), "tools × 32 dimensions") {
		t.Fatalf("index: %d provider calls, output %q", calls.Load(), stdout.String())
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("snapshot mode = %v (%v), want 0644: the image's nonroot user must read it", st.Mode(), err)
	}
	readAsNonroot(t, path)
	// An -out that cannot be written fails before the provider is called
	// for 73 embeddings it would have thrown away.
	before := calls.Load()
	err := run(t.Context(), []string{"index", "-out", filepath.Join(t.TempDir(), "missing", "index.snap")}, getenv, nil, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "-out ") || calls.Load() != before {
		t.Errorf("index to a missing directory: %v after %d provider calls; want an error naming -out, before any call", err, calls.Load()-before)
	}

	env["TOOLSEARCH_SNAPSHOT"] = path
	before = calls.Load()
	base, logs, stop := startServe(t, env)
	if got := calls.Load() - before; got != 0 {
		t.Errorf("serve -snapshot made %d provider calls at start-up, want 0", got)
	}
	// Ready comes with the publish, and its log line just after: wait
	// for it rather than read the log at once (under -race in CI the
	// line had not been written yet).
	waitUntil(t, "the publish's log line", func() bool { return strings.Contains(logs.String(), "index snapshot published") })
	if !strings.Contains(logs.String(), `"from_snapshot_file":true`) {
		t.Errorf("no sign of the snapshot being used:\n%s", logs)
	}
	if code, res := postSearch(t, base, `{"query":"merge pull request","top_k":1,"include_core":false}`); code != 200 || res["mode"] != "hybrid" {
		t.Errorf("search from the snapshot = %d %v", code, res)
	}
	stop()

	// Another catalog: the snapshot does not fit, so serve says so and embeds.
	cat := filepath.Join(t.TempDir(), "other.json")
	os.WriteFile(cat, []byte(`{"tools":[{"name":"echo","description":"Echo the input back"}]}`), 0o644)
	env["TOOLSEARCH_CATALOG"] = cat
	before = calls.Load()
	_, logs, stop = startServe(t, env)
	defer stop()
	if calls.Load()-before != 1 || !strings.Contains(logs.String(), "index snapshot file not used") || !strings.Contains(logs.String(), "serving catalog") {
		t.Errorf("a mismatched snapshot: %d calls, logs:\n%s", calls.Load()-before, logs)
	}

	// A damaged file stops start-up.
	data, _ := os.ReadFile(path)
	data[len(data)/2] ^= 1
	os.WriteFile(path, data, 0o644)
	err = run(t.Context(), []string{"serve", "-addr", "127.0.0.1:0", "-metrics-addr", "off"}, getenv, nil, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "corrupt") {
		t.Errorf("serve with a damaged snapshot = %v", err)
	}
}

// A description edit that breaks discovery shows up as a regression
// against the stored report, and fails the job with -fail-on-regression.
// TestIndexReproducible: with SOURCE_DATE_EPOCH set, two snapshots of
// one catalog are the same bytes, built at that time; without it, at
// the time of writing. A value that is no time is refused before
// anything is embedded.
func TestIndexReproducible(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		epoch string
		want  string // the snapshot's built_at; "" for the time of writing
		fails bool
	}{
		{"1767225600", "2026-01-01T00:00:00Z", false},
		{"0", "1970-01-01T00:00:00Z", false},
		{"", "", false},
		{"-1", "", true},
		{"1.5", "", true},
		{"2026-01-01", "", true},
		{"999999999999999", "", true},
	}
	for i, tt := range tests {
		t.Run(tt.epoch, func(t *testing.T) {
			env := map[string]string{"SOURCE_DATE_EPOCH": tt.epoch}
			getenv := func(k string) string { return env[k] }
			var paths []string
			for j := range 2 {
				path := filepath.Join(dir, fmt.Sprintf("%d-%d.snap", i, j))
				var stderr bytes.Buffer
				err := run(t.Context(), []string{"index", "-out", path}, getenv, nil, io.Discard, &stderr)
				if tt.fails {
					if err == nil || !strings.Contains(stderr.String(), "SOURCE_DATE_EPOCH") {
						t.Fatalf("%v, %q; want a refusal naming SOURCE_DATE_EPOCH", err, stderr.String())
					}
					if _, err := os.Stat(path); err == nil {
						t.Errorf("%s written", path)
					}
					return
				}
				if err != nil {
					t.Fatalf("index: %v", err)
				}
				paths = append(paths, path)
			}
			h, _, err := snapshot.ReadFile(paths[0])
			if err != nil {
				t.Fatal(err)
			}
			got := h.BuiltAt.Format(time.RFC3339)
			a, _ := os.ReadFile(paths[0])
			b, _ := os.ReadFile(paths[1])
			switch {
			case tt.want != "" && (got != tt.want || !bytes.Equal(a, b)):
				t.Errorf("built_at %s, the two files the same: %v; want %s, and the same", got, bytes.Equal(a, b), tt.want)
			case tt.want == "" && time.Since(h.BuiltAt) > time.Hour:
				t.Errorf("built_at %s; want the time of writing", got)
			}
		})
	}
}

func TestEvalBaseline(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	cases := write("cases.jsonl", `{"id":"a","category":"c","query":"translate a document into french","expected":["translate"]}`+"\n"+
		`{"id":"b","category":"c","query":"convert a temperature to kelvin","expected":["convert_units"]}`+"\n")
	os.MkdirAll(filepath.Join(dir, "v1"), 0o755)
	os.MkdirAll(filepath.Join(dir, "v2"), 0o755)
	before := write("v1/tools.json", `{"tools":[{"name":"translate","description":"Translate a document into another language, such as French."},
		{"name":"convert_units","description":"Convert a temperature or length between units, such as kelvin."},
		{"name":"summarize","description":"Summarize a long document."},{"name":"spell_check","description":"Fix spelling in a document."}]}`)
	// The change adds a near-duplicate that shadows translate for this query.
	after := write("v2/tools.json", `{"tools":[{"name":"translate","description":"Translate a document into another language, such as French."},
		{"name":"convert_units","description":"Convert a temperature or length between units, such as kelvin."},
		{"name":"translate_document","description":"Translate a document into French, German or Spanish."},
		{"name":"summarize","description":"Summarize a long document."},{"name":"spell_check","description":"Fix spelling in a document."}]}`)
	base := filepath.Join(dir, "base.json")
	noenv := func(string) string { return "" }
	if err := run(t.Context(), []string{"eval", "-cases", cases, "-catalog", before, "-k", "1", "-format", "json", "-out", base}, noenv, nil, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	err := run(t.Context(), []string{"eval", "-cases", cases, "-catalog", before, "-k", "1", "-baseline", base, "-fail-on-regression"}, noenv, nil, &stdout, io.Discard)
	if err != nil || !strings.Contains(stdout.String(), "no regressions") {
		t.Errorf("same catalog: %v\n%s", err, stdout.String())
	}
	stdout.Reset()
	err = run(t.Context(), []string{"eval", "-cases", cases, "-catalog", after, "-k", "1", "-baseline", base, "-fail-on-regression", "-format", "markdown"}, noenv, nil, &stdout, io.Discard)
	if fmt.Sprint(err) != "exit status 1" || !strings.Contains(stdout.String(), "| a | `tools/translate` | rank 1 | out of the top k |") {
		t.Errorf("edited description: %v\n%s", err, stdout.String())
	}
	if err := run(t.Context(), []string{"eval", "-cases", cases, "-baseline", cases}, noenv, nil, io.Discard, io.Discard); fmt.Sprint(err) != "exit status 2" {
		t.Errorf("a baseline that is not a report: %v", err)
	}
}

// An eval's progress goes to a terminal only: a log file or a pipe (CI)
// gets nothing, so reports and logs stay what they were.
func TestProgressOnlyOnATerminal(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if progress(f, time.Now) != nil {
		t.Error("progress is reported into a file")
	}
	var buf bytes.Buffer
	if progress(&buf, time.Now) != nil {
		t.Error("progress is reported into a buffer")
	}
}

// TestServeLearningStoreDown: a PostgreSQL store that cannot be reached at
// start-up costs learning, never the service: it serves, searches answer
// (with a search id: uses are kept until the store answers), and status
// says why, without the password.
func TestServeLearningStoreDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("learning:\n  store: postgres\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"TOOLSEARCH_LEARNING_DSN": fmt.Sprintf("postgres://ts:pg-s3cret@127.0.0.1:%d/db?connect_timeout=1", port)}
	base, logs, stop := startServe(t, env, "-config", cfg)
	defer stop()
	code, res := postSearch(t, base, `{"query":"merge pull request","top_k":3}`)
	if code != 200 || res["search_id"] == nil {
		t.Errorf("search with the learning store down = %d %v", code, res)
	}
	var st struct {
		Learning struct {
			Enabled   bool   `json:"enabled"`
			Store     string `json:"store"`
			LastError string `json:"last_error"`
		} `json:"learning"`
	}
	getJSON(t, base+"/mcp/tool-search/status", &st)
	if !st.Learning.Enabled || st.Learning.Store != "postgres" || st.Learning.LastError == "" {
		t.Errorf("status learning = %+v, want postgres with its error", st.Learning)
	}
	if strings.Contains(logs.String()+st.Learning.LastError, "pg-s3cret") {
		t.Error("the password shows in the log or status")
	}
}

// TestServeLearningFileUnusable: a learning file that cannot be opened (a
// read-only or missing directory) turns learning off for the process, and
// status says so and why, where a warning at start-up had been all.
func TestServeLearningFileUnusable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "no-such-dir", "learned.db")
	base, _, stop := startServe(t, map[string]string{"TOOLSEARCH_LEARNING_PATH": path})
	defer stop()
	if code, res := postSearch(t, base, `{"query":"merge pull request","top_k":3}`); code != 200 {
		t.Errorf("search with learning off = %d %v", code, res)
	}
	var st struct {
		Learning struct {
			Enabled   bool   `json:"enabled"`
			LastError string `json:"last_error"`
		} `json:"learning"`
	}
	getJSON(t, base+"/mcp/tool-search/status", &st)
	if st.Learning.Enabled || !strings.Contains(st.Learning.LastError, "learning is off: its store cannot be opened") || !strings.Contains(st.Learning.LastError, "no-such-dir") {
		t.Errorf("status learning = %+v, want off, saying why", st.Learning)
	}
}

// TestUpstreamHeaderSecrets: an upstream's header takes its ${VAR} from
// the environment trimmed (a secret file's newline would make the header
// invalid, and every request to the upstream fail), and a variable unset
// or blank is an error naming it.
func TestUpstreamHeaderSecrets(t *testing.T) {
	f := config.File{Upstreams: []config.Upstream{{Name: "u", URL: "http://127.0.0.1:1/mcp", Headers: map[string]string{"Authorization": "Bearer ${T}"}}}}
	tests := []struct {
		name, value, want, err string
	}{
		{"plain", "tok", "Bearer tok", ""},
		{"a file's newline", "tok\n", "Bearer tok", ""},
		{"blank", " \n", "", "environment variable T is set but blank"},
		{"unset", "", "", "environment variable T is empty"},
		{"a file of two lines", "tok\nother\n", "", "header Authorization: environment variable T holds a newline or a control character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ups, err := upstreamConfigs("c.yaml", f, func(string) string { return tt.value })
			switch {
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Errorf("error = %v, want %q", err, tt.err)
			case tt.err == "" && (err != nil || ups[0].Headers["Authorization"] != tt.want):
				t.Errorf("upstreamConfigs = %+v, %v; want the header %q", ups, err, tt.want)
			}
		})
	}
}

// TestServePeakProfile: serve -peak-profile writes what the process held
// at its highest into the directory while it serves, and once it stops
// nothing half written is left (a file written aside is hidden).
func TestServePeakProfile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "peak")
	_, _, stop := startServe(t, nil, "-peak-profile", dir)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(filepath.Join(dir, "peak.txt")); err == nil && strings.Contains(string(b), "\nVmRSS:bytes ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no peak.txt with the resident set")
		}
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if aside, err := filepath.Glob(filepath.Join(dir, ".*")); err != nil || len(aside) > 0 {
		t.Errorf("files left half written: %v %v", aside, err)
	}
}
