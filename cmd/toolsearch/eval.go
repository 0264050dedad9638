package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/config"

	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/eval"
	"github.com/toolsearch/toolsearch/pkg/search"
)

// serviceSearcher runs eval queries in-process against a built service.
type serviceSearcher struct{ svc *search.Service }

func (s serviceSearcher) Search(ctx context.Context, req search.Request) (eval.Answer, error) {
	res, err := s.svc.Search(ctx, req, access.Caller{})
	if err != nil {
		return eval.Answer{}, err
	}
	ans := eval.Answer{Tools: make([]eval.ToolKey, len(res.Tools)), Confidence: res.Confidence}
	for i, h := range res.Tools {
		ans.Tools[i] = eval.ToolKey{Server: h.Server, Name: h.Name}
	}
	return ans, nil
}

// buildService loads catalog and config and builds the index once,
// in-process. If the embedder fails, the keyword index is used and stderr
// says so. Its callers search as no key (eval, query) or read the index
// alone (index, lint), so the views of keys that see only some tools are
// not built (search.Config.NoViews), and a search is the operator's, of
// the whole catalog, whatever keys the config names (Config.Operator):
// when searches is true, stderr says so where there are keys.
func buildService(ctx context.Context, idx *indexFlags, searches bool, stderr io.Writer) (*search.Service, *catalog.Catalog, error) {
	emb, err := idx.newEmbedder(slog.New(slog.NewTextHandler(stderr, nil)))
	if err != nil {
		return nil, nil, err
	}
	setup, err := idx.loader()(ctx)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := idx.searchConfig(emb)
	if err != nil {
		return nil, nil, err
	}
	cfg.NoViews, cfg.Operator = true, true
	if searches && len(setup.Keys) > 0 {
		fmt.Fprintln(stderr, "toolsearch: the API keys configured do not apply here: searches see the whole catalog")
	}
	svc := search.New(cfg)
	snap, err := svc.Build(ctx, setup)
	if err != nil {
		return nil, nil, err
	}
	if !snap.Semantic() {
		fmt.Fprintf(stderr, "toolsearch: degraded, keyword ranking only: %s\n", snap.EmbedError)
	}
	return svc, snap.Catalog, nil
}

func runEval(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	e := &env{getenv: getenv}
	fs := newFlagSet("eval", stderr)
	casesPath := fs.String("cases", e.str("TOOLSEARCH_EVAL_CASES", ""), "labelled cases `file`: JSONL, JSON or YAML (required unless -self) [TOOLSEARCH_EVAL_CASES]")
	self := fs.Bool("self", false, "self-retrieval audit: query every tool with its own description and its name's words; no cases needed")
	k := fs.Int("k", e.int("TOOLSEARCH_EVAL_K", 10), "score the top `k` tools [TOOLSEARCH_EVAL_K]")
	minRecall := fs.Float64("min-recall", 0, "exit 1 when recall@k (expected found / expected) is below this")
	url := fs.String("url", e.str("TOOLSEARCH_EVAL_URL", ""), "evaluate a running server at this base `url` instead of in-process [TOOLSEARCH_EVAL_URL]")
	wait := fs.Duration("wait", e.duration("TOOLSEARCH_EVAL_WAIT", 0), "with -url, wait up to this long for the server's /readyz before evaluating (a Job started beside a rollout) [TOOLSEARCH_EVAL_WAIT]")
	format := fs.String("format", "text", "report format: "+strings.Join(eval.Formats, ", "))
	split := fs.String("split", "all", "run only the dev or test half of the cases (by case id hash), or all")
	misspell := fs.Float64("misspell", 0, "make typing errors in this `share` (0 to 1) of each query's words of five letters or more, the same in every run: how recall holds up when callers misspell")
	mode := fs.String("mode", "", "ranking mode for cases that do not set one: hybrid, semantic or keyword; default: the service's")
	out := fs.String("out", "", "write the report to this `file` instead of standard output")
	baseline := fs.String("baseline", "", "compare with a report written earlier with -format json, and list every case that got worse")
	failOnRegression := fs.Bool("fail-on-regression", false, "with -baseline, exit 1 if any expected tool ranks worse than in the baseline")
	idx := addIndexFlags(fs, e, true)
	if err := parseIndex(fs, e, idx, args, false); err != nil {
		return err
	}
	warnEnv(stderr, idx)
	var err error
	fail := func(code int, err error) error {
		fmt.Fprintln(stderr, "toolsearch eval:", err)
		return exitCode(code)
	}
	if *casesPath == "" && !*self {
		return fail(2, errors.New("-cases is required (or -self)"))
	}
	if *casesPath != "" && *self {
		return fail(2, errors.New("-cases and -self cannot be combined"))
	}
	if *minRecall < 0 || *minRecall > 1 {
		return fail(2, fmt.Errorf("-min-recall must be between 0 and 1, got %v", *minRecall))
	}
	if !search.Mode(*mode).Requestable() {
		return fail(2, fmt.Errorf("-mode must be hybrid, semantic or keyword, got %q", *mode))
	}
	if *self && *misspell != 0 {
		return fail(2, errors.New("-misspell misspells the queries of -cases; -self has none"))
	}
	if *failOnRegression && *baseline == "" {
		// Read as a gate, it would pass every run having compared nothing.
		return fail(2, errors.New("-fail-on-regression needs -baseline FILE"))
	}
	if !validFormat(*format) {
		return fail(2, fmt.Errorf("-format must be one of %s, got %q", strings.Join(eval.Formats, ", "), *format))
	}
	if *url != "" {
		if err := eval.CheckBaseURL(*url); err != nil {
			return fail(2, fmt.Errorf("-url: %w", err))
		}
	}
	var cases []eval.Case
	if !*self {
		cases, err = eval.LoadCases(*casesPath)
		if err == nil {
			cases, err = eval.Split(cases, *split)
		}
		if err == nil && *misspell != 0 {
			cases, err = eval.Misspell(cases, *misspell)
		}
		if err != nil {
			return fail(2, err)
		}
	}
	// The baseline and the report's file are checked before the eval
	// runs, which against a server or a provider takes minutes: a wrong
	// path fails at once (see checkOut).
	var base *eval.Report
	if *baseline != "" {
		if base, err = eval.LoadReport(*baseline); err != nil {
			return fail(2, err)
		}
	}
	if *out != "" {
		if err := checkOut(*out); err != nil {
			return fail(2, err)
		}
	}

	var searcher eval.Searcher
	var cat *catalog.Catalog
	where := "in-process"
	if *url != "" {
		// The catalog resolves the cases' expected names; the server ranks.
		setup, err := idx.loader()(ctx)
		if err != nil {
			return fail(2, err)
		}
		cat = setup.Catalog
		token, err := config.Secret(getenv, "TOOLSEARCH_API_KEY")
		if err != nil {
			return fail(2, err)
		}
		if *wait > 0 {
			if err := waitReady(ctx, *url, *wait); err != nil {
				return fail(2, err)
			}
		}
		searcher = &eval.HTTPSearcher{BaseURL: *url, Token: token}
		where = *url
	} else {
		svc, c, err := buildService(ctx, idx, true, stderr)
		if err != nil {
			return fail(2, err) // only loading can fail: a catalog or config problem
		}
		searcher, cat = serviceSearcher{svc}, c
		where = "in-process, " + idx.embedder
	}

	if *self {
		cases = eval.SelfCases(cat)
		*casesPath = "self-retrieval"
	}
	if base != nil {
		if err := eval.CheckBaseline(base, cases, *k); err != nil {
			return fail(2, fmt.Errorf("-baseline %s: %w", *baseline, err))
		}
	}
	rep, err := eval.Run(ctx, cat, cases, searcher, eval.Options{K: *k, Mode: *mode, Progress: progress(stderr, time.Now)})
	if err != nil {
		if errors.Is(err, eval.ErrBadInput) || errors.Is(err, eval.ErrRefused) {
			return fail(2, err)
		}
		return fail(1, err)
	}
	// Searches that fail count as misses; when all of them did, the run
	// measured the server's failure, not its recall, whatever the gate.
	if failed := slices.IndexFunc(rep.Cases, func(c eval.CaseResult) bool { return c.Error == "" }); failed < 0 && len(rep.Cases) > 0 {
		return fail(1, fmt.Errorf("every search failed, so nothing was measured; the first: %s", rep.Cases[0].Error))
	}
	if base != nil {
		rep.Regressions = eval.Compare(base, rep)
		if rep.Regressions == nil {
			rep.Regressions = []eval.Regression{}
		}
	}
	// The report is opened only now, so a run that failed has left the
	// last one as it was.
	w := stdout
	var report *os.File
	if *out != "" {
		if report, err = os.Create(*out); err != nil {
			return fail(2, fmt.Errorf("-out %s: %w", *out, err))
		}
		defer report.Close()
		w = report
	}
	catName := "embedded default catalog"
	if len(idx.catalogs.values) > 0 {
		catName = strings.Join(idx.catalogs.values, ",")
	}
	title := fmt.Sprintf("%s on %s (%s)", *casesPath, catName, where)
	if *split != "all" {
		title = fmt.Sprintf("%s [%s half]", title, *split)
	}
	if *misspell > 0 {
		title = fmt.Sprintf("%s [%g of long words misspelt]", title, *misspell)
	}
	if err := eval.Write(w, rep, *format, title); err != nil {
		return fail(1, err)
	}
	if report != nil {
		if err := report.Close(); err != nil {
			return fail(1, fmt.Errorf("-out %s: %w", *out, err))
		}
		fmt.Fprintf(stdout, "recall@%d %.3f (%d/%d), report written to %s\n", *k, rep.Summary.Recall, rep.Summary.Found, rep.Summary.Expected, *out)
	}
	failed := false
	if rep.Summary.Recall < *minRecall {
		fmt.Fprintf(stderr, "toolsearch eval: recall@%d %.3f is below -min-recall %.3f\n", *k, rep.Summary.Recall, *minRecall)
		failed = true
	}
	if *failOnRegression && len(rep.Regressions) > 0 {
		fmt.Fprintf(stderr, "toolsearch eval: %d expected tools rank worse than in %s\n", len(rep.Regressions), *baseline)
		failed = true
	}
	if failed {
		return exitCode(1)
	}
	return nil
}

func validFormat(f string) bool {
	for _, v := range eval.Formats {
		if f == v {
			return true
		}
	}
	return false
}

// waitReady polls base's /readyz once a second until it answers 200 or
// limit passes. A certificate that does not verify ends the wait at once,
// and so does an answer no starting server gives (a 400, a 401, a 403):
// a server coming up answers 503, or a proxy before it 502, 504 or 404,
// or nothing answers, until it is ready; waiting does not make a
// certificate trusted or an http:// URL to an HTTPS server right. The
// Job ran its whole 5 minutes against a server that answered each try
// "Client sent an HTTP request to an HTTPS server".
func waitReady(ctx context.Context, base string, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	last := "no answer"
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/readyz", nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			said, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			if c := resp.StatusCode; c >= 400 && c < 500 && c != http.StatusNotFound && c != http.StatusRequestTimeout && c != http.StatusTooManyRequests {
				return fmt.Errorf("%s/readyz answered %s (%s), which no starting toolsearch does%s", strings.TrimRight(base, "/"), resp.Status, quoteLine(said), httpsHint(base, said))
			}
			last = resp.Status
		} else if ctx.Err() == nil {
			if _, ok := errors.AsType[*tls.CertificateVerificationError](err); ok {
				return fmt.Errorf("%s: %w (SSL_CERT_FILE names the CA file to trust)", base, err)
			}
			last = err.Error()
		}
		t := time.NewTimer(time.Second)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%s not ready after %s: %s", base, limit, last)
		case <-t.C:
		}
	}
}

// quoteLine is the first line of an answer's body, quoted, at most 120
// bytes of it.
func quoteLine(b []byte) string {
	line, _, _ := strings.Cut(string(b), "\n")
	if len(line) > 120 {
		line = line[:120] + "..."
	}
	return strconv.Quote(strings.TrimSpace(line))
}

// httpsHint says what to change when an http:// URL reached a server
// that speaks HTTPS: Go's servers and nginx answer it 400 and say so.
func httpsHint(base string, said []byte) string {
	if strings.HasPrefix(base, "http://") && bytes.Contains(bytes.ToUpper(said), []byte("HTTPS")) {
		return ": the server speaks HTTPS; use an https:// URL"
	}
	return ""
}

// progress reports a long eval's progress on a terminal: cases done, their
// rate and the time left, rewritten in place at most ten times a second.
// Anything else (a CI log, a file) gets nothing: the report says it all.
func progress(w io.Writer, now func() time.Time) func(done, total int) {
	if f, ok := w.(*os.File); !ok || !isTerminal(f) {
		return nil
	}
	start, last := now(), time.Time{}
	return func(done, total int) {
		t := now()
		if t.Sub(last) < 100*time.Millisecond && done < total {
			return
		}
		last = t
		rate := float64(done) / t.Sub(start).Seconds()
		eta := time.Duration(float64(total-done) / rate * float64(time.Second)).Round(time.Second)
		fmt.Fprintf(w, "\r\x1b[Keval: %d/%d cases, %.0f/s, about %s left", done, total, rate, eta)
		if done+1 >= total {
			fmt.Fprint(w, "\r\x1b[K")
		}
	}
}

// isTerminal reports whether f is a character device: a terminal, not a
// pipe or a file.
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
