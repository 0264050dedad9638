package search

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/analysis"
	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/embedding"
	"github.com/toolsearch/toolsearch/pkg/learn"
	"github.com/toolsearch/toolsearch/pkg/rank"
)

// learningRig is a service over the default catalog that learns into a
// real file store, without the background loop: the test moves events to
// the store itself (flush), so nothing depends on timing.
func learningRig(t *testing.T, store learn.Store) *Service {
	t.Helper()
	svc := New(Config{Embedder: embedding.NewLocal(256), Version: "test", Learning: &Learning{Store: store}})
	if _, err := svc.Build(t.Context(), defaultSetup(t)); err != nil {
		t.Fatal(err)
	}
	return svc
}

func fileStore(t *testing.T) learn.Store {
	t.Helper()
	s, err := learn.Open(filepath.Join(t.TempDir(), "learned.db"), learn.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// flush writes the events waiting for the store, as the learning loop
// would.
func flush(t *testing.T, svc *Service) {
	t.Helper()
	for {
		select {
		case ev := <-svc.learner.events:
			if err := svc.learner.cfg.Store.Record(t.Context(), ev); err != nil {
				t.Fatal(err)
			}
		default:
			return
		}
	}
}

func rankOf(hits []Hit, id string) int {
	for i, h := range hits {
		if h.Source != SourceCore && h.Server+"/"+h.Name == id {
			return i + 1
		}
	}
	return 0
}

// TestLearningTeaches follows one paraphrase through learning: callers
// search, report the tool they used, and once two callers have taught it
// over three sessions the tool ranks first for that query, its explanation
// naming the learned field. Feedback that cannot teach is refused or
// ignored, never counted.
func TestLearningTeaches(t *testing.T) {
	svc := learningRig(t, fileStore(t))
	ctx := t.Context()
	const query = "peek inside the settings document"
	req := Request{Query: query, TopK: ptr(10), Explain: true}
	first, err := svc.Search(ctx, req, access.Caller{Address: "10.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	if first.SearchID == "" {
		t.Fatal("no search_id while learning is on")
	}
	var target string
	for _, h := range slices.Backward(first.Tools) {
		if h.Source != SourceCore {
			target = h.Server + "/" + h.Name
			break
		}
	}
	before := rankOf(first.Tools, target)
	if before < 3 {
		t.Fatalf("the target %s ranks %d already: choose a query it answers worse", target, before)
	}

	// Feedback that teaches nothing.
	other := access.Caller{Address: "10.0.0.2"}
	for _, c := range []struct {
		name   string
		caller access.Caller
		id     string
		used   []string
		want   error
	}{
		{"another caller's id", other, first.SearchID, []string{target}, ErrUnknownSearch},
		{"an id never issued", other, "0123456789abcdef0123456789abcdef", []string{target}, ErrUnknownSearch},
		{"a key's id from its address", access.Caller{Key: "k", Address: "10.0.0.1"}, first.SearchID, []string{target}, ErrUnknownSearch},
	} {
		if _, _, err := svc.Feedback(ctx, c.caller, c.id, c.used); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	learned, ignored, err := svc.Feedback(ctx, access.Caller{Address: "10.0.0.1"}, first.SearchID, []string{target, "jira/no_such_tool", "github/delete_repository"})
	if err != nil || learned != 1 || !slices.Equal(ignored, []string{"jira/no_such_tool", "github/delete_repository"}) {
		t.Fatalf("feedback: learned %d, ignored %q, %v; want 1 and the other two, as named (a tool the search did not return teaches nothing)", learned, ignored, err)
	}
	if _, _, err := svc.Feedback(ctx, access.Caller{Address: "10.0.0.1"}, first.SearchID, []string{target}); !errors.Is(err, ErrUnknownSearch) {
		t.Errorf("a second report on one search: %v, want ErrUnknownSearch", err)
	}

	teach := func(addr string) {
		t.Helper()
		c := access.Caller{Address: addr}
		res, err := svc.Search(ctx, req, c)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := svc.Feedback(ctx, c, res.SearchID, []string{target}); err != nil {
			t.Fatal(err)
		}
	}
	// One caller alone teaches nothing, however often it asks.
	for range 5 {
		teach("10.0.0.1")
	}
	flush(t, svc)
	if _, err := svc.Relearn(ctx); err != nil {
		t.Fatal(err)
	}
	if got := rankOf(mustSearch(t, svc, req).Tools, target); got != before {
		t.Fatalf("one caller moved %s from %d to %d", target, before, got)
	}
	// A second caller's sessions pass the threshold; more callers teach
	// more.
	teach("10.0.0.2")
	for _, addr := range []string{"10.0.0.3", "10.0.0.4", "10.0.0.5"} {
		teach(addr)
		teach(addr)
	}
	flush(t, svc)
	if _, err := svc.Relearn(ctx); err != nil {
		t.Fatal(err)
	}
	after := mustSearch(t, svc, req)
	if got := rankOf(after.Tools, target); got != 1 {
		t.Fatalf("after two callers' sessions %s ranks %d (was %d), want 1", target, got, before)
	}
	e := after.Tools[rankOf(after.Tools, target)-1].Explain
	learnedField := false
	for _, fields := range e.MatchedTerms {
		learnedField = learnedField || slices.Contains(fields, "learned")
	}
	if !learnedField {
		t.Errorf("the explanation does not name the learned field: %v", e.MatchedTerms)
	}
	lt, err := svc.Learned(access.Caller{}, target, 10)
	if err != nil || len(lt) != 1 || len(lt[0].Terms) == 0 {
		t.Fatalf("Learned(%s) = %+v, %v", target, lt, err)
	}
	for _, w := range lt[0].Terms {
		if !strings.Contains(query, w.Name[:3]) {
			t.Errorf("learned term %q is not of the query %q", w.Name, query)
		}
	}
	if st := svc.Status().Learning; !st.Enabled || st.Tools != 1 || st.Store != "file" {
		t.Errorf("status learning %+v", st)
	}
	// Reset forgets it, and the ranking is today's again.
	if _, err := svc.ResetLearned(ctx, target); err != nil {
		t.Fatal(err)
	}
	if got := rankOf(mustSearch(t, svc, req).Tools, target); got != before {
		t.Errorf("after a reset %s ranks %d, want %d", target, got, before)
	}
}

// TestEmptyStoreChangesNothing: learning on with nothing learned answers
// every request as learning off does, byte for byte but for the search id.
func TestEmptyStoreChangesNothing(t *testing.T) {
	off := New(Config{Embedder: embedding.NewLocal(256), Version: "test"})
	if _, err := off.Build(t.Context(), defaultSetup(t)); err != nil {
		t.Fatal(err)
	}
	on := learningRig(t, fileStore(t))
	cat := off.Current().Catalog
	for i, tl := range cat.Tools() {
		for _, mode := range []Mode{ModeHybrid, ModeKeyword, ModeSemantic} {
			words := strings.Fields(tl.Description)
			req := Request{Query: strings.Join(words[:min(len(words), 2+i%5)], " "), Mode: mode, Explain: i%2 == 0}
			a, b := answerJSON(t, off, req), strings.Replace(answerJSON(t, on, req), `,"search_id":"issued"`, "", 1)
			if a != b {
				t.Fatalf("%+v\nlearning off: %s\nempty store:  %s", req, a, b)
			}
		}
	}
}

// failingStore is a store that is down.
type failingStore struct{}

var errDown = errors.New("connection refused")

func (failingStore) Record(context.Context, learn.Event) error    { return errDown }
func (failingStore) Load(context.Context) (*learn.Learned, error) { return nil, errDown }
func (failingStore) Reset(context.Context, string) error          { return errDown }
func (failingStore) Close() error                                 { return nil }
func (failingStore) Kind() string                                 { return "down" }

// TestStoreDownSearchesOn: a store that fails every call costs learning,
// never a search; status says why.
func TestStoreDownSearchesOn(t *testing.T) {
	svc := learningRig(t, failingStore{})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { svc.Learn(ctx, nil); close(done) }()
	defer func() { cancel(); <-done }()
	c := access.Caller{Address: "10.0.0.9"}
	for range 20 {
		res, err := svc.Search(ctx, Request{Query: "merge a pull request"}, c)
		if err != nil || len(res.Tools) == 0 {
			t.Fatalf("search with the store down: %v, %d tools", err, len(res.Tools))
		}
		if _, _, err := svc.Feedback(ctx, c, res.SearchID, []string{res.Tools[0].Server + "/" + res.Tools[0].Name}); err != nil {
			t.Fatalf("feedback with the store down: %v", err)
		}
	}
	if _, err := svc.Relearn(ctx); err != nil {
		t.Fatalf("a rebuild with the store down: %v", err)
	}
	waitFor(t, func() bool { return svc.Status().Learning.LastError != "" })
	if st := svc.Status().Learning; !strings.Contains(st.LastError, "connection refused") {
		t.Errorf("status learning %+v, want the store's error", st)
	}
	// Held for the store, each of the 20 uses: none written, none lost.
	waitFor(t, func() bool { return svc.Status().Learning.Waiting == 20 })
	if st := svc.Status().Learning; st.Recorded != 0 || st.Dropped != 0 {
		t.Errorf("status learning %+v, want the 20 uses waiting", st)
	}
	if _, err := svc.ResetLearned(ctx, ""); !errors.Is(err, errDown) {
		t.Errorf("reset with the store down: %v", err)
	}
}

// flakyStore is a file store whose writes fail as fail says (n counts
// the writes from 1): a database restarting, or refusing one event.
type flakyStore struct {
	learn.Store
	fail   func(n int, ev learn.Event) error
	writes atomic.Int32
}

func (f *flakyStore) Record(ctx context.Context, ev learn.Event) error {
	if err := f.fail(int(f.writes.Add(1)), ev); err != nil {
		return err
	}
	return f.Store.Record(ctx, ev)
}

// TestStoreFailuresLoseNoEvent: uses recorded while the store fails are
// held and written once it is back, the oldest first, unless the store
// may have written one already (a commit whose answer was lost: written
// again, it would count twice), or fails one event for good (dropped
// after retryTries writes, the others written). A store that restarted
// lost every use taught while it was down.
func TestStoreFailuresLoseNoEvent(t *testing.T) {
	first := learn.Caller("", "10.0.0.1")
	const sessions = 3
	for _, tt := range []struct {
		name              string
		fail              func(n int, ev learn.Event) error
		recorded, dropped int64
		writes            int32
	}{
		{"down for three writes, then back", func(n int, _ learn.Event) error {
			if n <= 3 {
				return errDown
			}
			return nil
		}, sessions, 0, sessions + 3},
		{"the first commit's answer lost", func(n int, _ learn.Event) error {
			if n == 1 {
				return fmt.Errorf("committing: unexpected EOF: %w", learn.ErrMaybeRecorded)
			}
			return nil
		}, sessions - 1, 0, sessions},
		{"one event refused for good", func(_ int, ev learn.Event) error {
			if ev.Caller == first {
				return errors.New("value too long")
			}
			return nil
		}, sessions - 1, 1, sessions - 1 + retryTries},
	} {
		t.Run(tt.name, func(t *testing.T) {
			store := &flakyStore{Store: fileStore(t), fail: tt.fail}
			svc := learningRig(t, store)
			svc.learner.retryFirst = 5 * time.Millisecond
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan struct{})
			go func() { svc.Learn(ctx, nil); close(done) }()
			for i := range sessions {
				c := access.Caller{Address: fmt.Sprintf("10.0.0.%d", i+1)}
				res, err := svc.Search(ctx, Request{Query: "merge a pull request"}, c)
				if err != nil {
					t.Fatal(err)
				}
				if _, _, err := svc.Feedback(ctx, c, res.SearchID, []string{res.Tools[0].Server + "/" + res.Tools[0].Name}); err != nil {
					t.Fatal(err)
				}
			}
			waitFor(t, func() bool {
				st := svc.Status().Learning
				return st.Recorded == tt.recorded && st.Dropped == tt.dropped
			})
			cancel()
			<-done // stopping writes whatever is still held
			if st := svc.Status().Learning; st.Recorded != tt.recorded || st.Dropped != tt.dropped || store.writes.Load() != tt.writes {
				t.Errorf("recorded %d, dropped %d, in %d writes; want %d, %d, %d", st.Recorded, st.Dropped, store.writes.Load(), tt.recorded, tt.dropped, tt.writes)
			}
		})
	}
}

// TestViewLearnsOnlyItsWords: a term learned for a tool a key sees reaches
// that key only if the dictionary knows it or the key's own tools use it.
// Learning keeps the catalog's words, so a word only a hidden tool has
// would otherwise tell the key that such a tool exists.
func TestViewLearnsOnlyItsWords(t *testing.T) {
	tools := []catalog.Tool{
		{Server: "seen", Name: "read_sheet", Description: "Read the cells of a sheet"},
		{Server: "seen", Name: "list_sheets", Description: "List the sheets of a workbook"},
		{Server: "hidden", Name: "query_zorblat", Description: "Query the zorblat warehouse"},
	}
	learned := &learn.Learned{Terms: map[string][]learn.Weighted{
		"seen/read_sheet": {{Name: "zorblat", Weight: 5}, {Name: "spreadsheet", Weight: 5}, {Name: "workbook", Weight: 4}},
	}}
	keys := []access.Key{
		{Name: "k", Hash: sha256.Sum256([]byte("secret-k")), Visibility: access.Visibility{Servers: []string{"seen"}}},
		{Name: "all", Hash: sha256.Sum256([]byte("secret-all"))},
	}
	svc := hiddenRig(t, tools, nil, nil, keys, staticStore{learned})
	for _, c := range []struct {
		key  string
		want []string
	}{
		{"all", []string{"zorblat", "spreadsheet", "workbook"}},
		{"k", []string{"spreadsheet", "workbook"}},
	} {
		lt, err := svc.Learned(access.Caller{Key: c.key}, "seen/read_sheet", 10)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, w := range lt[0].Terms {
			got = append(got, w.Name)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("key %s reads learned terms %v, want %v", c.key, got, c.want)
		}
		res, err := svc.Search(t.Context(), Request{Query: "zorblat", Mode: ModeKeyword}, access.Caller{Key: c.key})
		if err != nil {
			t.Fatal(err)
		}
		if found := rankOf(res.Tools, "seen/read_sheet") > 0; found != (c.key == "all") {
			t.Errorf("key %s: a search for the hidden tool's word finds read_sheet: %v", c.key, found)
		}
	}
}

// TestPendingPerCaller: a caller that searches without ever reporting
// holds at most pendingPerCaller searches open; past that its answers
// carry no id, and other callers' searches are not pushed out.
func TestPendingPerCaller(t *testing.T) {
	svc := learningRig(t, fileStore(t))
	other := access.Caller{Address: "10.0.0.2"}
	kept, err := svc.Search(t.Context(), Request{Query: "merge a pull request"}, other)
	if err != nil || kept.SearchID == "" {
		t.Fatalf("search: %v", err)
	}
	flood := access.Caller{Address: "10.0.0.1"}
	ids := 0
	for range pendingPerCaller + 50 {
		res, err := svc.Search(t.Context(), Request{Query: "merge a pull request"}, flood)
		if err != nil {
			t.Fatal(err)
		}
		if res.SearchID != "" {
			ids++
		}
	}
	if ids != pendingPerCaller {
		t.Errorf("the flooding caller got %d search ids, want %d", ids, pendingPerCaller)
	}
	tool := kept.Tools[0] // the best: a retrieved tool, never a core one
	if n, _, err := svc.Feedback(t.Context(), other, kept.SearchID, []string{tool.Server + "/" + tool.Name}); err != nil || n != 1 {
		t.Errorf("the other caller's search after the flood: %d, %v", n, err)
	}
}

// TestCompanionBoost: with the boost on, a tool callers used with the
// best one joins the answer, its explanation saying why; off (the
// default), learned companions change nothing.
func TestCompanionBoost(t *testing.T) {
	const anchor, companion = "github/merge_pull_request", "slack/post_message"
	learned := &learn.Learned{Companions: map[string][]learn.Weighted{
		anchor:    {{Name: companion, Weight: 6}},
		companion: {{Name: anchor, Weight: 6}},
	}}
	req := Request{Query: "merge the approved pull request", TopK: ptr(3), Explain: true, IncludeCore: ptr(false)}
	for _, boost := range []float64{0, 1} {
		svc := New(Config{Embedder: embedding.NewLocal(256), Learning: &Learning{Store: staticStore{learned}}, Rank: rank.Config{CompanionBoost: boost}})
		svc.learner.load(t.Context())
		if _, err := svc.Build(t.Context(), defaultSetup(t)); err != nil {
			t.Fatal(err)
		}
		res := mustSearch(t, svc, req)
		if got := rankOf(res.Tools, anchor); got != 1 {
			t.Fatalf("boost %v: %s ranks %d", boost, anchor, got)
		}
		r := rankOf(res.Tools, companion)
		switch {
		case boost == 0 && r != 0:
			t.Errorf("boost off: the companion ranks %d", r)
		case boost > 0 && (r == 0 || res.Tools[r-1].Explain.Companion <= 0):
			t.Errorf("boost on: the companion ranks %d (%+v)", r, res.Tools)
		}
	}
}

// TestStopKeepsWhatWasTaught: a service that stops writes what its pending
// searches taught (an MCP session's uses, not yet finished by a next
// search) before Learn returns.
func TestStopKeepsWhatWasTaught(t *testing.T) {
	store := fileStore(t)
	svc := learningRig(t, store)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { svc.Learn(ctx, nil); close(done) }()
	c := access.Caller{Address: "10.0.0.1"}
	res, err := svc.Search(t.Context(), Request{Query: "merge a pull request"}, c)
	if err != nil {
		t.Fatal(err)
	}
	svc.Used(t.Context(), c, res.SearchID, res.Tools[0].Server+"/"+res.Tools[0].Name)
	cancel()
	<-done
	if n := svc.Status().Learning.Recorded; n != 1 {
		t.Errorf("%d events recorded at stop, want the session's 1", n)
	}
}

// TestDecayAloneRebuildsNothing: weights decay a little at every read of
// the store; only a change the index would hold (a term's learnedTF, a
// companion's rounded weight) tells the learner to rebuild.
func TestDecayAloneRebuildsNothing(t *testing.T) {
	tally := func(term, companion float64) *learn.Learned {
		return &learn.Learned{
			Terms:      map[string][]learn.Weighted{"a/x": {{Name: "sheet", Weight: term}}},
			Companions: map[string][]learn.Weighted{"a/x": {{Name: "a/y", Weight: companion}}},
		}
	}
	base := learnedHash(tally(4.0, 6.0))
	for _, c := range []struct {
		term, companion float64
		same            bool
	}{
		{3.9999872, 5.99998, true},
		{3.6, 6.2, true},
		{3.4, 6.0, false},
		{4.0, 6.6, false},
		{9.0, 6.0, false}, // 8 times, against 4
	} {
		if got := learnedHash(tally(c.term, c.companion)) == base; got != c.same {
			t.Errorf("term %v, companion %v: same hash %v, want %v", c.term, c.companion, got, c.same)
		}
	}
}

// TestResetLearnedNamesWhatItForgets: a reset is of the id the store keys,
// found as Lookup finds a tool, or of a tool the store learned about that
// the catalog dropped; a bare name resolves, and a typo is an unknown tool
// with a hint rather than a reset of nothing that answers 200.
func TestResetLearnedNamesWhatItForgets(t *testing.T) {
	svc := learningRig(t, fileStore(t))
	for _, tt := range []struct {
		tool, want, wantErr string
	}{
		{"github/merge_pull_request", "github/merge_pull_request", ""},
		{"merge_pull_request", "github/merge_pull_request", ""},
		{"gone/old_tool", "gone/old_tool", ""},
		{"gone/paired", "gone/paired", ""},
		{"", "", ""},
		{"github/merge_pull_requst", "", `did you mean "merge_pull_request"?`},
		{"gone/never_learned", "", "unknown tool"},
	} {
		// As loaded from a store that kept what two tools since removed
		// taught (each reset reloads the store, empty here).
		svc.learner.learned.Store(&learn.Learned{
			Terms:      map[string][]learn.Weighted{"gone/old_tool": {{Name: "ticket", Weight: 1}}},
			Companions: map[string][]learn.Weighted{"github/merge_pull_request": {{Name: "gone/paired", Weight: 1}}},
		})
		got, err := svc.ResetLearned(t.Context(), tt.tool)
		switch {
		case tt.wantErr == "" && (err != nil || got != tt.want):
			t.Errorf("ResetLearned(%q) = %q, %v; want %q", tt.tool, got, err, tt.want)
		case tt.wantErr != "" && (!errors.Is(err, ErrUnknownTool) || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("ResetLearned(%q) = %q, %v; want ErrUnknownTool with %q", tt.tool, got, err, tt.wantErr)
		}
	}
}

// TestConversationTeachesItsAsk: a conversation's search teaches the tool
// used the words of its newest turn, not those of the earlier turns: a
// status set after a talk of failed CI runs is not a tool for CI runs.
func TestConversationTeachesItsAsk(t *testing.T) {
	svc := learningRig(t, fileStore(t))
	caller := access.Caller{Address: "10.0.0.1"}
	res, err := svc.Search(t.Context(), Request{TopK: ptr(5), Messages: []Message{
		{Role: "user", Content: "Which CI runs failed on main today?"},
		{Role: "assistant", Content: "Two workflow runs failed on main: integration tests and lint."},
		{Role: "user", Content: "set my status to out sick until tomorrow"},
	}}, caller)
	if err != nil {
		t.Fatal(err)
	}
	if res.SearchID == "" || rankOf(res.Tools, "slack/set_status") == 0 {
		t.Fatalf("search id %q, tools %v: want an id and slack/set_status", res.SearchID, ids(res.Tools))
	}
	if _, _, err := svc.Feedback(t.Context(), caller, res.SearchID, []string{"slack/set_status"}); err != nil {
		t.Fatal(err)
	}
	ev := <-svc.learner.events
	ask := analysis.English.Terms("set my status to out sick until tomorrow")
	for _, term := range ev.Terms {
		if !slices.Contains(ask, term) {
			t.Errorf("the search taught %q, a word of the earlier turns (taught %q)", term, ev.Terms)
		}
	}
	if len(ev.Terms) == 0 {
		t.Error("the search taught nothing of its ask")
	}
}
