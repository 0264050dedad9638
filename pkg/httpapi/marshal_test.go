package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/toolsearch/toolsearch/pkg/access"

	"github.com/toolsearch/toolsearch/pkg/eval"
	"github.com/toolsearch/toolsearch/pkg/search"
)

// stdMarshal is what encode wrote before it used go-json.
func stdMarshal(tb testing.TB, v any) []byte {
	tb.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		tb.Fatal(err)
	}
	return b.Bytes()
}

func sameJSON(tb testing.TB, what string, v any) {
	tb.Helper()
	var got bytes.Buffer
	if err := marshal(&got, v); err != nil {
		tb.Fatalf("%s: marshal: %v", what, err)
	}
	if want := stdMarshal(tb, v); !bytes.Equal(got.Bytes(), want) {
		tb.Fatalf("%s: marshal differs from encoding/json:\n got %s\nwant %s", what, got.Bytes(), want)
	}
}

// TestMarshalMatchesEncodingJSON: every kind of body the API writes comes
// out byte for byte as encoding/json would write it: search answers in
// every mode and format, with schemas and explanations, list pages,
// templates, status and errors.
func TestMarshalMatchesEncodingJSON(t *testing.T) {
	_, svc := newTestServerWith(t, serverOpts{build: true})
	cases, err := eval.LoadCases("../../evals/cases.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var queries []string
	for _, c := range cases {
		if c.Query != "" {
			queries = append(queries, c.Query)
		}
	}
	minScore := 0.2
	var reqs []search.Request
	for i, q := range queries {
		r := search.Request{Query: q, Mode: []search.Mode{"", search.ModeHybrid, search.ModeSemantic, search.ModeKeyword}[i%4], Explain: i%2 == 0, IncludeSchema: i%3 == 0,
			Format: []string{"", "mcp", "openai", "anthropic", "gemini"}[i%5]}
		if i%7 == 0 {
			r.MinScore = &minScore
		}
		reqs = append(reqs, r)
	}
	reqs = append(reqs, search.Request{Template: "release", IncludeSchema: true, Format: "openai"},
		search.Request{Operation: "list", ServerMatch: "git", IncludeSchema: true}, search.Request{Query: "select:create_issue,merge_pull_request", Format: "gemini"},
		search.Request{Query: "+slack post a message", Explain: true})
	for _, r := range reqs {
		res, err := svc.Search(t.Context(), r, access.Caller{})
		if err != nil {
			t.Fatalf("Search(%+v): %v", r, err)
		}
		res.TookMS = 0.123 // a float with a fraction, like real timings
		sameJSON(t, r.Query, res)
	}
	ts, err := svc.Templates(access.Caller{})
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "templates", struct {
		Templates []search.TemplateStatus `json:"templates"`
	}{ts})
	sameJSON(t, "status", statusPage{svc: svc}.read())
	var e errorBody
	e.Error.Code, e.Error.Message, e.Error.RequestID = "bad_request", "a \"quoted\" <tag> & \u2028 \x00 \\ é", "host/abc-000001"
	sameJSON(t, "error", e)
	sameJSON(t, "noop", struct{}{})
	sameJSON(t, "healthz", map[string]string{"status": "ok"})
	sameJSON(t, "readyz", map[string]any{"ready": true})
}

// FuzzMarshal: tool names and descriptions come from upstream servers, so
// any string (control characters, invalid UTF-8, U+2028) must come out as
// encoding/json writes it.
func FuzzMarshal(f *testing.F) {
	for _, s := range []string{"plain", "tab\there \"q\" \\", "<script>&amp;", "\u2028\u2029", "\xff\xfe bad utf-8", "nul \x00 del \x7f", "émoji 🙂"} {
		f.Add(s, float32(0.5))
	}
	f.Fuzz(func(t *testing.T, s string, score float32) {
		hit := search.Hit{Name: s, Server: s, Description: s, Score: &score, Source: "hybrid",
			Explain: &search.Explanation{MatchedTerms: map[string][]string{s: {"name"}}}}
		res := search.Response{Tools: []search.Hit{hit}, Confidence: &score}
		if _, err := json.Marshal(res); err != nil {
			return // NaN or ±Inf: encoding/json refuses them, and no score is one
		}
		sameJSON(t, "hit", res)
	})
}

// TestMarshalConcurrent: go-json builds its encoders lazily and caches
// them; bodies encoded from many goroutines at once (every request does)
// come out whole and alike. Run under -race by make test.
func TestMarshalConcurrent(t *testing.T) {
	_, svc := newTestServerWith(t, serverOpts{build: true})
	res, err := svc.Search(t.Context(), search.Request{Query: "merge a pull request", Explain: true, IncludeSchema: true, Format: "anthropic"}, access.Caller{})
	if err != nil {
		t.Fatal(err)
	}
	want := stdMarshal(t, res)
	var wg sync.WaitGroup
	errs := make(chan string, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				var b bytes.Buffer
				if err := marshal(&b, res); err != nil || !bytes.Equal(b.Bytes(), want) {
					errs <- fmt.Sprintf("marshal: %v, %d bytes, want %d", err, b.Len(), len(want))
					return
				}
				var st bytes.Buffer
				if err := marshal(&st, statusPage{svc: svc}.read()); err != nil || !json.Valid(st.Bytes()) {
					errs <- fmt.Sprintf("status: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
