package main

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsearch/toolsearch/cmd/internal/bintest"
	"github.com/toolsearch/toolsearch/cmd/internal/serveproc"
	"github.com/toolsearch/toolsearch/pkg/testpki"
)

// oneToolServer is an MCP server named name with one tool, which answers
// answer.
func oneToolServer(name, tool, description, answer string) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: tool, Description: description},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: answer}}}, nil, nil
		})
	return srv
}

// buildBinary builds toolsearch from this tree into a temporary directory.
func buildBinary(t *testing.T) string { return bintest.Build(t, ".") }

// TestUpstreamBehindAPrivateCA: an upstream served over HTTPS with a
// certificate of the cluster's own CA is reached once the CA is added
// with SSL_CERT_DIR, as docs/operations.md tells an operator to (the
// public CAs stay trusted); without it, status says the certificate did
// not verify. The binary runs as its own process, since Go reads the
// variable once a process.
func TestUpstreamBehindAPrivateCA(t *testing.T) {
	srv := oneToolServer("internal", "rotate_certificate", "Rotate a service's TLS certificate.", "rotated")
	up := httptest.NewUnstartedServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	up.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes refused without the CA
	up.StartTLS()
	defer up.Close()

	dir := t.TempDir()
	ca := filepath.Join(dir, "ca")
	if err := os.Mkdir(ca, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ca, "internal.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: up.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("upstreams:\n  - name: internal\n    url: "+up.URL+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A catalog of its own makes the service ready without the upstream
	// (with upstreams alone, it waits for one to deliver tools).
	cat := filepath.Join(dir, "catalog.json")
	if err := os.WriteFile(cat, []byte(`{"servers":[{"name":"static","tools":[{"name":"list_certificates","description":"List the certificates a cluster holds."}]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := buildBinary(t)
	for _, c := range []struct {
		name, state, lastError string
		env                    []string
	}{
		{"without the CA", "failing", "certificate signed by unknown authority", nil},
		{"with SSL_CERT_DIR", "connected", "", []string{"SSL_CERT_DIR=" + ca}},
	} {
		t.Run(c.name, func(t *testing.T) {
			metrics, err := serveproc.FreeAddr()
			if err != nil {
				t.Fatal(err)
			}
			env := append([]string{"SSL_CERT_FILE=", "SSL_CERT_DIR=", "TOOLSEARCH_LEARNING_PATH=" + filepath.Join(t.TempDir(), "learned.db")}, c.env...)
			s, err := serveproc.Start(t.Context(), bin, env, 30*time.Second, "-config", cfg, "-catalog", cat, "-metrics-addr", metrics)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Stop()
			got := waitUpstream(t, s, c.state)
			if c.lastError == "" && (got.LastError != "" || got.Tools != 1) {
				t.Errorf("status: %+v; want its one tool and no error", got)
			}
			if c.lastError != "" && !strings.Contains(got.LastError, c.lastError) {
				t.Errorf("last error %q; want it to say %q", got.LastError, c.lastError)
			}
		})
	}
}

// upstreamState is an upstream's line in status.
type upstreamState struct {
	State     string `json:"state"`
	Tools     int    `json:"tools"`
	LastError string `json:"last_error"`
}

// waitUpstream polls s's status until its one upstream is in state, and
// returns its line.
func waitUpstream(t *testing.T, s *serveproc.Server, state string) upstreamState {
	t.Helper()
	var st struct {
		Upstreams []upstreamState `json:"upstreams"`
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(s.Base + "/mcp/tool-search/status")
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Upstreams) == 1 && st.Upstreams[0].State == state {
			return st.Upstreams[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("status: %+v; want the upstream %s\n%s", st.Upstreams, state, s.Logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestUpstreamWithClientCertificate: an upstream behind a private CA that
// asks its clients for certificates is listed, and its tool called
// through /mcp, with the config file's tls: its CA, a certificate of that
// CA and its key (docs/mcp.md); without the certificate, status says TLS
// asked for one.
func TestUpstreamWithClientCertificate(t *testing.T) {
	srv := oneToolServer("internal", "show_certificate", "Show a service's TLS certificate and when it expires.", "expires in 90 days")
	up, caFile, certFile, keyFile := mutualTLSServer(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	dir := t.TempDir()
	write := func(name string, b []byte) string { return writeIn(t, dir, name, b) }
	cat := write("catalog.json", []byte(`{"servers":[{"name":"static","tools":[{"name":"list_certificates","description":"List the certificates a cluster holds."}]}]}`))
	bin := buildBinary(t)
	for _, c := range []struct {
		name, tls, state, lastError string
	}{
		{"the CA alone", "{ca_file: " + caFile + "}", "failing", "certificate required"},
		{"the CA and a certificate", "{ca_file: " + caFile + ", cert_file: " + certFile + ", key_file: " + keyFile + "}", "connected", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := write("config.yaml", []byte("upstreams:\n  - name: internal\n    url: "+up.URL+"\n    tls: "+c.tls+"\n"))
			metrics, err := serveproc.FreeAddr()
			if err != nil {
				t.Fatal(err)
			}
			env := []string{"TOOLSEARCH_LEARNING_PATH=" + filepath.Join(t.TempDir(), "learned.db")}
			s, err := serveproc.Start(t.Context(), bin, env, 30*time.Second, "-config", cfg, "-catalog", cat, "-metrics-addr", metrics)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Stop()
			got := waitUpstream(t, s, c.state)
			if c.lastError != "" {
				if !strings.Contains(got.LastError, c.lastError) {
					t.Errorf("last error %q; want it to say %q", got.LastError, c.lastError)
				}
				return
			}
			if got.Tools != 1 || got.LastError != "" {
				t.Fatalf("status: %+v; want its one tool and no error", got)
			}
			client := mcp.NewClient(&mcp.Implementation{Name: "mtls-test", Version: "1"}, nil)
			cs, err := client.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: s.Base + "/mcp"}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "internal/show_certificate", "arguments": map[string]any{}}})
			if err != nil || res.IsError || len(res.Content) == 0 {
				t.Fatalf("call_tool through /mcp = %+v, %v; want the upstream's answer", res, err)
			}
			if text, _ := res.Content[0].(*mcp.TextContent); text == nil || text.Text != "expires in 90 days" {
				t.Errorf("call_tool through /mcp answered %+v; want the upstream's answer", res.Content[0])
			}
		})
	}
}

// TestProviderWithClientCertificate: an embedding provider behind a
// private CA that asks for a client certificate builds the index and
// embeds queries with the config file's embedding.tls; without the
// certificate the service still serves, by keyword, and says why.
func TestProviderWithClientCertificate(t *testing.T) {
	var calls atomic.Int32
	fake, caFile, certFile, keyFile := mutualTLSServer(t, fakeOpenAIHandler(&calls, nil))
	dir := t.TempDir()
	write := func(name string, b []byte) string { return writeIn(t, dir, name, b) }
	env := map[string]string{"TOOLSEARCH_EMBEDDER": "openai", "TOOLSEARCH_EMBEDDING_BASE_URL": fake.URL + "/v1", "OPENAI_API_KEY": "sk-e2e-secret-key"}
	for _, c := range []struct {
		name, tls string
		degraded  bool
	}{
		{"the CA alone", "{ca_file: " + caFile + "}", true},
		{"the CA and a certificate", "{ca_file: " + caFile + ", cert_file: " + certFile + ", key_file: " + keyFile + "}", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := write("config.yaml", []byte("embedding: {tls: "+c.tls+"}\n"))
			base, logs, stop := startServe(t, env, "-config", cfg)
			defer stop()
			_, res := postSearch(t, base, `{"query":"merge pull request","top_k":3,"include_core":false}`)
			if res["degraded"] != c.degraded || res["mode"] != map[bool]string{true: "keyword", false: "hybrid"}[c.degraded] {
				t.Fatalf("search answered mode %v, degraded %v; want degraded %v\n%s", res["mode"], res["degraded"], c.degraded, logs)
			}
			// Refused for want of a certificate, the CA trusted: over TLS 1.3
			// the client learns of the refusal after its handshake, and
			// the error it reads ("certificate required", or the
			// connection closed under the request) depends on timing.
			if l := logs.String(); c.degraded && (!strings.Contains(l, "index build failed") || strings.Contains(l, "x509")) {
				t.Errorf("the log does not say the provider refused the build, or says its certificate did not verify:\n%s", l)
			}
			// Whatever the error read, the log says the provider asked
			// for the certificate the config does not give.
			if asked := strings.Contains(logs.String(), "the server asked for a client certificate, and the tls block gives none"); asked != c.degraded {
				t.Errorf("the log says the provider asked for a missing certificate: %v; want %v\n%s", asked, c.degraded, logs)
			}
			// The certificate's expiry is exported with one (the alert
			// ToolsearchClientCertificateExpiring reads it).
			resp, err := http.Get(metricsBase(t, logs) + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			series := regexp.MustCompile(`(?m)^toolsearch_client_certificate_expiry_timestamp_seconds\{server="embedding"\} (\S+)$`).FindSubmatch(body)
			switch {
			case c.degraded && series != nil:
				t.Errorf("a client certificate's expiry exported without one: %s", series[0])
			case !c.degraded && (series == nil || string(series[1]) != strconv.FormatFloat(float64(notAfter(t, certFile).Unix()), 'g', -1, 64)):
				t.Errorf("the expiry exported is %q; want the certificate's NotAfter, %v", series, notAfter(t, certFile))
			}
		})
	}
	if calls.Load() == 0 {
		t.Error("the provider was never reached")
	}
}

// mutualTLSServer serves h over TLS at 127.0.0.1 until the test ends,
// asking every client for a certificate of the server's own CA, and
// returns the files a client is given (testpki.ClientFiles).
func mutualTLSServer(t *testing.T, h http.Handler) (srv *httptest.Server, caFile, certFile, keyFile string) {
	t.Helper()
	ca := testpki.MustCA(t, "cluster CA")
	srv = httptest.NewUnstartedServer(h)
	var err error
	if srv.TLS, err = ca.MutualTLS("127.0.0.1"); err != nil {
		t.Fatal(err)
	}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes refused without a certificate
	srv.StartTLS()
	t.Cleanup(srv.Close)
	if caFile, certFile, keyFile, err = ca.ClientFiles(t.TempDir(), "toolsearch"); err != nil {
		t.Fatal(err)
	}
	return srv, caFile, certFile, keyFile
}

// writeIn writes b to the file name in dir, and returns its path.
func writeIn(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// notAfter is the expiry of the certificate in the PEM file at path.
func notAfter(t *testing.T, path string) time.Time {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatalf("%s: no PEM", path)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert.NotAfter
}
