package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/pkg/inspect"
)

func get(h http.Handler, path, token string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodGet, path, nil)
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

func TestConsoleServed(t *testing.T) {
	h, _ := newTestServerWith(t, serverOpts{build: true, keys: true})
	tests := []struct {
		path, wantLocation, wantType string
		status                       int
	}{
		{"/", "/console/", "", http.StatusFound},
		{"/console", "/console/", "", http.StatusMovedPermanently},
		{"/console/", "", "text/html", http.StatusOK},
		{"/console/console.js", "", "text/javascript", http.StatusOK},
		{"/console/console.css", "", "text/css", http.StatusOK},
		{"/console/nope.js", "", "", http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			rec := get(h, tt.path, "")
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d", rec.Code, tt.status)
			}
			if loc := rec.Header().Get("Location"); loc != tt.wantLocation {
				t.Errorf("Location %q, want %q", loc, tt.wantLocation)
			}
			if !strings.HasPrefix(rec.Header().Get("Content-Type"), tt.wantType) {
				t.Errorf("Content-Type %q, want %s", rec.Header().Get("Content-Type"), tt.wantType)
			}
			if rec.Code == http.StatusOK && !strings.Contains(rec.Header().Get("Content-Security-Policy"), "script-src 'self'") {
				t.Errorf("no strict CSP: %q", rec.Header().Get("Content-Security-Policy"))
			}
		})
	}
}

// The console's data endpoints run on the key's view: a key limited to
// github learns nothing of other servers, by name, count or finding.
func TestCatalogAndServersFollowVisibility(t *testing.T) {
	h, _ := newTestServerWith(t, serverOpts{build: true, keys: true})
	hiddenNames := []string{"slack", "post_message", "postgres", "jira", "platform", "get_platform_info"}
	for _, path := range []string{"/mcp/tool-search/catalog", "/mcp/tool-search/servers", "/mcp/tool-search/catalog?server=github"} {
		rec := get(h, path, "key-gh")
		if rec.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
		}
		for _, name := range hiddenNames {
			if strings.Contains(rec.Body.String(), name) {
				t.Errorf("%s shows %q to a github-only key", path, name)
			}
		}
	}
	// A hidden server and a missing one answer alike.
	hidden, missing := get(h, "/mcp/tool-search/catalog?server=slack", "key-gh"), get(h, "/mcp/tool-search/catalog?server=zzzzz", "key-gh")
	if hidden.Code != http.StatusNotFound || missing.Code != http.StatusNotFound ||
		strings.Replace(hidden.Body.String(), "slack", "zzzzz", 1)[:60] != missing.Body.String()[:60] {
		t.Errorf("hidden server: %d %s\nmissing server: %d %s", hidden.Code, hidden.Body, missing.Code, missing.Body)
	}

	var all, gh struct {
		Tools int `json:"tools"`
	}
	for token, into := range map[string]any{"key-all": &all, "key-gh": &gh} {
		if err := json.Unmarshal(get(h, "/mcp/tool-search/servers", token).Body.Bytes(), into); err != nil {
			t.Fatal(err)
		}
	}
	if gh.Tools == 0 || gh.Tools >= all.Tools {
		t.Errorf("servers counts: github-only key %d tools, full key %d", gh.Tools, all.Tools)
	}
}

func TestCatalogReport(t *testing.T) {
	h, _ := newTestServerWith(t, serverOpts{build: true})
	tests := []struct {
		name, path string
		status     int
		code       string
	}{
		{"whole catalog", "/mcp/tool-search/catalog", http.StatusOK, ""},
		{"one server", "/mcp/tool-search/catalog?server=github", http.StatusOK, ""},
		{"unknown server", "/mcp/tool-search/catalog?server=nope", http.StatusNotFound, "unknown_server"},
		{"unknown parameter", "/mcp/tool-search/catalog?audit=false", http.StatusBadRequest, "unknown_parameter"},
		{"too many servers", "/mcp/tool-search/catalog?" + strings.Repeat("server=github&", 65), http.StatusBadRequest, "too_many_servers"},
		{"servers takes no parameters", "/mcp/tool-search/servers?x=1", http.StatusBadRequest, "unknown_parameter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := get(h, tt.path, "")
			if rec.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.status, rec.Body)
			}
			if tt.code != "" {
				var e errorResponse
				if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error.Code != tt.code {
					t.Errorf("error %s, want code %s", rec.Body, tt.code)
				}
				return
			}
			var rep inspect.Report
			if err := json.Unmarshal(rec.Body.Bytes(), &rep); err != nil {
				t.Fatal(err)
			}
			if !rep.Audit.Ran || len(rep.Tools) == 0 || len(rep.Checks.Ran) != 5 {
				t.Errorf("audit %+v, %d tools, checks %+v", rep.Audit, len(rep.Tools), rep.Checks)
			}
			findings := 0
			for _, tool := range rep.Tools {
				findings += len(tool.Findings)
				if strings.Contains(tt.path, "server=github") && tool.Server != "github" {
					t.Errorf("server=github lists %s/%s", tool.Server, tool.Name)
				}
			}
			if findings == 0 {
				t.Error("no lint finding on the default catalog, which has undescribed parameters")
			}
		})
	}
}
