package search

import (
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/embedding"
)

// TestUnknownToolSuggestions: a tool name nearly typed, in select: or to
// Lookup (get_tool_schema, call_tool), gets the tool it nearly names.
func TestUnknownToolSuggestions(t *testing.T) {
	svc := newService(t, embedding.NewLocal(64))
	mustBuild(t, svc)
	res := mustSearch(t, svc, Request{Query: "select:create_isue,Post_Message,github/creat_issue,zzzzzz,abc"})
	want := map[string]string{"create_isue": "create_issue", "Post_Message": "post_message", "github/creat_issue": "create_issue"}
	if res.Diagnostic == nil || len(res.Diagnostic.DidYouMean) != len(want) {
		t.Fatalf("select: diagnostic %+v, want suggestions %v", res.Diagnostic, want)
	}
	for k, v := range want {
		if res.Diagnostic.DidYouMean[k] != v {
			t.Errorf("select: %s suggests %q, want %q", k, res.Diagnostic.DidYouMean[k], v)
		}
	}
	for _, tc := range []struct{ server, name, hint string }{
		{"", "create_isue", `(did you mean "create_issue"?)`},
		{"github", "create_isue", `(did you mean "create_issue"?)`},
		{"slack", "create_isue", ""}, // slack has no such tool
		{"", "zzzzzz", ""},
	} {
		_, err := svc.Lookup(access.Caller{}, tc.server, tc.name)
		if err == nil || strings.Contains(err.Error(), "did you mean") != (tc.hint != "") || !strings.Contains(err.Error(), tc.hint) {
			t.Errorf("Lookup(%q, %q) = %v, want an error with %q", tc.server, tc.name, err, tc.hint)
		}
	}
}
