// Command replay measures learning from use on the shared evaluation sets,
// through the real API of the toolsearch binary, as traffic would teach
// it. For each set, the cases are split, seeded, into a past half and a
// future half. The past half is replayed as traffic: each case is one
// session of one of -keys API keys (a population of users): it searches
// (top 10), then reports the expected tools the search returned as used
// (POST /mcp/tool-search/feedback; a tool it did not return teaches
// nothing). A rebuild then takes in what was learned, and the future half
// is scored (toolsearch eval's metrics, through the HTTP API). Variants,
// each a fresh server and store:
//
//   - none: learning off;
//   - learn: the past half replayed;
//   - noise: the same, with -noise of the selections replaced by a wrong
//     tool from the top 10;
//   - empty: learning on, nothing learned (must rank exactly as none).
//
// Per-case reports go to -out; the table to stdout. evals/README.md
// records the results. With -gate (make test), it fails unless empty ranks
// every case exactly as none and learn loses no recall.
//
//	go run ./cmd/replay -bin bin/toolsearch -data ../shared/evaldata
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolsearch/toolsearch/cmd/internal/serveproc"
	"github.com/toolsearch/toolsearch/pkg/analysis"
	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/eval"
	"github.com/toolsearch/toolsearch/pkg/learn"
	"github.com/toolsearch/toolsearch/pkg/search"
)

func main() {
	ctx, stop := serveproc.Interruptible()
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "replay:", err)
		os.Exit(1)
	}
}

// The variants, in the order they are reported.
var allVariants = []string{"none", "empty", "learn", "noise"}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	bin := fs.String("bin", "bin/toolsearch", "the toolsearch binary")
	data := fs.String("data", "../shared/evaldata", "the shared evaluation sets")
	sets := fs.String("sets", "metatool,stabletoolbench,bfcl-live,seal-tools,api-bank", "sets to replay, comma-separated")
	variants := fs.String("variants", strings.Join(allVariants, ","), "variants to run, comma-separated: "+strings.Join(allVariants, ", "))
	seed := fs.Uint64("seed", 1, "the split's and the noise's seed")
	keys := fs.Int("keys", 16, "API keys the past half's sessions are spread over (the population of callers)")
	shown := fs.Int("shown", 10, "tools a past session's search shows (top_k): those it can use")
	noise := fs.Float64("noise", 0.2, "share of selections replaced by a wrong tool in the noise variant")
	out := fs.String("out", "", "directory for the per-case reports (eval -format json), one per set and variant, and each set's movements (SET.tsv, as evals/learning keeps them)")
	gate := fs.Bool("gate", false, "fail unless empty ranks every case exactly as none (ranks and confidence) and learn's recall@10 is at least none's (make test)")
	config := fs.String("learning", "", "a YAML file of learning settings under test (min_sessions: 2, ...), added to the learning section of the servers that learn")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *keys < 1 || *noise < 0 || *noise > 1 {
		return fmt.Errorf("-keys must be positive and -noise in [0,1]")
	}
	var extra []byte
	if *config != "" {
		b, err := os.ReadFile(*config)
		if err != nil {
			return err
		}
		extra = b
	}
	if *out != "" {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			return err
		}
	}
	vs := strings.Split(*variants, ",")
	fmt.Fprintf(stdout, "replay: seed %d, %d keys, noise %.0f%%; future half, recall@10 / hit@1 / MRR (multi-tool cases: recall@10)\n", *seed, *keys, *noise*100)
	fmt.Fprintf(stdout, "%-16s %-6s %-7s", "set", "cases", "")
	for _, v := range vs {
		fmt.Fprintf(stdout, " %-28s", v)
	}
	fmt.Fprintln(stdout)
	for _, set := range strings.Split(*sets, ",") {
		r := &replay{bin: *bin, dir: filepath.Join(*data, set), seed: *seed, keys: *keys, shown: *shown, noise: *noise, extra: extra, stderr: stderr}
		if err := r.load(); err != nil {
			return fmt.Errorf("%s: %w", set, err)
		}
		fmt.Fprintf(stdout, "%-16s %-6d %-7s", set, len(r.future), "")
		reports := map[string]*eval.Report{}
		for _, v := range vs {
			rep, err := r.variant(ctx, v)
			if err != nil {
				return fmt.Errorf("%s, %s: %w", set, v, err)
			}
			reports[v] = rep
			multi := multiRecall(rep, r.future)
			fmt.Fprintf(stdout, " %.3f / %.3f / %.3f (%.3f) ", rep.Summary.Recall, rep.Summary.HitAt1, rep.Summary.MRR, multi)
			if *out != "" {
				b, _ := json.MarshalIndent(rep, "", "  ")
				if err := os.WriteFile(filepath.Join(*out, set+"-"+v+".json"), b, 0o644); err != nil {
					return err
				}
			}
		}
		fmt.Fprintln(stdout)
		if none := reports["none"]; none != nil && r.taught != nil {
			anyWord, held := r.reach(none)
			n := float64(none.Summary.Expected)
			fmt.Fprintf(stdout, "%-16s %-6s %-7s reach (of none's %d misses): a word taught once %d (recall@10 at most %.3f, +%.3f); a word taught as often as learning requires %d (at most %.3f, +%.3f)\n",
				"", "", "", misses(none), anyWord, none.Summary.Recall+float64(anyWord)/n, float64(anyWord)/n, held, none.Summary.Recall+float64(held)/n, float64(held)/n)
		}
		if *out != "" && reports["none"] != nil && reports["learn"] != nil && reports["noise"] != nil {
			if err := writeMovements(filepath.Join(*out, set+".tsv"), *seed, *noise, reports); err != nil {
				return err
			}
		}
		if *gate {
			if err := checkGate(reports); err != nil {
				return fmt.Errorf("%s: gate: %w", set, err)
			}
		}
	}
	return nil
}

// checkGate holds a set's reports to make test's gate: with nothing
// learned, every case ranks exactly as with learning off; what the past
// half taught loses no recall on the future half.
func checkGate(reports map[string]*eval.Report) error {
	none, empty, learned := reports["none"], reports["empty"], reports["learn"]
	if none == nil || empty == nil || learned == nil {
		return fmt.Errorf("-gate needs the variants none, empty and learn")
	}
	if len(none.Cases) != len(empty.Cases) {
		return fmt.Errorf("empty scored %d cases, none %d", len(empty.Cases), len(none.Cases))
	}
	for i, c := range none.Cases {
		e := empty.Cases[i]
		if fmt.Sprint(c.ID, c.Ranks, c.FirstRank, deref(c.Confidence)) != fmt.Sprint(e.ID, e.Ranks, e.FirstRank, deref(e.Confidence)) {
			return fmt.Errorf("case %s ranks differently with an empty store: %v (confidence %v) against %v (%v)", c.ID, e.Ranks, deref(e.Confidence), c.Ranks, deref(c.Confidence))
		}
	}
	if learned.Summary.Recall < none.Summary.Recall {
		return fmt.Errorf("learning lowered recall@10 from %.3f to %.3f", none.Summary.Recall, learned.Summary.Recall)
	}
	return nil
}

// writeMovements writes the future-half cases whose answer moved between
// none, learn and noise (evals/learning keeps them): what a change to
// learning did, case by case.
func writeMovements(path string, seed uint64, noise float64, reports map[string]*eval.Report) error {
	none, learned, noisy := reports["none"], reports["learn"], reports["noise"]
	if len(learned.Cases) != len(none.Cases) || len(noisy.Cases) != len(none.Cases) {
		return fmt.Errorf("%s: the variants scored different cases", path)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# future-half cases whose answer moved (replay, seed %d): found in the top 10 and first rank (0: none) with learning off, learning, learning with %.0f%% noise\n", seed, noise*100)
	b.WriteString("case\texpected\tfound_none\tfound_learn\tfound_noise\tfirst_none\tfirst_learn\tfirst_noise\n")
	for i, c := range none.Cases {
		l, n := learned.Cases[i], noisy.Cases[i]
		if c.Found == l.Found && c.Found == n.Found && c.FirstRank == l.FirstRank && c.FirstRank == n.FirstRank {
			continue
		}
		fmt.Fprintf(&b, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", c.ID, c.Expected, c.Found, l.Found, n.Found, c.FirstRank, l.FirstRank, n.FirstRank)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func deref(f *float32) float32 {
	if f == nil {
		return -1
	}
	return *f
}

// replay is one set's protocol.
type replay struct {
	bin          string
	dir          string
	seed         uint64
	keys         int
	shown        int
	noise        float64
	extra        []byte
	stderr       io.Writer
	cat          *catalog.Catalog
	past, future []eval.Case
	// taught counts the past sessions of the learn variant in which a key
	// reported a tool (server/name) used after a query with the term:
	// every word learning could ever hold for it, before its filters.
	taught map[taughtBy]float64
}

// taughtBy is a tool, a term of a query that led to it, and the key.
type taughtBy struct {
	tool, term string
	key        int
}

// load reads the set and splits it, seeded.
func (r *replay) load() error {
	cases, err := eval.LoadCases(filepath.Join(r.dir, "cases.jsonl"))
	if err != nil {
		return err
	}
	parts, err := catalog.ReadParts([]string{filepath.Join(r.dir, "catalog.json")}, "")
	if err != nil {
		return err
	}
	if r.cat, err = catalog.New(parts); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(r.seed, 11))
	rng.Shuffle(len(cases), func(i, j int) { cases[i], cases[j] = cases[j], cases[i] })
	half := len(cases) / 2
	r.past, r.future = cases[:half], cases[half:]
	return nil
}

// variant runs one variant on a fresh server and store and scores the
// future half.
func (r *replay) variant(ctx context.Context, v string) (*eval.Report, error) {
	srv, err := r.start(ctx, v != "none")
	if err != nil {
		return nil, err
	}
	defer srv.stop()
	if v == "learn" || v == "noise" {
		noise := 0.0
		if v == "noise" {
			noise = r.noise
		}
		if err := r.teach(ctx, srv, noise); err != nil {
			return nil, err
		}
		if err := srv.post(ctx, "/mcp/tool-search/rebuild", adminToken, nil, nil); err != nil {
			return nil, fmt.Errorf("rebuild: %w", err)
		}
	}
	searcher := &eval.HTTPSearcher{BaseURL: srv.Base, Token: keyName(0)}
	return eval.Run(ctx, r.cat, r.future, searcher, eval.Options{K: 10})
}

const adminToken = "replay-admin-token"

func keyName(i int) string { return "replay-key-" + strconv.Itoa(i) }

// teach replays the past half: one session a case, spread over the keys.
func (r *replay) teach(ctx context.Context, srv *server, noise float64) error {
	want, err := eval.Resolve(r.cat, r.past)
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(r.seed, 13))
	events := int64(0)
	for i, c := range r.past {
		req := c.Search(r.shown, eval.Options{K: r.shown})
		var ans struct {
			SearchID string `json:"search_id"`
			Tools    []struct {
				Name   string `json:"name"`
				Server string `json:"server"`
			} `json:"tools"`
		}
		key := keyName(i % r.keys)
		if err := srv.post(ctx, "/mcp/tool-search", key, req, &ans); err != nil {
			return fmt.Errorf("case %s: %w", c.ID, err)
		}
		if ans.SearchID == "" {
			continue
		}
		var returned, used []string
		for _, t := range ans.Tools {
			returned = append(returned, t.Server+"/"+t.Name)
		}
		expected := make([]string, len(want[i]))
		for j, k := range want[i] {
			expected[j] = k.Server + "/" + k.Name
		}
		for _, id := range returned {
			if !slices.Contains(expected, id) {
				continue
			}
			if noise > 0 && rng.Float64() < noise {
				// A wrong pick: another tool the search returned.
				var wrong []string
				for _, o := range returned {
					if !slices.Contains(expected, o) {
						wrong = append(wrong, o)
					}
				}
				if len(wrong) > 0 {
					id = wrong[rng.IntN(len(wrong))]
				}
			}
			if !slices.Contains(used, id) {
				used = append(used, id)
			}
		}
		if len(used) == 0 {
			continue
		}
		if noise == 0 {
			r.learnt(c.Query, used, i%r.keys)
		}
		body := map[string]any{"search_id": ans.SearchID, "used": used}
		var fb struct {
			Learned int `json:"learned"`
		}
		if err := srv.post(ctx, "/mcp/tool-search/feedback", key, body, &fb); err != nil {
			return fmt.Errorf("case %s: feedback: %w", c.ID, err)
		}
		if fb.Learned > 0 {
			events++
		}
	}
	// The service writes events to its store in the background: wait until
	// they are in before the rebuild reads them.
	return srv.settle(ctx, events)
}

// learnt records that key's session of the past query taught the tools
// used.
func (r *replay) learnt(query string, used []string, key int) {
	if r.taught == nil {
		r.taught = map[taughtBy]float64{}
	}
	terms := analysis.English.Terms(query)
	for _, id := range used {
		for _, t := range terms {
			r.taught[taughtBy{id, t, key}]++
		}
	}
}

// reach counts the expected tools of the future half that none leaves out
// of the top 10 and that the learned field could bring in at all: a
// learned word adds to a tool's score only for a query holding it, so a
// tool no past query taught, or taught only words this query lacks,
// gains nothing from it. anyWord counts a word taught once; held, a word
// the past sessions' tally passes (learn.Tally with learning's defaults:
// its thresholds, its cap per caller and its words per tool). Both are
// generous bounds on what the field can add to recall@10, every such
// tool counted as found and the word filters ignored.
func (r *replay) reach(none *eval.Report) (anyWord, held int) {
	now := time.Now()
	tally := learn.NewTally(learn.Config{}, now)
	taught := map[[2]string]bool{}
	for k, sessions := range r.taught {
		tally.Term(k.tool, k.term, learn.Evidence{Weight: sessions, Updated: now})
		taught[[2]string{k.tool, k.term}] = true
	}
	learned := tally.Learned().Terms
	query := map[string]string{}
	for _, c := range r.future {
		query[c.ID] = c.Query
	}
	for _, c := range none.Cases {
		terms := analysis.English.Terms(query[c.ID])
		for id, rank := range c.Ranks {
			if rank >= 1 && rank <= 10 {
				continue
			}
			if slices.ContainsFunc(terms, func(t string) bool { return taught[[2]string{id, t}] }) {
				anyWord++
			}
			if slices.ContainsFunc(learned[id], func(w learn.Weighted) bool { return slices.Contains(terms, w.Name) }) {
				held++
			}
		}
	}
	return anyWord, held
}

// misses is the number of expected tools outside the top 10.
func misses(rep *eval.Report) int {
	n := 0
	for _, c := range rep.Cases {
		n += c.Expected - c.Found
	}
	return n
}

// multiRecall is recall@10 over the future cases with two or more expected
// tools.
func multiRecall(rep *eval.Report, cases []eval.Case) float64 {
	multi := map[string]bool{}
	for _, c := range cases {
		if len(c.Expected) > 1 {
			multi[c.ID] = true
		}
	}
	var found, expected int
	for _, cr := range rep.Cases {
		if multi[cr.ID] {
			found += cr.Found
			expected += cr.Expected
		}
	}
	if expected == 0 {
		return 0
	}
	return float64(found) / float64(expected)
}

// server is one toolsearch process with its own store.
type server struct {
	*serveproc.Server
	work string
}

func (r *replay) start(ctx context.Context, learning bool) (*server, error) {
	work, err := os.MkdirTemp("", "replay")
	if err != nil {
		return nil, err
	}
	cfg := "learning:\n  enabled: false\n"
	if learning {
		// The replay rebuilds when it is done, so the periodic refresh
		// stays out of the way.
		cfg = fmt.Sprintf("learning:\n  path: %s\n  refresh: 1h\n", filepath.Join(work, "learned.db"))
		for _, line := range strings.Split(strings.TrimSpace(string(r.extra)), "\n") {
			if strings.TrimSpace(line) != "" {
				cfg += "  " + line + "\n"
			}
		}
	}
	cfg += "limits:\n  search_rate: -1\n"
	if err := os.WriteFile(filepath.Join(work, "config.yaml"), []byte(cfg), 0o644); err != nil {
		os.RemoveAll(work)
		return nil, err
	}
	keys := make([]string, r.keys)
	for i := range keys {
		keys[i] = keyName(i)
	}
	srv, err := serveproc.Start(ctx, r.bin, []string{"TOOLSEARCH_API_KEYS=" + strings.Join(keys, ","), "TOOLSEARCH_ADMIN_TOKEN=" + adminToken}, 2*time.Minute,
		"-metrics-addr", "off", "-log-level", "warn", "-catalog", filepath.Join(r.dir, "catalog.json"), "-config", filepath.Join(work, "config.yaml"))
	if err != nil {
		os.RemoveAll(work)
		return nil, err
	}
	return &server{Server: srv, work: work}, nil
}

func (s *server) stop() {
	s.Stop()
	os.RemoveAll(s.work)
}

// post sends body as JSON with the bearer token and decodes the answer
// into out (when not nil).
func (s *server) post(ctx context.Context, path, token string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.Base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: %s: %.300s", path, resp.Status, data)
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

// settle waits until the status page counts every event sent as recorded
// (or dropped, which would be a failure of the replay).
func (s *server) settle(ctx context.Context, events int64) error {
	for range 1200 {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.Base+"/mcp/tool-search/status", nil)
		req.Header.Set("Authorization", "Bearer "+adminToken)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		var st search.Status
		err = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if st.Learning == nil {
			return fmt.Errorf("status has no learning section")
		}
		if st.Learning.Dropped > 0 {
			return fmt.Errorf("%d learning events dropped", st.Learning.Dropped)
		}
		if st.Learning.Recorded >= events {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("learning events not all recorded after two minutes")
}
