package httpapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/pkg/learn"
	"github.com/toolsearch/toolsearch/pkg/search"
)

// doAs sends body with token as the bearer (none when "").
func doAs(h http.Handler, token, method, path, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

// searchFor searches as token and returns the answer's search id and the
// last tool it returned.
func searchFor(t *testing.T, h http.Handler, token, query string) (id, last string) {
	t.Helper()
	rec := doAs(h, token, "POST", "/mcp/tool-search", `{"query":"`+query+`","top_k":5}`)
	var res search.Response
	if err := json.Unmarshal(rec.Body.Bytes(), &res); err != nil || rec.Code != 200 || len(res.Tools) == 0 {
		t.Fatalf("search: %d %s", rec.Code, rec.Body)
	}
	tl := res.Tools[len(res.Tools)-1]
	return res.SearchID, tl.Server + "/" + tl.Name
}

// TestLearningHTTP: the feedback, learned and reset routes answer every
// bad request with its JSON error, a search id is its caller's alone, and
// learning off says so.
func TestLearningHTTP(t *testing.T) {
	store, err := learn.Open(filepath.Join(t.TempDir(), "learned.db"), learn.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	h, _ := newTestServerWith(t, serverOpts{build: true, keys: true, admin: "adm1n", learning: &search.Learning{Store: store}})
	off, _ := newTestServerWith(t, serverOpts{build: true})

	id, tool := searchFor(t, h, "key-gh", "merge a pull request")
	id2, _ := searchFor(t, h, "key-gh", "merge a pull request")
	if id == "" {
		t.Fatal("no search_id while learning is on")
	}
	if rec := doAs(off, "", "POST", "/mcp/tool-search", `{"query":"merge a pull request"}`); strings.Contains(rec.Body.String(), "search_id") {
		t.Errorf("a search id while learning is off: %s", rec.Body)
	}
	tests := []struct {
		name                      string
		h                         http.Handler
		token, method, path, body string
		status                    int
		code, contains            string
	}{
		{"no key", h, "", "POST", "/mcp/tool-search/feedback", `{"id":"` + id + `","used":["` + tool + `"]}`, 401, "unauthorized", ""},
		{"empty body", h, "key-gh", "POST", "/mcp/tool-search/feedback", `{}`, 400, "invalid_request", ""},
		{"unknown key", h, "key-gh", "POST", "/mcp/tool-search/feedback", `{"id":"` + id + `","used":["` + tool + `"],"tools":[]}`, 400, "", "tools"},
		{"no tools", h, "key-gh", "POST", "/mcp/tool-search/feedback", `{"id":"` + id + `","used":[]}`, 400, "invalid_request", ""},
		{"long id", h, "key-gh", "POST", "/mcp/tool-search/feedback", `{"id":"` + strings.Repeat("a", 100) + `","used":["x"]}`, 400, "invalid_request", ""},
		{"too many tools", h, "key-gh", "POST", "/mcp/tool-search/feedback", `{"id":"` + id + `","used":[` + strings.Repeat(`"x",`, 60) + `"x"]}`, 400, "invalid_request", ""},
		{"another key's id", h, "key-all", "POST", "/mcp/tool-search/feedback", `{"id":"` + id + `","used":["` + tool + `"]}`, 404, "unknown_search", ""},
		{"never issued", h, "key-gh", "POST", "/mcp/tool-search/feedback", `{"id":"feedfacefeedfacefeedfacefeedface","used":["x"]}`, 404, "unknown_search", ""},
		{"used", h, "key-gh", "POST", "/mcp/tool-search/feedback", `{"id":"` + id + `","used":["` + tool + `","slack/post_message"]}`, 200, "", `"learned":1,"ignored":1,"ignored_tools":["slack/post_message"]}`},
		{"by search_id, as the answer names it", h, "key-gh", "POST", "/mcp/tool-search/feedback", `{"search_id":"` + id2 + `","used":["` + tool + `"]}`, 200, "", `"learned":1,"ignored":0`},
		{"search_id and id", h, "key-gh", "POST", "/mcp/tool-search/feedback", `{"search_id":"` + id2 + `","id":"` + id2 + `","used":["` + tool + `"]}`, 400, "conflicting_fields", "not both"},
		{"reported twice", h, "key-gh", "POST", "/mcp/tool-search/feedback", `{"id":"` + id + `","used":["` + tool + `"]}`, 404, "unknown_search", ""},
		{"learned, all", h, "key-gh", "GET", "/mcp/tool-search/learned", ``, 200, "", `{"tools":[]}`},
		{"learned, a tool", h, "key-gh", "GET", "/mcp/tool-search/learned?tool=" + tool, ``, 200, "", `"terms":[]`},
		// A tool the key cannot see is unknown, as one that does not exist.
		{"learned, hidden", h, "key-gh", "GET", "/mcp/tool-search/learned?tool=slack/post_message", ``, 404, "unknown_tool", ""},
		{"learned, missing", h, "key-gh", "GET", "/mcp/tool-search/learned?tool=slack/no_such_tool", ``, 404, "unknown_tool", ""},
		{"learned, bad parameter", h, "key-gh", "GET", "/mcp/tool-search/learned?tools=x", ``, 400, "unknown_parameter", ""},
		{"reset, no admin", h, "key-all", "DELETE", "/mcp/tool-search/learned", ``, 401, "unauthorized", ""},
		{"reset", h, "adm1n", "DELETE", "/mcp/tool-search/learned?tool=" + tool, ``, 200, "", `"reset":"` + tool + `"`},
		// An empty or repeated ?tool= would otherwise have meant every tool,
		// or the first: forgetting everything for an unset variable.
		{"learned, empty tool", h, "key-gh", "GET", "/mcp/tool-search/learned?tool=", ``, 400, "empty_parameter", "is empty"},
		{"learned, two tools", h, "key-gh", "GET", "/mcp/tool-search/learned?tool=" + tool + "&tool=x", ``, 400, "repeated_parameter", "given 2 times"},
		{"reset, empty tool", h, "adm1n", "DELETE", "/mcp/tool-search/learned?tool=", ``, 400, "empty_parameter", ""},
		{"reset, two tools", h, "adm1n", "DELETE", "/mcp/tool-search/learned?tool=" + tool + "&tool=" + tool, ``, 400, "repeated_parameter", ""},
		{"reset, a bare name", h, "adm1n", "DELETE", "/mcp/tool-search/learned?tool=" + tool[strings.IndexByte(tool, '/')+1:], ``, 200, "", `"reset":"` + tool + `"`},
		{"reset, a typo", h, "adm1n", "DELETE", "/mcp/tool-search/learned?tool=" + tool + "x", ``, 404, "unknown_tool", "did you mean"},
		{"reset all", h, "adm1n", "DELETE", "/mcp/tool-search/learned", ``, 200, "", `"reset":"*"`},
		{"off: feedback", off, "", "POST", "/mcp/tool-search/feedback", `{"id":"` + id + `","used":["x"]}`, 404, "learning_off", ""},
		{"off: learned", off, "", "GET", "/mcp/tool-search/learned", ``, 404, "learning_off", ""},
		{"off: reset", off, "", "DELETE", "/mcp/tool-search/learned", ``, 405, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := doAs(tt.h, tt.token, tt.method, tt.path, tt.body)
			body := rec.Body.String()
			if rec.Code != tt.status || (tt.code != "" && !strings.Contains(body, `"code":"`+tt.code+`"`)) || !strings.Contains(body, tt.contains) {
				t.Errorf("%d %.300s, want %d %s %s", rec.Code, body, tt.status, tt.code, tt.contains)
			}
			if rec.Code >= 400 && !strings.Contains(body, `"error":{"code":`) {
				t.Errorf("not a JSON error: %s", body)
			}
		})
	}
	if st := doAs(h, "adm1n", "GET", "/mcp/tool-search/status", ""); !strings.Contains(st.Body.String(), `"learning":{"enabled":true,"store":"file"`) {
		t.Errorf("status with the admin token: %.500s", st.Body)
	}
}
