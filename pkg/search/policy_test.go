package search

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/analysis"
	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/embedding"
	"github.com/toolsearch/toolsearch/pkg/tooldef"
)

func TestCore(t *testing.T) {
	svc := newService(t, nil)
	mustBuild(t, svc)
	res := mustSearch(t, svc, Request{Query: "merge pull request", TopK: ptr(3)})
	got := ids(res.Tools)
	if len(got) != 5 || got[3] != "platform/get_platform_info" || got[4] != "platform/get_usage" {
		t.Errorf("tools = %v, want 3 retrieved then the 2 core tools", got)
	}
	for _, h := range res.Tools[3:] {
		if h.Source != "core" || h.Score != nil {
			t.Errorf("core hit %+v: want source core, no score", h)
		}
	}
	// A core tool that was also retrieved appears once, where it ranked.
	res = mustSearch(t, svc, Request{Query: "remaining credits and usage", TopK: ptr(2)})
	got = ids(res.Tools)
	if got[0] != "platform/get_usage" || strings.Count(strings.Join(got, " "), "get_usage") != 1 {
		t.Errorf("tools = %v, want get_usage retrieved first and not repeated", got)
	}
	if res := mustSearch(t, svc, Request{Query: "merge pull request", TopK: ptr(3), IncludeCore: ptr(false)}); len(res.Tools) != 3 {
		t.Errorf("include_core false: %v", ids(res.Tools))
	}
}

func TestTemplate(t *testing.T) {
	emb := &scriptedEmbedder{local: embedding.NewLocal(64)}
	svc := newService(t, emb)
	mustBuild(t, svc)
	calls := emb.calls.Load()
	res := mustSearch(t, svc, Request{Template: "release"})
	want := []string{"github/list_workflow_runs", "github/merge_pull_request", "github/create_release", "slack/post_message", "platform/get_platform_info", "platform/get_usage"}
	if diff := cmp.Diff(want, ids(res.Tools)); diff != "" {
		t.Errorf("template tools mismatch (-want +got):\n%s", diff)
	}
	if res.Mode != "template" || res.Template != "release" || res.Tools[0].Source != "template" || res.Tools[4].Source != "core" {
		t.Errorf("mode %q template %q sources %q %q", res.Mode, res.Template, res.Tools[0].Source, res.Tools[4].Source)
	}
	if emb.calls.Load() != calls {
		t.Error("a template request called the embedder")
	}
	_, err := svc.Search(t.Context(), Request{Template: "nope"}, access.Caller{})
	var ute *UnknownTemplateError
	if !errors.As(err, &ute) || !slices.Equal(ute.Known, []string{"release", "triage"}) {
		t.Errorf("unknown template: %v", err)
	}
}

// TestUnknownTemplateMessage: the error names the templates there are,
// and says there are none rather than end on an empty list.
func TestUnknownTemplateMessage(t *testing.T) {
	for _, tt := range []struct {
		known []string
		want  string
	}{
		{[]string{"release", "triage"}, `unknown template "nope"; known templates: release, triage`},
		{nil, `unknown template "nope"; there are no templates`},
	} {
		if got := (&UnknownTemplateError{Name: "nope", Known: tt.known}).Error(); got != tt.want {
			t.Errorf("known %v: %q, want %q", tt.known, got, tt.want)
		}
	}
}

func TestOperators(t *testing.T) {
	svc := newService(t, nil)
	mustBuild(t, svc)
	tests := []struct {
		name  string
		req   Request
		check func(t *testing.T, res *Response)
	}{
		{"select", Request{Query: "select:jira/get_ticket, create_release ,nope"}, func(t *testing.T, res *Response) {
			if diff := cmp.Diff([]string{"jira/get_ticket", "github/create_release"}, ids(res.Tools)); diff != "" || res.Mode != "select" {
				t.Errorf("select mismatch (mode %q):\n%s", res.Mode, diff)
			}
			if res.Diagnostic == nil || !slices.Equal(res.Diagnostic.Unknown, []string{"nope"}) {
				t.Errorf("diagnostic = %+v, want unknown [nope]", res.Diagnostic)
			}
		}},
		{"select is case-insensitive", Request{Query: "SELECT:get_ticket"}, func(t *testing.T, res *Response) {
			if len(res.Tools) != 1 {
				t.Errorf("tools = %v", ids(res.Tools))
			}
		}},
		{"required term", Request{Query: "+jira comment", IncludeCore: ptr(false)}, func(t *testing.T, res *Response) {
			if len(res.Tools) == 0 {
				t.Fatal("no tools")
			}
			for _, h := range res.Tools {
				if !strings.Contains(strings.ToLower(h.Server+"/"+h.Name+" "+h.Description), "jira") {
					t.Errorf("%s/%s lacks the required term", h.Server, h.Name)
				}
			}
		}},
		{"servers", Request{Query: "comment", Servers: []string{"github"}, IncludeCore: ptr(false)}, func(t *testing.T, res *Response) {
			for _, h := range res.Tools {
				if h.Server != "github" {
					t.Errorf("servers filter let %s through", h.Server)
				}
			}
		}},
		{"unknown server", Request{Query: "comment", Servers: []string{"gitlab"}, IncludeCore: ptr(false)}, func(t *testing.T, res *Response) {
			if len(res.Tools) != 0 || res.Diagnostic == nil || res.Diagnostic.Unknown[0] != "server gitlab" {
				t.Errorf("tools %v diagnostic %+v", ids(res.Tools), res.Diagnostic)
			}
		}},
		{"servers known and not, one asked twice", Request{Query: "comment", Servers: []string{"gitlab", "github", "gitlab"}, IncludeCore: ptr(false)}, func(t *testing.T, res *Response) {
			if len(res.Tools) == 0 || res.Diagnostic == nil || !slices.Equal(res.Diagnostic.Unknown, []string{"server gitlab"}) {
				t.Errorf("tools %v diagnostic %+v", ids(res.Tools), res.Diagnostic)
			}
			for _, h := range res.Tools {
				if h.Server != "github" {
					t.Errorf("servers filter let %s through", h.Server)
				}
			}
		}},
		{"servers and server_match both hold", Request{Query: "comment", Servers: []string{"github", "slack"}, ServerMatch: "HUB", IncludeCore: ptr(false)}, func(t *testing.T, res *Response) {
			if len(res.Tools) == 0 || res.Diagnostic != nil {
				t.Errorf("tools %v diagnostic %+v", ids(res.Tools), res.Diagnostic)
			}
			for _, h := range res.Tools {
				if h.Server != "github" {
					t.Errorf("servers and server_match let %s through", h.Server)
				}
			}
		}},
		{"a server named in another case, one a letter off, one far off", Request{Query: "comment", Servers: []string{"GitHub", "gihub", "gitlab"}, IncludeCore: ptr(false)}, func(t *testing.T, res *Response) {
			want := map[string]string{"server GitHub": "github", "server gihub": "github"}
			if len(res.Tools) != 0 || res.Diagnostic == nil || !maps.Equal(res.Diagnostic.DidYouMean, want) || len(res.Diagnostic.Unknown) != 3 {
				t.Errorf("tools %v diagnostic %+v, want did_you_mean %v", ids(res.Tools), res.Diagnostic, want)
			}
		}},
		{"a conversation's operators are words", Request{Messages: []Message{{Role: "user", Content: "Select: the tool that creates a +jira ticket"}}, IncludeCore: ptr(false)}, func(t *testing.T, res *Response) {
			if res.Mode == ModeSelect || len(res.Tools) == 0 || res.Tools[0].Server+"/"+res.Tools[0].Name != "jira/create_ticket" || len(res.Required) != 0 {
				t.Errorf("mode %s tools %v required %v, want a ranking led by jira/create_ticket", res.Mode, ids(res.Tools), res.Required)
			}
		}},
		{"server_match matching no server", Request{Query: "comment", ServerMatch: "gitlab", IncludeCore: ptr(false)}, func(t *testing.T, res *Response) {
			if len(res.Tools) != 0 || res.Diagnostic == nil || !slices.Equal(res.Diagnostic.Unknown, []string{"server_match gitlab"}) {
				t.Errorf("tools %v diagnostic %+v", ids(res.Tools), res.Diagnostic)
			}
		}},
		{"server_match matching none of servers", Request{Query: "comment", Servers: []string{"github"}, ServerMatch: "slack", IncludeCore: ptr(false)}, func(t *testing.T, res *Response) {
			if len(res.Tools) != 0 || res.Diagnostic == nil || !slices.Equal(res.Diagnostic.Unknown, []string{"server_match slack"}) {
				t.Errorf("tools %v diagnostic %+v", ids(res.Tools), res.Diagnostic)
			}
		}},
		{"server_match with servers none of which exists", Request{Query: "comment", Servers: []string{"gitlab"}, ServerMatch: "git", IncludeCore: ptr(false)}, func(t *testing.T, res *Response) {
			if res.Diagnostic == nil || !slices.Equal(res.Diagnostic.Unknown, []string{"server gitlab"}) {
				t.Errorf("diagnostic %+v, want the server alone unknown", res.Diagnostic)
			}
		}},
		{"server_match", Request{Query: "list", ServerMatch: "SQL", IncludeCore: ptr(false)}, func(t *testing.T, res *Response) {
			for _, h := range res.Tools {
				if h.Server != "postgres" {
					t.Errorf("server_match let %s through", h.Server)
				}
			}
		}},
		{"min_score", Request{Query: "merge pull request", Mode: "semantic", MinScore: ptr(0.2), IncludeCore: ptr(false)}, func(t *testing.T, res *Response) {
			for _, h := range res.Tools {
				if *h.Score < 0.2 {
					t.Errorf("%s scored %v under min_score", h.Name, *h.Score)
				}
			}
			if len(res.Tools) == 0 || len(res.Tools) == 10 {
				t.Errorf("min_score kept %d tools; want some dropped", len(res.Tools))
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.check(t, mustSearch(t, svc, tt.req)) })
	}
}

func TestList(t *testing.T) {
	svc := newService(t, nil)
	mustBuild(t, svc)
	req := Request{Operation: "list", Servers: []string{"github", "slack"}, TopK: ptr(7)}
	var all []string
	for page := 0; ; page++ {
		res := mustSearch(t, svc, req)
		if *res.Total != 26 || *res.Returned != len(res.Tools) || res.Mode != "list" {
			t.Fatalf("page %d: total %d returned %d mode %q", page, *res.Total, *res.Returned, res.Mode)
		}
		all = append(all, ids(res.Tools)...)
		if res.NextCursor == "" {
			break
		}
		req.Cursor = res.NextCursor
	}
	if len(all) != 26 {
		t.Fatalf("listed %d tools, want 26", len(all))
	}
	names := make([]string, len(all))
	for i, id := range all {
		names[i] = id[strings.Index(id, "/")+1:]
	}
	if !slices.IsSorted(names) {
		t.Errorf("list is not sorted by name: %v", names)
	}
	// A cursor is bound to its listing: tampered, or reused with other filters, it is rejected.
	res := mustSearch(t, svc, Request{Operation: "list", ServerMatch: "git", TopK: ptr(2)})
	for name, req := range map[string]Request{
		"tampered":      {Operation: "list", ServerMatch: "git", Cursor: flip(res.NextCursor, 7)},
		"truncated":     {Operation: "list", ServerMatch: "git", Cursor: res.NextCursor[:20]},
		"garbage":       {Operation: "list", ServerMatch: "git", Cursor: "not-a-cursor"},
		"other filters": {Operation: "list", ServerMatch: "slack", Cursor: res.NextCursor},
	} {
		_, err := svc.Search(t.Context(), req, access.Caller{})
		var re *RequestError
		if !errors.As(err, &re) || re.Code != "invalid_cursor" {
			t.Errorf("%s cursor: error = %v, want invalid_cursor", name, err)
		}
	}
}

func TestRegex(t *testing.T) {
	svc := newService(t, nil)
	mustBuild(t, svc)
	tests := []struct {
		name string
		req  Request
		want []string
	}{
		{"name prefix", Request{Regex: "^list_", Servers: []string{"github", "slack"}}, []string{"slack/list_channels", "github/list_commits", "github/list_issues", "github/list_workflow_runs"}},
		{"names only by default", Request{Regex: "pull request"}, nil},
		{"descriptions on request", Request{Regex: "(?i)pull request", RegexDescription: true, Servers: []string{"github"}, TopK: ptr(3)},
			[]string{"github/add_issue_comment", "github/create_pull_request", "github/create_pull_request_review"}},
		{"with a safety filter", Request{Regex: "_issue", ReadOnly: true}, []string{"github/list_issues", "github/search_issues"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := mustSearch(t, svc, tt.req)
			if got := ids(res.Tools); !slices.Equal(got, tt.want) || res.Mode != ModeRegex {
				t.Errorf("tools %v mode %s, want %v", got, res.Mode, tt.want)
			}
		})
	}
	// Paged like a list, and a cursor is bound to its pattern.
	req := Request{Regex: "_", TopK: ptr(5)}
	first := mustSearch(t, svc, req)
	seen := len(first.Tools)
	for req.Cursor = first.NextCursor; req.Cursor != ""; {
		res := mustSearch(t, svc, req)
		seen += len(res.Tools)
		req.Cursor = res.NextCursor
	}
	if seen != *first.Total || seen < 10 {
		t.Errorf("paged through %d of %d tools", seen, *first.Total)
	}
	_, err := svc.Search(t.Context(), Request{Regex: "^get_", Cursor: first.NextCursor}, access.Caller{})
	var re *RequestError
	if !errors.As(err, &re) || re.Code != "invalid_cursor" {
		t.Errorf("another pattern's cursor: %v, want invalid_cursor", err)
	}
}

// TestSafetyFilters: read_only and exclude_destructive act on declared and
// inferred hints alike, on every tool of an answer, and schemas say which
// hints were inferred.
func TestSafetyFilters(t *testing.T) {
	tools := []catalog.Tool{
		{Server: "s", Name: "read_notes", Description: "Read the notes."},
		{Server: "s", Name: "delete_notes", Description: "Delete all notes."},
		{Server: "s", Name: "add_note", Description: "Add a note."},
		{Server: "s", Name: "tidy_notes", Description: "Tidy the notes.", Schemas: catalog.MakeSchemas(nil, nil, json.RawMessage(`{"readOnlyHint":true}`))},
		{Server: "s", Name: "list_notes", Description: "List the notes.", Schemas: catalog.MakeSchemas(nil, nil, json.RawMessage(`{"readOnlyHint":false,"destructiveHint":true}`))},
	}
	svc := hiddenRig(t, tools, []string{"s/delete_notes"}, nil, nil, nil)
	tests := []struct {
		name string
		req  Request
		want []string
	}{
		{"read_only", Request{Query: "notes", ReadOnly: true}, []string{"s/read_notes", "s/tidy_notes"}},
		{"exclude_destructive", Request{Query: "notes", ExcludeDestructive: true}, []string{"s/add_note", "s/read_notes", "s/tidy_notes"}},
		{"core too", Request{Template: "", Query: "select:delete_notes,read_notes", ReadOnly: true}, []string{"s/read_notes"}},
		{"list", Request{Operation: "list", Servers: []string{"s"}, ExcludeDestructive: true}, []string{"s/add_note", "s/read_notes", "s/tidy_notes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := mustSearch(t, svc, tt.req)
			got := slices.Sorted(slices.Values(ids(res.Tools)))
			if !slices.Equal(got, tt.want) {
				t.Errorf("tools %v, want %v", got, tt.want)
			}
		})
	}
	res := mustSearch(t, svc, Request{Query: "select:delete_notes,tidy_notes", IncludeSchema: true})
	del, tidy := res.Tools[0], res.Tools[1]
	if string(del.Annotations) != `{"destructiveHint":true,"idempotentHint":true,"readOnlyHint":false}` ||
		!slices.Equal(del.AnnotationsInferred, []string{"readOnlyHint", "destructiveHint", "idempotentHint"}) {
		t.Errorf("delete_notes: annotations %s inferred %v", del.Annotations, del.AnnotationsInferred)
	}
	if string(tidy.Annotations) != `{"readOnlyHint":true}` || tidy.AnnotationsInferred != nil {
		t.Errorf("tidy_notes: annotations %s inferred %v, want the declared hint alone", tidy.Annotations, tidy.AnnotationsInferred)
	}
}

// TestNoMatch: an answer whose best tool is under the mode's threshold
// says so, and still lists its candidates; a confident one does not.
func TestNoMatch(t *testing.T) {
	svc := newService(t, nil)
	mustBuild(t, svc)
	for _, tt := range []struct {
		query   string
		noMatch bool
	}{
		{"play some jazz music", true},
		{"merge an approved pull request", false},
	} {
		res := mustSearch(t, svc, Request{Query: tt.query, IncludeCore: ptr(false)})
		if res.NoMatch != tt.noMatch || res.NoMatch == *res.Confident || len(res.Tools) == 0 {
			t.Errorf("%q: no_match %v confident %v with %d tools, want no_match %v and candidates listed", tt.query, res.NoMatch, *res.Confident, len(res.Tools), tt.noMatch)
		}
	}
}

func TestRequestValidate(t *testing.T) {
	tests := []struct {
		req  Request
		code string
	}{
		{Request{}, "empty_query"},
		{Request{Query: "x", TopK: ptr(0)}, "top_k_out_of_range"},
		{Request{Query: "x", Mode: "magic"}, "invalid_mode"},
		{Request{Query: "x", Operation: "delete"}, "invalid_operation"},
		{Request{Query: "x", Format: "cohere"}, "invalid_format"},
		{Request{Operation: "list"}, "missing_scope"},
		{Request{Query: "x", Cursor: "abc"}, "conflicting_fields"},
		{Request{Template: "t", Operation: "list", Servers: []string{"a"}}, "conflicting_fields"},
		{Request{Query: "x", Servers: []string{" "}}, "invalid_servers"},
		// A router's empty list would read as none, narrowing nothing.
		{Request{Query: "x", Visibility: access.Visibility{Servers: []string{}}}, "empty_visibility"},
		{Request{Query: "x", Visibility: access.Visibility{Tools: []string{}}}, "empty_visibility"},
		{Request{Query: strings.Repeat("x", MaxInputBytes+1)}, CodeInputTooLarge},
		// The turn ranked on is bounded as a query is, however it is placed.
		{Request{Messages: []Message{{Role: "user", Content: strings.Repeat("x", MaxInputBytes+1)}, {Role: "assistant", Content: "x"}}}, CodeInputTooLarge},
		{Request{Messages: []Message{{Role: "assistant", Content: strings.Repeat("x", MaxInputBytes+1)}}}, CodeInputTooLarge},
		{Request{Messages: make([]Message, MaxMessages+1)}, CodeInputTooLarge},
		{Request{Messages: []Message{{Role: "robot", Content: "x"}}}, "invalid_messages"},
		{Request{Messages: []Message{{Role: "user", Content: " "}}}, "empty_query"},
		{Request{Messages: []Message{{Role: "user", Content: "x"}}, Query: "x"}, "conflicting_fields"},
		{Request{Messages: []Message{{Role: "user", Content: "x"}}, Template: "t"}, "conflicting_fields"},
		{Request{Regex: "(a"}, "invalid_regex"},
		{Request{Regex: `\p{Nope}`}, "invalid_regex"},
		{Request{Regex: strings.Repeat("a", MaxRegexBytes+1)}, "regex_too_long"},
		{Request{Regex: "(a{1000}){1000}"}, "invalid_regex"}, // RE2's own repeat bound
		{Request{Regex: "[a-z]{1000}x{999}"}, "regex_too_complex"},
		{Request{Regex: "a", Query: "x"}, "conflicting_fields"},
		{Request{Regex: "a", Operation: "list", Servers: []string{"s"}}, "conflicting_fields"},
		{Request{Query: "x", RegexDescription: true}, "conflicting_fields"},
		// Fields an answer would drop without a word.
		{Request{Query: "x", Template: "t"}, "conflicting_fields"},
		{Request{Query: "select:a", Template: "t"}, "conflicting_fields"},
		{Request{Query: "x", Operation: "list", Servers: []string{"s"}}, "conflicting_fields"},
		{Request{Messages: []Message{{Role: "user", Content: "x"}}, Operation: "list", ServerMatch: "s"}, "conflicting_fields"},
		{Request{Query: "select:"}, "empty_query"},
		{Request{Query: " SELECT: , ,\t,"}, "empty_query"},
	}
	for _, tt := range tests {
		var re *RequestError
		if err := tt.req.Validate(); !errors.As(err, &re) || re.Code != tt.code {
			t.Errorf("Validate(%+v) = %v, want code %s", tt.req, err, tt.code)
		}
	}
}

func TestFormats(t *testing.T) {
	svc := newService(t, nil)
	mustBuild(t, svc)
	for _, format := range tooldef.Formats {
		res := mustSearch(t, svc, Request{Query: "create an issue", TopK: ptr(3), Format: format, IncludeSchema: true})
		if len(res.Definitions) != len(res.Tools) {
			t.Fatalf("%s: %d definitions for %d tools", format, len(res.Definitions), len(res.Tools))
		}
		for i, def := range res.Definitions {
			var m map[string]any
			if err := json.Unmarshal(def, &m); err != nil {
				t.Fatal(err)
			}
			if format != "mcp" && res.Tools[i].DefinitionName == "" {
				t.Errorf("%s: tool %d has no definition_name", format, i)
			}
			if len(res.Tools[i].InputSchema) == 0 {
				t.Errorf("%s: include_schema left input_schema out", format)
			}
		}
	}
}

func TestAuth(t *testing.T) {
	svc := New(Config{Embedder: embedding.NewLocal(64)})
	setup := defaultSetup(t)
	setup.Keys = []access.Key{
		{Name: "all", Hash: sha256.Sum256([]byte("key-all"))},
		{Name: "github-only", Hash: sha256.Sum256([]byte("key-gh")), Visibility: access.Visibility{Servers: []string{"github"}, Tools: []string{"get_platform_info"}}},
	}
	if _, err := svc.Build(t.Context(), setup); err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{"", "wrong", "key-al"} {
		if _, err := svc.Authenticate(tok); !errors.Is(err, access.ErrUnauthorized) {
			t.Errorf("Authenticate(%q) = %v, want ErrUnauthorized", tok, err)
		}
	}
	if _, err := svc.Search(t.Context(), Request{Query: "x"}, access.Caller{}); !errors.Is(err, access.ErrUnauthorized) {
		t.Errorf("anonymous search with keys configured: %v", err)
	}
	gh, err := svc.Authenticate("key-gh")
	if err != nil || gh.Key != "github-only" {
		t.Fatalf("Authenticate(key-gh) = %+v, %v", gh, err)
	}
	res, err := svc.Search(t.Context(), Request{Template: "release"}, gh)
	if err != nil {
		t.Fatal(err)
	}
	// slack/post_message and the get_usage core tool are hidden, and not
	// counted anywhere; get_platform_info is visible.
	if res.Withheld != 0 || slices.Contains(ids(res.Tools), "slack/post_message") || !slices.Contains(ids(res.Tools), "platform/get_platform_info") {
		t.Errorf("template for github-only: tools %v withheld %d", ids(res.Tools), res.Withheld)
	}
	// Naming what the key cannot see answers as naming what does not exist.
	for _, tt := range []struct{ hidden, missing Request }{
		{Request{Query: "x", Servers: []string{"slack"}}, Request{Query: "x", Servers: []string{"nosuch"}}},
		{Request{Query: "x", Visibility: access.Visibility{Servers: []string{"jira"}}}, Request{Query: "x", Visibility: access.Visibility{Servers: []string{"nosuch"}}}},
		{Request{Query: "x", Visibility: access.Visibility{Tools: []string{"slack/post_message"}}}, Request{Query: "x", Visibility: access.Visibility{Tools: []string{"slack/no_such"}}}},
		{Request{Query: "select:slack/post_message"}, Request{Query: "select:slack/no_such"}},
		{Request{Template: "triage"}, Request{Template: "nosuch"}},
	} {
		h, herr := svc.Search(t.Context(), tt.hidden, gh)
		m, merr := svc.Search(t.Context(), tt.missing, gh)
		if shape(h, herr) != shape(m, merr) {
			t.Errorf("hidden %+v answers %s;\nmissing %+v answers %s", tt.hidden, shape(h, herr), tt.missing, shape(m, merr))
		}
	}
}

// TestVisibilityProperty checks both directions over the default catalog
// and random policies: no answer contains an invisible tool (whatever the
// request: retrieval, core, template, select, list), and every visible tool
// is reachable by select and by its own description as a query.
func TestVisibilityProperty(t *testing.T) {
	svc := newService(t, nil)
	snap := mustBuild(t, svc)
	cat := snap.Catalog
	r := rand.New(rand.NewPCG(7, 11))
	for trial := range 25 {
		var vis access.Visibility
		for _, s := range cat.Servers() {
			if r.IntN(4) == 0 {
				vis.Servers = append(vis.Servers, s)
			}
		}
		for _, tl := range cat.Tools() {
			if r.IntN(8) == 0 {
				vis.Tools = append(vis.Tools, tl.ID())
			}
		}
		if vis.IsZero() {
			vis.Tools = []string{cat.Tool(r.IntN(cat.Len())).ID()}
		}
		allowed, _ := vis.Resolve(cat)
		visible := map[string]bool{}
		for i, tl := range cat.Tools() {
			if allowed.Has(i) {
				visible[tl.ID()] = true
			}
		}
		check := func(what string, res *Response) {
			for _, id := range ids(res.Tools) {
				if !visible[id] {
					t.Fatalf("trial %d: %s returned invisible %s", trial, what, id)
				}
			}
		}
		var allIDs []string
		for _, tl := range cat.Tools() {
			allIDs = append(allIDs, tl.ID())
		}
		for _, req := range []Request{
			{Query: "list open issues and send a message"},
			{Query: "anything", Mode: "keyword"},
			{Template: "release"},
			{Query: "select:" + strings.Join(allIDs, ",")},
			{Operation: "list", ServerMatch: "", Servers: cat.Servers(), TopK: ptr(50)},
		} {
			req.Visibility = vis
			check(req.Query+req.Template+req.Operation, mustSearch(t, svc, req))
		}
		for i, tl := range cat.Tools() {
			if !allowed.Has(i) {
				continue
			}
			res := mustSearch(t, svc, Request{Query: "select:" + tl.ID(), Visibility: vis})
			if len(res.Tools) != 1 {
				t.Fatalf("trial %d: visible %s not reachable by select", trial, tl.ID())
			}
			res = mustSearch(t, svc, Request{Query: tl.Description, Visibility: vis, IncludeCore: ptr(false)})
			if !slices.Contains(ids(res.Tools), tl.ID()) {
				t.Fatalf("trial %d: visible %s not in top %d for its own description: %v", trial, tl.ID(), DefaultTopK, ids(res.Tools))
			}
		}
	}
}

// flip changes the character at i, keeping the string valid base64url.
func flip(s string, i int) string {
	c := byte('A')
	if s[i] == 'A' {
		c = 'B'
	}
	return s[:i] + string(c) + s[i+1:]
}

func TestConfidenceAndExplain(t *testing.T) {
	svc := newService(t, nil)
	mustBuild(t, svc)
	for _, mode := range []Mode{ModeHybrid, ModeSemantic, ModeKeyword} {
		res := mustSearch(t, svc, Request{Query: "merge the approved pull request", Mode: mode, Explain: true, TopK: ptr(3)})
		if res.Confident == nil || !*res.Confident || *res.Confidence <= 0 || *res.Confidence > 1 {
			t.Errorf("%s: confident %v confidence %v, want a confident answer in (0,1]", mode, res.Confident, res.Confidence)
		}
		e := res.Tools[0].Explain
		if e == nil || !slices.Contains(e.MatchedTerms[analysis.Stem("merge")], "name") || len(e.MatchedTerms["concept:code"]) == 0 {
			t.Fatalf("%s: explain = %+v, want merge matched in the name, and a concept", mode, e)
		}
		if (e.Semantic != nil) != (mode != "keyword") || (e.Keyword != nil) != (mode != "semantic") {
			t.Errorf("%s: explain rankers = semantic %+v keyword %+v", mode, e.Semantic, e.Keyword)
		}
		if mode == "hybrid" && (e.Semantic.Rank != 1 || e.Keyword.Rank != 1) {
			t.Errorf("hybrid explain ranks = %d, %d; want both 1 for the obvious match", e.Semantic.Rank, e.Keyword.Rank)
		}
	}
	res := mustSearch(t, svc, Request{Query: "zxqv frobnicate"})
	if res.Confident == nil || *res.Confident {
		t.Errorf("nonsense query: confident %v confidence %v", res.Confident, res.Confidence)
	}
	if res := mustSearch(t, svc, Request{Template: "release"}); res.Confident != nil || res.Tools[0].Explain != nil {
		t.Error("a template answer carries a confidence or an explanation")
	}
}

// shape is an answer without the names the request gave: what a caller
// learns from it besides echoes of its own input.
func shape(res *Response, err error) string {
	if err != nil {
		var re *RequestError
		var te *UnknownTemplateError
		switch {
		case errors.As(err, &re):
			return "RequestError " + re.Code
		case errors.As(err, &te):
			return fmt.Sprintf("UnknownTemplateError known=%v", te.Known)
		}
		return fmt.Sprintf("%T", err)
	}
	unknown := 0
	if res.Diagnostic != nil {
		unknown = len(res.Diagnostic.Unknown)
	}
	return fmt.Sprintf("mode=%s tools=%v withheld=%d unknown=%d confidence=%v", res.Mode, ids(res.Tools), res.Withheld, unknown, deref(res.Confidence))
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
