package httpapi

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/config"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/embedding"
	"github.com/toolsearch/toolsearch/pkg/search"
)

// TestStatusIsBoundedAndNamesNothingOpenly: the status page is open, so
// its size may not grow with the catalog, and while keys are configured
// it may not name what some key cannot see.
func TestStatusIsBoundedAndNamesNothingOpenly(t *testing.T) {
	var tools []catalog.Tool
	for i := range 5000 {
		tools = append(tools, catalog.Tool{Name: fmt.Sprintf("secret_tool_%d", i)}) // no description: a warning each
	}
	cat, err := catalog.New([]catalog.Part{{Source: "big.json", Servers: []catalog.Server{{Name: "hidden-server", Tools: tools}}}})
	if err != nil {
		t.Fatal(err)
	}
	other, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	parts := []catalog.Part{{Source: "big.json", Servers: []catalog.Server{{Name: "hidden-server", Tools: tools}}}}
	for _, srv := range other.Servers() {
		var ts []catalog.Tool
		for _, tl := range other.Tools() {
			if tl.Server == srv {
				ts = append(ts, tl)
			}
		}
		parts = append(parts, catalog.Part{Source: "default", Servers: []catalog.Server{{Name: srv, Tools: ts}}})
	}
	if cat, err = catalog.New(parts); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		keys      bool
		token     string
		maxBytes  int
		wantNames bool
		warnings  int
	}{
		{"no keys, anonymous", false, "", 16 << 10, true, search.StatusListLimit},
		{"keys, anonymous", true, "", 4 << 10, false, 0},
		{"keys, a search key", true, "key-gh", 4 << 10, false, 0},
		{"keys, admin", true, "admin-token", 512 << 10, true, search.AdminStatusListLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setup := &search.Setup{Catalog: cat, Core: []string{"secret_tool_1"},
				Templates: map[string]config.Template{"secret-template": {Description: "x", Tools: []string{"secret_tool_2"}}}}
			if tt.keys {
				setup.Keys = []access.Key{{Name: "gh", Hash: sha256.Sum256([]byte("key-gh")), Visibility: access.Visibility{Servers: []string{"github"}}}}
			}
			reg := prometheus.NewRegistry()
			svc := search.New(search.Config{Embedder: embedding.NewLocal(64), Registerer: reg})
			if _, err := svc.Build(context.Background(), setup); err != nil {
				t.Fatal(err)
			}
			h := NewServer(svc, Options{Registerer: reg, AdminToken: "admin-token"})
			r := httptest.NewRequest(http.MethodGet, "/mcp/tool-search/status", nil)
			if tt.token != "" {
				r.Header.Set("Authorization", "Bearer "+tt.token)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			body := rec.Body.String()
			if rec.Code != 200 || len(body) > tt.maxBytes {
				t.Fatalf("status: %d, %d bytes, want 200 and at most %d", rec.Code, len(body), tt.maxBytes)
			}
			for _, name := range []string{"secret_tool", "hidden-server", "secret-template", "big.json"} {
				if strings.Contains(body, name) != tt.wantNames {
					t.Errorf("status names %q: %v, want %v", name, !tt.wantNames, tt.wantNames)
				}
			}
			if !tt.wantNames {
				// The summary: nothing that moves with the catalog.
				var sum map[string]any
				if err := json.Unmarshal(rec.Body.Bytes(), &sum); err != nil {
					t.Fatal(err)
				}
				for _, k := range []string{"size", "catalog", "index_version", "built_at", "memory_bytes", "template_count", "core_count", "upstream_count", "last_error_at", "pending_changes"} {
					if _, ok := sum[k]; ok {
						t.Errorf("the summary has %q: %s", k, body)
					}
				}
				if sum["detail"] != "summary" || sum["ready"] != true {
					t.Errorf("summary: %s", body)
				}
				return
			}
			var st statusBody
			if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
				t.Fatal(err)
			}
			if st.Catalog.WarningCount < 5000 || len(st.Catalog.Warnings) != tt.warnings || st.CoreCount != 1 || st.TemplateCount != 1 || st.Size != cat.Len() {
				t.Errorf("counts: warnings %d (listed %d, want %d), core %d, templates %d, size %d",
					st.Catalog.WarningCount, len(st.Catalog.Warnings), tt.warnings, st.CoreCount, st.TemplateCount, st.Size)
			}
		})
	}
}
