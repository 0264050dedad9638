package main

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsearch/toolsearch/pkg/config"
	"github.com/toolsearch/toolsearch/pkg/httpapi"
	"github.com/toolsearch/toolsearch/pkg/logbuf"
	"github.com/toolsearch/toolsearch/pkg/testpki"
)

// TestServeTLS: with -tls-cert-file and -tls-key-file the API is served
// over HTTPS alone, HTTP/1.1 alone, to curl-like clients and the official
// MCP SDK client that trust its CA; a renewed certificate is served from
// its files' change without a restart, its expiry exported; files that
// stop reading keep the certificate read before, with one warning.
func TestServeTLS(t *testing.T) {
	ca := testpki.MustCA(t, "cluster CA")
	dir := t.TempDir()
	start := time.Now().Truncate(time.Second)
	// renew writes the files (certFile, keyFile) anew, valid until hours
	// after start.
	var certFile, keyFile string
	renew := func(hours int) time.Time {
		until := start.Add(time.Duration(hours) * time.Hour)
		var err error
		if certFile, keyFile, err = ca.ServerFilesUntil(dir, until, "localhost", "127.0.0.1"); err != nil {
			t.Fatal(err)
		}
		return until
	}
	first := renew(1)
	// Without the handshake limit (TestServeTLSHandshakeLimit's), whose
	// burst the 300 connections below would outrun.
	defaults, err := os.ReadFile("../../pkg/config/default.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, append(defaults, "limits: {tls_handshake_rate: -1}\n"...), 0o600); err != nil {
		t.Fatal(err)
	}
	base, trusting, logs, stop := startServeTLS(t, ca, certFile, keyFile, "-config", cfg)
	defer stop()
	if !strings.Contains(logs.String(), `"tls":true,"console":"https://`) {
		t.Errorf("the listening line does not say TLS, or gives an http console:\n%s", logs)
	}
	addr := strings.TrimPrefix(base, "https://")
	metrics := metricsBase(t, logs)

	resp, err := trusting.Post(base+"/mcp/tool-search", "application/json", strings.NewReader(`{"query":"merge a pull request","top_k":2}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "merge_pull_request") || resp.Proto != "HTTP/1.1" {
		t.Errorf("search over HTTPS: %s %d %s; want HTTP/1.1 200 with merge_pull_request", resp.Proto, resp.StatusCode, body)
	}

	// Plain HTTP to the API's port is refused: nothing is served in clear.
	if resp, err := http.Get("http://" + addr + "/mcp/tool-search/status"); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("plain HTTP to the TLS port answered %d; want 400", resp.StatusCode)
		}
	}

	// A client offering HTTP/2 is served HTTP/1.1, whose one request a
	// connection keeps limits.max_connections a bound on requests.
	conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", NextProtos: []string{"h2", "http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	if p := conn.ConnectionState().NegotiatedProtocol; p != "http/1.1" {
		t.Errorf("ALPN chose %q; want http/1.1", p)
	}
	conn.Close()

	client := mcp.NewClient(&mcp.Implementation{Name: "tls-test", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: trusting}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "merge a pull request"}})
	if err != nil || res.IsError {
		t.Errorf("search_tools over HTTPS through the SDK client = %+v, %v", res, err)
	}
	cs.Close()

	// The sizing rule counts its connections as TLS ones: status'
	// memory_needed_bytes is a plain server's plus the difference for
	// each of the 2,048 connections allowed.
	plainBase, _, stopPlain := startServe(t, nil)
	need := func(client *http.Client, base string) int64 {
		resp, err := client.Get(base + "/mcp/tool-search/status")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st struct {
			MemoryNeededBytes int64 `json:"memory_needed_bytes"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
			t.Fatal(err)
		}
		return st.MemoryNeededBytes
	}
	if got, plain := need(trusting, base), need(http.DefaultClient, plainBase); plain == 0 || got-plain != 2048*(64-28)<<10 {
		t.Errorf("memory_needed_bytes %d serving TLS, %d in clear; want %d more", got, plain, 2048*(64-28)<<10)
	}
	stopPlain()

	// eval -url waiting for a server whose certificate it does not trust
	// says so, rather than waiting out -wait.
	var evalOut bytes.Buffer
	err = run(t.Context(), []string{"eval", "-cases", "../../evals/cases.jsonl", "-url", base, "-wait", "10m"}, func(string) string { return "" }, nil, io.Discard, &evalOut)
	if said := evalOut.String(); err == nil || !strings.Contains(said, "certificate signed by unknown authority") || !strings.Contains(said, "SSL_CERT_FILE") || strings.Contains(said, "not ready after") {
		t.Errorf("eval -url against an untrusted certificate: %v, %q; want the certificate's error at once", err, said)
	}

	// Connections that never complete a handshake (a load balancer's TCP
	// check, a scanner) are counted, and their lines budgeted: a client
	// cannot fill the log with them.
	for range 300 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	waitUntil(t, "the failed handshakes counted", func() bool {
		return metricValue(t, metrics, "toolsearch_http_tls_handshake_errors_total") >= 300
	})
	if n := strings.Count(logs.String(), "TLS handshake error"); n > 150 {
		t.Errorf("%d lines of failed handshakes logged for 300; want the budget's (100 at once)", n)
	}

	// served is the expiry of the certificate a new connection is shown.
	served := func() time.Time {
		conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].NotAfter
	}
	exported := func() time.Time {
		return time.Unix(int64(metricValue(t, metrics, "toolsearch_serving_certificate_expiry_timestamp_seconds")), 0)
	}
	if got := served(); !got.Equal(first) {
		t.Errorf("served a certificate valid until %v; want %v", got, first)
	}
	if got := exported(); !got.Equal(first) {
		t.Errorf("exported expiry %v; want %v", got, first)
	}
	second := renew(2)
	waitUntil(t, "the renewed certificate served", func() bool { return served().Equal(second) })
	if got := exported(); !got.Equal(second) {
		t.Errorf("exported expiry %v after the renewal; want %v", got, second)
	}

	if err := testpki.Put(certFile, []byte("not a certificate")); err != nil {
		t.Fatal(err)
	}
	for range 3 { // over more than the second between two reads
		time.Sleep(600 * time.Millisecond)
		if got := served(); !got.Equal(second) {
			t.Fatalf("with its file unreadable, served a certificate valid until %v; want the last good one, %v", got, second)
		}
	}
	if n := strings.Count(logs.String(), "serving certificate not read again"); n != 1 {
		t.Errorf("%d warnings for one unreadable certificate file; want 1:\n%s", n, logs)
	}
}

// TestServeTLSHandshakeLimit: a client address that opens TLS
// connections faster than limits.tls_handshake_rate has the connections
// past its burst reset at accept, each counted, their lines budgeted; a
// connection it opened before keeps serving it, and new ones are taken
// again once its budget refills. The rate is low, so that a loaded
// machine's slow dials cannot refill the budget as fast as they spend it
// (at the default 50 a second, 250 dials that took 3.5 s in CI all
// completed); TestClientLimits checks the defaults.
func TestServeTLSHandshakeLimit(t *testing.T) {
	ca := testpki.MustCA(t, "cluster CA")
	dir := t.TempDir()
	certFile, keyFile, err := ca.ServerFiles(dir, "localhost", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("limits: {tls_handshake_rate: 0.5, tls_handshake_burst: 20}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base, trusting, logs, stop := startServeTLS(t, ca, certFile, keyFile, "-config", cfg)
	defer stop()
	addr := strings.TrimPrefix(base, "https://")
	metrics := metricsBase(t, logs)
	// search reports whether a search through trusting was answered 200,
	// and whether on a connection opened before.
	search := func() (ok, reused bool) {
		ctx := httptrace.WithClientTrace(t.Context(), &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused }})
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/mcp/tool-search", strings.NewReader(`{"query":"merge a pull request"}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := trusting.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, reused
	}
	if ok, _ := search(); !ok {
		t.Fatal("the first search failed")
	}
	dial := func() error {
		c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost"})
		if err == nil {
			c.Close()
		}
		return err
	}
	const flood = 150
	const refusedHandshakes = `toolsearch_http_connections_refused_total{listener="api",reason="handshake_rate"}`
	shook := 0
	start := time.Now()
	for range flood {
		if dial() == nil {
			shook++
		}
	}
	// The burst is 20, the search's connection one of them; the budget
	// refills at one every 2 s meanwhile.
	if most := 19 + int(time.Since(start).Seconds()/2) + 1; shook < 19 || shook > most {
		t.Errorf("%d of %d handshakes from one address completed; want the burst's 19, and at most %d with what refilled", shook, flood, most)
	}
	waitUntil(t, "the refusals counted", func() bool {
		return metricValue(t, metrics, refusedHandshakes) >= float64(flood-shook)
	})
	if n := metricValue(t, metrics, refusedHandshakes); n != float64(flood-shook) {
		t.Errorf("%s = %v; want the %d dials that failed", refusedHandshakes, n, flood-shook)
	}
	if !strings.Contains(logs.String(), `"msg":"TLS connection refused: its client address opened more than limits.tls_handshake_rate allows","listener":"api","client":"127.0.0.1"`) {
		t.Errorf("no line names the refused address:\n%s", logs)
	}
	// The budget: 100 lines at once, then 10 a second.
	if n, most := strings.Count(logs.String(), "TLS connection refused"), 100+int(10*time.Since(start).Seconds())+1; n > most {
		t.Errorf("%d lines for %d refused connections; want the budget's at most %d", n, flood-shook, most)
	}
	if ok, reused := search(); !ok || !reused {
		t.Errorf("a search on the connection opened before the refusals: answered %v, on that connection %v; want both", ok, reused)
	}
	waitUntil(t, "a new connection taken again", func() bool { return dial() == nil })
}

// TestClientLimits: what one address may open, from the config file's
// limits and their defaults.
func TestClientLimits(t *testing.T) {
	tests := []struct {
		name   string
		limits string
		tls    bool
		want   httpapi.ClientLimits
	}{
		{"defaults, in clear", "", false, httpapi.ClientLimits{Listener: "api", Connections: 512}},
		{"defaults, over TLS", "", true, httpapi.ClientLimits{Listener: "api", Connections: 512, HandshakeRate: 50, HandshakeBurst: 100}},
		{"a quarter of the bound", "{max_connections: 10}", false, httpapi.ClientLimits{Listener: "api", Connections: 2}},
		{"at least one", "{max_connections: 3}", false, httpapi.ClientLimits{Listener: "api", Connections: 1}},
		{"no bound: a quarter of its default", "{max_connections: -1}", false, httpapi.ClientLimits{Listener: "api", Connections: 512}},
		{"set", "{max_connections_per_address: 100}", false, httpapi.ClientLimits{Listener: "api", Connections: 100}},
		{"off", "{max_connections_per_address: -1, tls_handshake_rate: -1}", true, httpapi.ClientLimits{Listener: "api", Connections: -1}},
		{"a rate past the default burst", "{tls_handshake_rate: 300}", true, httpapi.ClientLimits{Listener: "api", Connections: 512, HandshakeRate: 300, HandshakeBurst: 300}},
		{"a burst", "{tls_handshake_rate: 5, tls_handshake_burst: 7}", true, httpapi.ClientLimits{Listener: "api", Connections: 512, HandshakeRate: 5, HandshakeBurst: 7}},
		{"no handshakes in clear", "{tls_handshake_rate: 5}", false, httpapi.ClientLimits{Listener: "api", Connections: 512}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			yaml := "auth: {trusted_proxies: [10.0.0.0/8], assigned_networks: ['fd00:10:244::/56']}\n"
			if tt.limits != "" {
				yaml += "limits: " + tt.limits + "\n"
			}
			file, err := config.Parse("test", []byte(yaml))
			if err != nil {
				t.Fatal(err)
			}
			got := clientLimits(file, tt.tls)
			tt.want.Trusted = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
			tt.want.Assigned = []netip.Prefix{netip.MustParsePrefix("fd00:10:244::/56")}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("clientLimits = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// startServeTLS is startServe over HTTPS, with the certificate and key
// of ca in certFile and keyFile: its base URL (https://), and a client
// that trusts ca.
func startServeTLS(t *testing.T, ca *testpki.CA, certFile, keyFile string, args ...string) (base string, client *http.Client, stderr *logbuf.Buffer, stop func() error) {
	t.Helper()
	base, stderr, stop = startListening(t, nil, append([]string{"-tls-cert-file", certFile, "-tls-key-file", keyFile}, args...)...)
	base = "https://" + strings.TrimPrefix(base, "http://")
	// The probes are the metrics listener's, in clear as the kubelet
	// reads them.
	metrics := metricsBase(t, stderr)
	waitUntil(t, "ready", func() bool {
		resp, err := http.Get(metrics + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return base, &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}}, stderr, stop
}

// metricValue is the value of the series name (its labels as the
// exposition format writes them) on metrics' /metrics.
func metricValue(t *testing.T, metrics, name string) float64 {
	t.Helper()
	resp, err := http.Get(metrics + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no %s in /metrics", name)
	}
	f, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
