package search

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/analysis"
	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/config"
	"github.com/toolsearch/toolsearch/pkg/embedding"
	"github.com/toolsearch/toolsearch/pkg/learn"
	"github.com/toolsearch/toolsearch/pkg/tooldef"
)

// TestHiddenToolsChangeNothing is the property behind visibility: for a
// key, a catalog with extra tools it cannot see answers every request
// byte for byte as the catalog without them (timing aside). Catalogs, key
// policies and requests are random; requests name hidden and missing tools
// on purpose, in every operator and mode, with explanations and rendering.
func TestHiddenToolsChangeNothing(t *testing.T) {
	full, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	// And a server of accented words, which queries type without their
	// accents at times: they read as a tool's words only if the key sees
	// one that has them.
	tools := append(full.Tools(),
		catalog.Tool{Server: "compta", Name: "lister", Description: "Lister les factures impayées d'un client, avec leur échéance."},
		catalog.Tool{Server: "compta", Name: "relancer", Description: "Envoyer une relance de paiement à l'échéance, par courriel."},
		catalog.Tool{Server: "stadt", Name: "melden", Description: "Schäden an Straßen und Brücken der Stadt melden."})
	full = catalogOf(t, tools)
	tools = full.Tools()
	r := rand.New(rand.NewPCG(12, 34))
	for trial := range 12 {
		// The key's policy: some servers and some single tools.
		var vis access.Visibility
		for _, s := range full.Servers() {
			if r.IntN(3) == 0 {
				vis.Servers = append(vis.Servers, s)
			}
		}
		for range 1 + r.IntN(4) {
			vis.Tools = append(vis.Tools, tools[r.IntN(len(tools))].ID())
		}
		visible := map[string]bool{}
		for _, tl := range tools {
			if slices.Contains(vis.Servers, tl.Server) || slices.Contains(vis.Tools, tl.ID()) {
				visible[tl.ID()] = true
			}
		}
		// Catalog A lacks some tools the key cannot see; B has them all.
		var removed []catalog.Tool
		var kept []catalog.Tool
		for _, tl := range tools {
			if !visible[tl.ID()] && r.IntN(2) == 0 {
				removed = append(removed, tl)
			} else {
				kept = append(kept, tl)
			}
		}
		if len(removed) == 0 {
			continue
		}
		// Core and templates name tools both catalogs have, seen or not.
		core := []string{kept[r.IntN(len(kept))].ID(), kept[r.IntN(len(kept))].ID()}
		templates := map[string]config.Template{}
		for i := range 3 {
			var ts []string
			for range 1 + r.IntN(3) {
				ts = append(ts, kept[r.IntN(len(kept))].ID())
			}
			templates[fmt.Sprintf("t%d", i)] = config.Template{Description: "d", Tools: ts}
		}
		keys := []access.Key{
			{Name: "k", Hash: sha256.Sum256([]byte("secret-k")), Visibility: vis},
			{Name: "all", Hash: sha256.Sum256([]byte("secret-all"))},
		}
		// Half the trials learn: both catalogs hold the same tally, whose
		// terms include words only hidden tools have and whose companions
		// join hidden tools to seen ones.
		var store learn.Store
		if trial%2 == 1 {
			store = staticStore{randomLearned(r, tools, removed)}
		}
		svcA, svcB := hiddenRig(t, kept, core, templates, keys, store), hiddenRig(t, tools, core, templates, keys, store)
		// B is rebuilt, as a change to tools the key cannot see would make
		// it: nothing the key reads (index_version included) may move.
		if _, err := svcB.Build(context.Background(), &Setup{Catalog: catalogOf(t, tools), Core: core, Templates: templates, Keys: keys}); err != nil {
			t.Fatal(err)
		}
		var reqs []Request
		for range 30 {
			reqs = append(reqs, randomRequest(r, tools, removed, templates))
		}
		for _, req := range reqs {
			a, b := answerJSON(t, svcA, req), answerJSON(t, svcB, req)
			if a != b {
				t.Fatalf("trial %d: %+v\ncatalog without hidden tools: %s\ncatalog with them:            %s", trial, req, a, b)
			}
		}
		for _, tl := range removed {
			_, errA := svcA.Lookup(access.Caller{Key: "k"}, tl.Server, tl.Name)
			_, errB := svcB.Lookup(access.Caller{Key: "k"}, tl.Server, tl.Name)
			_, errA2 := svcA.Lookup(access.Caller{Key: "k"}, "", tl.Name)
			_, errB2 := svcB.Lookup(access.Caller{Key: "k"}, "", tl.Name)
			if fmt.Sprint(errA) != fmt.Sprint(errB) || fmt.Sprint(errA2) != fmt.Sprint(errB2) {
				t.Errorf("Lookup of hidden %s: %v / %v with it missing, %v / %v with it present", tl.ID(), errA, errA2, errB, errB2)
			}
			// Its name misspelt: what the error suggests is a tool the
			// key sees, whether the hidden one is there or not.
			near := tl.Name[:len(tl.Name)-1]
			_, errA3 := svcA.Lookup(access.Caller{Key: "k"}, "", near)
			_, errB3 := svcB.Lookup(access.Caller{Key: "k"}, "", near)
			if fmt.Sprint(errA3) != fmt.Sprint(errB3) {
				t.Errorf("Lookup of %s: %v with %s missing, %v with it present", near, errA3, tl.ID(), errB3)
			}
		}
		if store != nil {
			la, errA := svcA.Learned(access.Caller{Key: "k"}, "", 1000)
			lb, errB := svcB.Learned(access.Caller{Key: "k"}, "", 1000)
			if fmt.Sprint(la, errA) != fmt.Sprint(lb, errB) {
				t.Errorf("trial %d: learned differs:\n%v %v\n%v %v", trial, la, errA, lb, errB)
			}
			for _, tl := range removed[:min(len(removed), 5)] {
				_, errA := svcA.Learned(access.Caller{Key: "k"}, tl.ID(), 10)
				_, errB := svcB.Learned(access.Caller{Key: "k"}, tl.ID(), 10)
				if fmt.Sprint(errA) != fmt.Sprint(errB) {
					t.Errorf("Learned of hidden %s: %v with it missing, %v with it present", tl.ID(), errA, errB)
				}
			}
		}
		sa, _ := svcA.Servers(access.Caller{Key: "k"}, "")
		sb, _ := svcB.Servers(access.Caller{Key: "k"}, "")
		ta, _ := svcA.Templates(access.Caller{Key: "k"})
		tb, _ := svcB.Templates(access.Caller{Key: "k"})
		if fmt.Sprint(sa, ta) != fmt.Sprint(sb, tb) {
			t.Errorf("servers/templates differ: %v %v vs %v %v", sa, ta, sb, tb)
		}
	}
}

// staticStore is a learning store that holds a fixed tally.
type staticStore struct{ l *learn.Learned }

func (s staticStore) Record(context.Context, learn.Event) error    { return nil }
func (s staticStore) Load(context.Context) (*learn.Learned, error) { return s.l, nil }
func (s staticStore) Reset(context.Context, string) error          { return nil }
func (s staticStore) Close() error                                 { return nil }
func (s staticStore) Kind() string                                 { return "static" }

// randomLearned is a tally over tools: terms drawn from every tool's
// words (hidden's among them) and from the dictionary, and companions
// between any two tools.
func randomLearned(r *rand.Rand, tools, hidden []catalog.Tool) *learn.Learned {
	l := &learn.Learned{Terms: map[string][]learn.Weighted{}, Companions: map[string][]learn.Weighted{}}
	var words []string
	for _, tl := range hidden {
		words = append(words, analysis.English.Terms(tl.Name+" "+tl.Description)...)
	}
	words = append(words, "spreadsheet", "weather", "invoice", "zzqvendorword")
	for _, tl := range tools {
		if r.IntN(3) != 0 {
			continue
		}
		for range 1 + r.IntN(4) {
			l.Terms[tl.ID()] = append(l.Terms[tl.ID()], learn.Weighted{Name: words[r.IntN(len(words))], Weight: float64(3 + r.IntN(6))})
		}
		for range r.IntN(3) {
			c := tools[r.IntN(len(tools))]
			if r.IntN(2) == 0 {
				c = hidden[r.IntN(len(hidden))]
			}
			if c.ID() != tl.ID() {
				l.Companions[tl.ID()] = append(l.Companions[tl.ID()], learn.Weighted{Name: c.ID(), Weight: float64(3 + r.IntN(6))})
			}
		}
	}
	return l
}

func hiddenRig(tb testing.TB, tools []catalog.Tool, core []string, templates map[string]config.Template, keys []access.Key, store learn.Store) *Service {
	tb.Helper()
	cfg := Config{Embedder: embedding.NewLocal(256), Version: "test"}
	if store != nil {
		// Companions rank only when turned on: on, so that their path is
		// held to the property too.
		cfg.Learning, cfg.Rank.CompanionBoost = &Learning{Store: store}, 1
	}
	svc := New(cfg)
	if store != nil {
		svc.learner.load(context.Background())
	}
	if _, err := svc.Build(context.Background(), &Setup{Catalog: catalogOf(tb, tools), Core: core, Templates: templates, Keys: keys}); err != nil {
		tb.Fatal(err)
	}
	return svc
}

// catalogOf is a catalog of tools, each under its own Server, in order.
func catalogOf(tb testing.TB, tools []catalog.Tool) *catalog.Catalog {
	tb.Helper()
	var servers []catalog.Server
	for _, tl := range tools {
		if len(servers) == 0 || servers[len(servers)-1].Name != tl.Server {
			servers = append(servers, catalog.Server{Name: tl.Server})
		}
		servers[len(servers)-1].Tools = append(servers[len(servers)-1].Tools, tl)
	}
	cat, err := catalog.New([]catalog.Part{{Source: "test", Servers: servers}})
	if err != nil {
		tb.Fatal(err)
	}
	return cat
}

// withoutAccents is w as typed on a keyboard without accents.
func withoutAccents(w string) string { return string(analysis.AppendUnaccented(nil, w)) }

func randomRequest(r *rand.Rand, tools, hidden []catalog.Tool, templates map[string]config.Template) Request {
	pick := func() catalog.Tool {
		if r.IntN(2) == 0 {
			return hidden[r.IntN(len(hidden))]
		}
		return tools[r.IntN(len(tools))]
	}
	first := pick()
	// Often enough, words of an accented tool (seen or not), where the
	// catalog has one.
	var accented []catalog.Tool
	for _, tl := range tools {
		if withoutAccents(tl.Description) != tl.Description {
			accented = append(accented, tl)
		}
	}
	if len(accented) > 0 && r.IntN(4) == 0 {
		first = accented[r.IntN(len(accented))]
	}
	words := strings.Fields(first.Description + " " + pick().Description)
	r.Shuffle(len(words), func(i, j int) { words[i], words[j] = words[j], words[i] })
	words = words[:min(len(words), 2+r.IntN(6))]
	if r.IntN(3) == 0 {
		// Misspelt: read as a tool's words only if the key sees one
		// that has them.
		for i, w := range words {
			switch u := withoutAccents(w); {
			case u != w && r.IntN(2) == 0:
				words[i] = u
			case len(w) >= 5 && r.IntN(2) == 0:
				k := 1 + r.IntN(len(w)-3)
				words[i] = w[:k] + w[k+1:k+2] + w[k:k+1] + w[k+2:]
			}
		}
	}
	query := strings.Join(words, " ")
	if query == "" {
		query = "list"
	}
	req := Request{Query: query, Mode: []Mode{"", ModeHybrid, ModeSemantic, ModeKeyword}[r.IntN(4)], Explain: r.IntN(2) == 0}
	switch r.IntN(10) {
	case 0:
		// And one nearly named, a letter dropped: a tool the key cannot
		// see is never suggested.
		near := pick().Name
		if k := r.IntN(len(near)); len(near) >= 5 {
			near = near[:k] + near[k+1:]
		}
		req.Query = "select:" + pick().Name + "," + pick().ID() + "," + near + ",no_such_tool"
	case 1:
		names := slices.Sorted(maps.Keys(templates))
		req = Request{Template: append(names, "nosuch")[r.IntN(len(names)+1)]}
	case 2:
		// All of a server's name at times: one the key cannot see must
		// match as nothing does.
		server := pick().Server
		req = Request{Operation: "list", ServerMatch: server[:1+r.IntN(len(server))], TopK: ptr(5)}
	case 3:
		req.Visibility = access.Visibility{Tools: []string{pick().ID(), pick().Name}}
	case 4:
		// The second nearly named (its case changed, or a letter
		// dropped): a server the key cannot see is never suggested.
		near := pick().Server
		if k := r.IntN(len(near)); r.IntN(2) == 0 {
			near = near[:k] + near[k+1:]
		} else {
			near = strings.ToUpper(near)
		}
		req.Servers = []string{pick().Server, near}
	case 5:
		req.Format = tooldef.Formats[r.IntN(len(tooldef.Formats))]
		req.IncludeSchema = true
	case 6:
		req.Query = "+" + strings.ToLower(pick().Name) + " " + query
	case 7:
		name := pick().Name
		req = Request{Regex: "(?i)" + regexp.QuoteMeta(name[:1+r.IntN(len(name))]), RegexDescription: r.IntN(2) == 0, TopK: ptr(5)}
	case 8:
		req.ReadOnly, req.ExcludeDestructive, req.IncludeSchema = r.IntN(2) == 0, true, true
	}
	return req
}

func answerJSON(tb testing.TB, svc *Service, req Request) string {
	tb.Helper()
	res, err := svc.Search(context.Background(), req, access.Caller{Key: "k"})
	if err != nil {
		return "error: " + err.Error()
	}
	res.TookMS = 0
	// A search id is random; whether there is one is compared.
	if res.SearchID != "" {
		res.SearchID = "issued"
	}
	b, err := json.Marshal(res)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// TestSelectAmbiguous: select:a/b/c, when server a has tool b/c and server
// a/b has tool c, names two tools: the answer says so instead of calling
// the name unknown.
func TestSelectAmbiguous(t *testing.T) {
	cat, err := catalog.New([]catalog.Part{{Source: "t", Servers: []catalog.Server{
		{Name: "a", Tools: []catalog.Tool{{Name: "b/c", Description: "one"}}},
		{Name: "a/b", Tools: []catalog.Tool{{Name: "c", Description: "two"}}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	svc := New(Config{Embedder: embedding.NewLocal(64)})
	if _, err := svc.Build(t.Context(), &Setup{Catalog: cat}); err != nil {
		t.Fatal(err)
	}
	res := mustSearch(t, svc, Request{Query: "select:a/b/c,nope"})
	if res.Diagnostic == nil || !slices.Equal(res.Diagnostic.Ambiguous, []string{"a/b/c"}) || !slices.Equal(res.Diagnostic.Unknown, []string{"nope"}) {
		t.Errorf("select:a/b/c,nope: diagnostic %+v, want a/b/c ambiguous and nope unknown", res.Diagnostic)
	}
}

// TestQueryCacheIsPerKey: a cached query vector answers faster, so the
// cache must not be shared between keys: one key's query must not warm
// another's (it would tell the other what was asked, or that a hidden
// tool's words were embedded for someone).
func TestQueryCacheIsPerKey(t *testing.T) {
	var inputs atomic.Int64
	url := embeddingsProvider(t, func(in string) []float32 {
		inputs.Add(1)
		return []float32{float32(len(in)%5 + 1), 1, 0.5, 0.25}
	})
	svc := New(Config{Embedder: embedding.NewOpenAI(embedding.OpenAIConfig{BaseURL: url, APIKey: "k", Dimensions: 4, MaxRetries: -1})})
	keys := []access.Key{{Name: "a", Hash: sha256.Sum256([]byte("secret-a"))}, {Name: "b", Hash: sha256.Sum256([]byte("secret-b"))}}
	setup := defaultSetup(t)
	setup.Keys = keys
	if _, err := svc.Build(t.Context(), setup); err != nil {
		t.Fatal(err)
	}
	ask := func(key string) int64 {
		before := inputs.Load()
		if _, err := svc.Search(t.Context(), Request{Query: "rotate the signing keys quarterly"}, access.Caller{Key: key}); err != nil {
			t.Fatal(err)
		}
		return inputs.Load() - before
	}
	for _, step := range []struct {
		key  string
		want int64
	}{{"a", 1}, {"a", 0}, {"b", 1}, {"b", 0}} {
		if got := ask(step.key); got != step.want {
			t.Errorf("key %s: %d provider inputs, want %d", step.key, got, step.want)
		}
	}
}

// TestPartlyVisibleTemplateWarns: a template a key sees only part of is
// the operator's to check (its description may name the rest): status
// says so.
func TestPartlyVisibleTemplateWarns(t *testing.T) {
	setup := defaultSetup(t)
	setup.Keys = []access.Key{{Name: "gh", Hash: sha256.Sum256([]byte("secret-gh")), Visibility: access.Visibility{Servers: []string{"github"}}}}
	svc := New(Config{Embedder: embedding.NewLocal(64)})
	if _, err := svc.Build(t.Context(), setup); err != nil {
		t.Fatal(err)
	}
	got := svc.Status().PolicyWarnings
	if len(got) != 1 || !strings.Contains(got[0], `template "release"`) || !strings.Contains(got[0], `API key "gh" (3 of 4 tools)`) {
		t.Errorf("policy warnings = %q, want one for release (3 of its 4 tools are github's)", got)
	}
}

// TestViewVersionFollowsLearning: a restricted key's index_version (a
// view's, with no build counter) moves when what was learned for tools it
// sees changes, and only then: not for a tally that rounds the same, nor
// for what was learned for tools it cannot see.
func TestViewVersionFollowsLearning(t *testing.T) {
	full, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	tools := full.Tools()
	keys := []access.Key{{Name: "k", Hash: sha256.Sum256([]byte("secret-k")), Visibility: access.Visibility{Servers: []string{"github"}}}}
	var seen, hidden string
	for _, tl := range tools {
		switch {
		case tl.Server == "github" && seen == "":
			seen = tl.ID()
		case tl.Server != "github" && hidden == "":
			hidden = tl.ID()
		}
	}
	// A tally holds analysed terms, as learning records them.
	tally := func(word string, weight float64, hiddenWord string) *learn.Learned {
		term := func(w string) string { return analysis.English.Terms(w)[0] }
		return &learn.Learned{Terms: map[string][]learn.Weighted{
			seen:   {{Name: term(word), Weight: weight}},
			hidden: {{Name: term(hiddenWord), Weight: 4}},
		}}
	}
	version := func(l *learn.Learned) string {
		t.Helper()
		svc := hiddenRig(t, tools, nil, nil, keys, staticStore{l})
		if v := svc.cur.Load().views["k"]; v.learned.Empty() {
			t.Fatalf("nothing learned in the key's view of %v", l)
		}
		res, err := svc.Search(context.Background(), Request{Query: "merge"}, access.Caller{Key: "k"})
		if err != nil {
			t.Fatal(err)
		}
		return res.IndexVersion
	}
	base := version(tally("merge", 4, "weather"))
	for _, tt := range []struct {
		name string
		l    *learn.Learned
		same bool
	}{
		{"another term for a tool it sees", tally("spreadsheet", 4, "weather"), false},
		{"the term taught more often", tally("merge", 7, "weather"), false},
		{"a weight that rounds the same", tally("merge", 4.2, "weather"), true},
		{"another term for a tool it cannot see", tally("merge", 4, "invoice"), true},
	} {
		if got := version(tt.l); (got == base) != tt.same {
			t.Errorf("%s: index_version %s, before %s; want it to move: %v", tt.name, got, base, !tt.same)
		}
	}
}
