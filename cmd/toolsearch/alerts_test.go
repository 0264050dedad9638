package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsearch/toolsearch/pkg/testpki"
)

// Every metric the shipped alert rules use is one a server with
// upstreams exports: a renamed metric cannot leave an alert that never
// fires.
func TestAlertsUseExportedMetrics(t *testing.T) {
	srv := oneToolServer("up", "ping", "Answer pong to check the server is alive.", "pong")
	up := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer up.Close()
	// And one that asks for a client certificate, whose expiry is exported.
	internal, caFile, certFile, keyFile := mutualTLSServer(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(cfg, []byte("upstreams:\n  - {name: up, url: "+up.URL+"}\n"+
		"  - {name: internal, url: "+internal.URL+", tls: {ca_file: "+caFile+", cert_file: "+certFile+", key_file: "+keyFile+"}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Serving HTTPS, whose certificate's expiry is exported.
	ca := testpki.MustCA(t, "cluster CA")
	servingCert, servingKey, err := ca.ServerFiles(t.TempDir(), "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	base, client, logs, stop := startServeTLS(t, ca, servingCert, servingKey, "-config", cfg)
	defer stop()
	search, err := client.Post(base+"/mcp/tool-search", "application/json", strings.NewReader(`{"query":"ping the server"}`))
	if err != nil {
		t.Fatal(err)
	}
	search.Body.Close()
	resp, err := http.Get(metricsBase(t, logs) + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	exported, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	rules, err := os.ReadFile("../../deploy/ci/alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var used []string
	for _, line := range strings.Split(string(rules), "\n") {
		if expr, ok := strings.CutPrefix(strings.TrimSpace(line), "expr:"); ok {
			used = append(used, regexp.MustCompile(`toolsearch_[a-z_]+`).FindAllString(expr, -1)...)
		}
	}
	if len(used) < 5 {
		t.Fatalf("found %d metrics in the alert expressions: %q", len(used), used)
	}
	for _, name := range used {
		if !regexp.MustCompile(`(?m)^` + name + `[{ ]`).Match(exported) {
			t.Errorf("an alert uses %s, which /metrics does not export", name)
		}
	}
	for _, want := range []string{`toolsearch_upstream_up{upstream="up"} 1`, `toolsearch_upstream_tools{upstream="up"} 1`} {
		if !strings.Contains(string(exported), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
