package inspect

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/catgen"
	"github.com/toolsearch/toolsearch/pkg/embedding"
	"github.com/toolsearch/toolsearch/pkg/lint"
	"github.com/toolsearch/toolsearch/pkg/search"
)

// Two servers with a near-duplicate pair across them, and a key that sees
// only one: the audit names the shadowing tool to a key that sees both, and
// nothing of it to the key that sees one.
const doc = `{"servers":[
	{"name":"mail","tools":[
		{"name":"send_email","description":"Send an email message to one or more recipients with a subject and body."},
		{"name":"list_folders","description":"List the mailbox folders of the account."}]},
	{"name":"outbox","tools":[
		{"name":"send_email","description":"Send an email message to one or more recipients with a subject and body."},
		{"name":"purge_outbox","description":"Remove every queued message."}]}]}`

// docCatalog is doc as a catalog.
func docCatalog(t *testing.T) *catalog.Catalog { return catalogOf(t, []byte(doc)) }

// catalogOf is the catalog of JSON catalog documents.
func catalogOf(tb testing.TB, docs ...[]byte) *catalog.Catalog {
	tb.Helper()
	parts := make([]catalog.Part, len(docs))
	for i, d := range docs {
		var err error
		if parts[i], err = catalog.Parse(fmt.Sprintf("doc%d.json", i), d, ""); err != nil {
			tb.Fatal(err)
		}
	}
	cat, err := catalog.New(parts)
	if err != nil {
		tb.Fatal(err)
	}
	return cat
}

// generated is a catalog document of n tools from package catgen.
func generated(tb testing.TB, n int) []byte {
	tb.Helper()
	var buf bytes.Buffer
	if err := (catgen.Spec{Tools: n, Seed: 1}).Write(&buf); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// local is a service over cat with the local embedder.
func local(tb testing.TB, cat *catalog.Catalog) *search.Service {
	tb.Helper()
	svc := search.New(search.Config{Embedder: embedding.NewLocal(0)})
	if _, err := svc.Build(tb.Context(), &search.Setup{Catalog: cat}); err != nil {
		tb.Fatal(err)
	}
	return svc
}

func newService(t *testing.T) *search.Service {
	t.Helper()
	cat := docCatalog(t)
	svc := search.New(search.Config{Embedder: embedding.NewLocal(256)})
	_, err := svc.Build(context.Background(), &search.Setup{Catalog: cat, Keys: []access.Key{
		{Name: "all", Hash: sha256.Sum256([]byte("k-all"))},
		{Name: "mail", Hash: sha256.Sum256([]byte("k-mail")), Visibility: access.Visibility{Servers: []string{"mail"}}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

func TestCatalog(t *testing.T) {
	svc := newService(t)
	ctx := context.Background()

	all, err := Catalog(ctx, svc, access.Caller{Key: "all"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(all.Tools) != 4 || !all.Audit.Ran {
		t.Fatalf("%d tools, audit %+v", len(all.Tools), all.Audit)
	}
	var misses []string
	nearDup := false
	for _, tool := range all.Tools {
		for _, m := range tool.Misses {
			misses = append(misses, tool.Server+"/"+tool.Name+" < "+m.OutrankedBy)
		}
		for _, f := range tool.Findings {
			nearDup = nearDup || (f.Rule == "duplicate" || f.Rule == "near-duplicate") && f.Other != ""
		}
	}
	if !slices.ContainsFunc(misses, func(s string) bool {
		return s == "mail/send_email < outbox/send_email" || s == "outbox/send_email < mail/send_email"
	}) {
		t.Errorf("the audit missed the near-duplicate pair: %v", misses)
	}
	if !nearDup {
		t.Error("no duplicate finding for the two send_email tools")
	}

	mine, err := Catalog(ctx, svc, access.Caller{Key: "mail"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range mine.Tools {
		if tool.Server != "mail" || len(tool.Misses) > 0 {
			t.Errorf("the mail-only key sees %s/%s, misses %+v", tool.Server, tool.Name, tool.Misses)
		}
		for _, f := range tool.Findings {
			if f.Other != "" {
				t.Errorf("the mail-only key sees a pair with %s", f.Other)
			}
		}
	}
	if len(mine.Servers) != 1 {
		t.Errorf("servers %+v", mine.Servers)
	}

	// A server's name nearly typed is suggested from the servers the key
	// sees, never from those it does not.
	for _, tc := range []struct{ asked, hint string }{
		{"outbox", ""}, {"outbx", ""}, {"Mail", "mail"}, {"mial", "mail"},
	} {
		var unknown *UnknownServerError
		if _, err := Catalog(ctx, svc, access.Caller{Key: "mail"}, []string{tc.asked}); !errors.As(err, &unknown) || unknown.Hint != tc.hint {
			t.Errorf("the mail-only key asking for server %s: %v, want UnknownServerError suggesting %q", tc.asked, err, tc.hint)
		}
	}
	if _, err := Catalog(ctx, svc, access.Caller{}, nil); !errors.Is(err, access.ErrUnauthorized) {
		t.Errorf("no key: %v", err)
	}
}

// TestAuditBatchesQueryEmbeddings: with a remote provider the audit's
// queries are embedded in one request, not one a query.
func TestAuditBatchesQueryEmbeddings(t *testing.T) {
	var requests, inputs atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Input []string `json:"input"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		requests.Add(1)
		inputs.Add(int64(len(req.Input)))
		items := make([]string, len(req.Input))
		for i, in := range req.Input {
			items[i] = fmt.Sprintf(`{"index":%d,"embedding":[%d,1,0.5,0.25]}`, i, len(in)%7+1)
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"data":[%s]}`, strings.Join(items, ","))
	}))
	t.Cleanup(srv.Close)
	cat := docCatalog(t)
	svc := search.New(search.Config{Embedder: embedding.NewOpenAI(embedding.OpenAIConfig{BaseURL: srv.URL + "/v1", APIKey: "k", Dimensions: 4})})
	if _, err := svc.Build(t.Context(), &search.Setup{Catalog: cat}); err != nil {
		t.Fatal(err)
	}
	before := requests.Load()
	rep, err := Catalog(t.Context(), svc, access.Caller{}, nil)
	if err != nil || !rep.Audit.Ran {
		t.Fatalf("Catalog = %+v, %v", rep, err)
	}
	if got := requests.Load() - before; got != 1 {
		t.Errorf("the audit of %d tools made %d provider requests, want 1 batch", cat.Len(), got)
	}
}

// inDebt is a budget that takes the first spend and then refuses, as a
// caller's does once a report's price has put it in debt; it records
// what it was charged for regardless.
type inDebt struct {
	spent   []access.Work
	charged map[access.Work]int
}

func (b *inDebt) Spend(work access.Work, units int) error {
	b.spent = append(b.spent, work)
	if len(b.spent) > 1 {
		return &access.OverBudgetError{RetryAfter: time.Minute, Rate: 1, Burst: 1}
	}
	return nil
}

func (b *inDebt) Charge(work access.Work, units int) {
	if b.charged == nil {
		b.charged = map[access.Work]int{}
	}
	b.charged[work] += units
}

// Once the report's price is paid, its audit's searches are charged what
// costs them more than a search's unit, as any search is, and never
// refused: on a catalog large enough for that (here 50,000 tools,
// descriptions of 16 sentences ranked apart, each a unit), refusing them
// would waste the report paid for, and not charging them would price a
// long description's search like a short one's.
func TestAuditPaysItsSearches(t *testing.T) {
	var sentences []string
	for i := range 16 {
		sentences = append(sentences, fmt.Sprintf("It sends report number %d to the team", i))
	}
	long := fmt.Sprintf(`{"servers":[{"name":"long","tools":[
		{"name":"send_reports","description":%q},
		{"name":"file_reports","description":%q}]}]}`,
		strings.Join(sentences, ". "), strings.ReplaceAll(strings.Join(sentences, ". "), "sends", "files"))
	svc := local(t, catalogOf(t, generated(t, 50_000), []byte(long)))
	b := &inDebt{}
	rep, err := Catalog(access.WithBudget(t.Context(), b), svc, access.Caller{}, []string{"long"})
	if err != nil || !rep.Audit.Ran {
		t.Fatalf("Catalog = %+v, %v", rep, err)
	}
	if !slices.Equal(b.spent, []access.Work{access.WorkReport}) {
		t.Errorf("spent for %v, want the report's price alone", b.spent)
	}
	// Two descriptions, each 16 intents of 50,000 tools: a unit each.
	if want := map[access.Work]int{access.WorkScan: 2}; !maps.Equal(b.charged, want) {
		t.Errorf("the audit's searches were charged %v, want %v", b.charged, want)
	}
}

// While a rebuild short of memory serves the index's sign codes, there
// are no vectors to compare: the near-duplicate check says so instead of
// running on none.
func TestFindingsWithoutVectors(t *testing.T) {
	svc := local(t, docCatalog(t))
	cur := svc.Current()
	sketched := *cur
	sketched.Matrix = cur.Matrix.Sketch()
	for _, tc := range []struct {
		name string
		view *search.Snapshot
		ran  bool
	}{
		{"the index", cur, true},
		{"its sign codes", &sketched, false},
	} {
		checks := findings(tc.view, nil, nil, map[string]int{})
		ran := slices.Contains(checks.Ran, lint.NearDuplicates)
		if ran != tc.ran || !ran && !strings.Contains(checks.Skipped[lint.NearDuplicates], "sign codes") {
			t.Errorf("%s: near duplicates ran %v (skipped: %q), want %v", tc.name, ran, checks.Skipped[lint.NearDuplicates], tc.ran)
		}
	}
}
