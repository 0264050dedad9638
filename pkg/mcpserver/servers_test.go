package mcpserver

import (
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/httpapi"
	"github.com/toolsearch/toolsearch/pkg/search"
)

// TestListServersPages: list_servers answers a page at a time, 50 servers
// unless asked otherwise, and its cursors walk every server the key sees
// once, in catalog order; a cursor is good only for the listing that
// issued it.
func TestListServersPages(t *testing.T) {
	svc, url := generatedAPI(t, 4000, nil, httpapi.Options{})
	r := &rig{url: url}
	cs := r.connect(t, "")

	want, err := svc.Servers(access.Caller{}, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(want) <= 2*defaultServerPage {
		t.Fatalf("%d servers: too few to page", len(want))
	}
	tests := []struct {
		name  string
		args  map[string]any
		query string
		page  int
	}{
		{"default page", map[string]any{}, "", defaultServerPage},
		{"a limit", map[string]any{"limit": 7}, "", 7},
		{"a query", map[string]any{"query": "ACME", "limit": 5}, "acme", 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			all, err := svc.Servers(access.Caller{}, tt.query)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			args := tt.args
			for pages := 0; ; pages++ {
				if pages > len(all) {
					t.Fatal("the cursors never end")
				}
				out := structured[listServersOut](t, call(t, cs, "list_servers", args))
				if out.Total != len(all) || len(out.Servers) > tt.page || out.NextCursor != "" && len(out.Servers) != tt.page {
					t.Fatalf("page %d: %d servers of total %d, want pages of %d of %d", pages, len(out.Servers), out.Total, tt.page, len(all))
				}
				for _, s := range out.Servers {
					got = append(got, s.Name)
				}
				if out.NextCursor == "" {
					break
				}
				args = map[string]any{"cursor": out.NextCursor}
				for k, v := range tt.args {
					args[k] = v
				}
			}
			var names []string
			for _, s := range all {
				names = append(names, s.Name)
			}
			if !slices.Equal(got, names) {
				t.Errorf("pages list %d servers, want the %d of the listing in order", len(got), len(names))
			}
		})
	}

	first := structured[listServersOut](t, call(t, cs, "list_servers", map[string]any{"limit": 3}))
	for name, args := range map[string]map[string]any{
		"another query's cursor": {"query": "acme", "cursor": first.NextCursor},
		"a made-up cursor":       {"cursor": "AAAA"},
	} {
		if res := call(t, cs, "list_servers", args); !res.IsError || !strings.Contains(text(res), "cursor") {
			t.Errorf("%s: %s, want an isError about the cursor", name, text(res))
		}
	}
	if res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "list_servers", Arguments: map[string]any{"limit": search.MaxServerPage + 1}}); err == nil && !res.IsError {
		t.Errorf("a limit over %d was answered: %.200s", search.MaxServerPage, text(res))
	}
}
