// Command loadgen measures POST /mcp/tool-search throughput and latency
// beside a no-op route on the same router, in the same run, so the result
// is a ratio that survives a noisy machine. By default it serves the
// embedded default catalog in-process on loopback with the local
// embedder; -url drives a running server (which then needs no /noop).
// In-process it also reports the process's CPU time per request in each
// phase: the clients do not keep two cores busy (about 1.5 to 1.8 here),
// so a throughput ratio mixes cost with idle time, while CPU per request
// is the cost alone.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"sync"
	"time"

	"github.com/toolsearch/toolsearch/cmd/internal/serveproc"
	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/config"
	"github.com/toolsearch/toolsearch/pkg/embedding"
	"github.com/toolsearch/toolsearch/pkg/eval"
	"github.com/toolsearch/toolsearch/pkg/httpapi"
	"github.com/toolsearch/toolsearch/pkg/learn"
	"github.com/toolsearch/toolsearch/pkg/search"
)

func main() {
	ctx, stop := serveproc.Interruptible()
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

type result struct {
	name     string
	requests int
	errors   int
	took     time.Duration
	cpu      time.Duration // the process's CPU time over the phase, when it is the server's (in-process)
	lat      []time.Duration
}

func (r result) String() string {
	slices.Sort(r.lat)
	pct := func(p float64) time.Duration {
		if len(r.lat) == 0 {
			return 0
		}
		return r.lat[min(len(r.lat)-1, int(p*float64(len(r.lat))))]
	}
	cpu := ""
	if r.cpu > 0 {
		cpu = fmt.Sprintf("  CPU %5.2f cores, %5.1f µs/req", r.cpu.Seconds()/r.took.Seconds(), 1e6*r.cpuPerRequest())
	}
	return fmt.Sprintf("%-8s %8d req  %9.0f req/s  p50 %8s  p99 %8s%s  errors %d",
		r.name, r.requests, float64(r.requests)/r.took.Seconds(), pct(0.50).Round(time.Microsecond), pct(0.99).Round(time.Microsecond), cpu, r.errors)
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	conc := fs.Int("c", 16, "concurrent clients")
	dur := fs.Duration("d", 10*time.Second, "duration of each phase")
	url := fs.String("url", "", "a running server's base URL (default: serve in-process)")
	cases := fs.String("cases", "evals/cases.jsonl", "queries to cycle through, from an eval cases file")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the last search phase to this file, and of the last no-op phase to this file with .noop added, to compare what a search costs beyond the no-op")
	mode := fs.String("mode", "", "ranking mode to request: hybrid (the default), semantic or keyword")
	rounds := fs.Int("rounds", 2, "rounds of a bare phase, a no-op phase and a search phase, each -d long")
	learning := fs.Bool("learning", false, "serve in-process with learning on (a file store in a temporary directory), as serve runs by default")
	callers := fs.Int("callers", 0, "serve in-process with this many API keys, client i sending key i mod callers: each its own caller, as learning counts them (0: none, all anonymous from one address)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *rounds < 1 || *conc < 1 || *dur <= 0 {
		return fmt.Errorf("-rounds, -c and -d must be positive")
	}
	if *callers < 0 || (*callers > 0 && *url != "") {
		return fmt.Errorf("-callers: a number of keys for the in-process server, not with -url")
	}
	queries, err := loadQueries(*cases, *mode)
	if err != nil {
		return err
	}
	base := *url
	if base == "" {
		addr, stop, err := serve(ctx, queries, *learning, *callers)
		if err != nil {
			return err
		}
		defer stop()
		base = "http://" + addr
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: *conc, MaxConnsPerHost: *conc}}
	fmt.Fprintf(stdout, "loadgen: %d clients, %s per phase, %d rounds (bare, no-op, then search), %d distinct queries, mode %q, %s\n", *conc, *dur, *rounds, len(queries), *mode, base)
	ld := load{client: client, base: base, queries: queries, conc: *conc, dur: *dur, callers: *callers, measureCPU: *url == "" && cpuMeasured}
	phase := func(name, path string) result { return ld.drive(ctx, name, path) }
	// Interleave so drift on a shared machine hits both alike.
	var bare, noop, srch []result
	for round := range *rounds {
		bare = append(bare, phase("bare", "/bare"))
		last := *cpuprofile != "" && round == *rounds-1
		r, err := profiled(last, *cpuprofile+".noop", func() result { return phase("noop", "/noop") })
		if err != nil {
			return err
		}
		noop = append(noop, r)
		if r, err = profiled(last, *cpuprofile, func() result { return phase("search", "/mcp/tool-search") }); err != nil {
			return err
		}
		srch = append(srch, r)
	}
	if *cpuprofile != "" {
		// A profile's samples read per request only against its own phase's count.
		fmt.Fprintf(stdout, "profiled: %s %d search requests, %s.noop %d no-op requests\n", *cpuprofile, srch[len(srch)-1].requests, *cpuprofile, noop[len(noop)-1].requests)
	}
	b, n, s := merge(bare), merge(noop), merge(srch)
	fmt.Fprintln(stdout, b)
	fmt.Fprintln(stdout, n)
	fmt.Fprintln(stdout, s)
	// Each round's ratio compares phases a few seconds apart; their median
	// resists a neighbour's burst better than the pooled totals do.
	ratio := func(num, den []result) (float64, []float64) {
		rs := make([]float64, len(num))
		for i := range num {
			rs[i] = num[i].rate() / den[i].rate()
		}
		return median(rs), rs
	}
	m, rs := ratio(srch, noop)
	fmt.Fprintf(stdout, "search throughput / no-op throughput = %.2f (median of rounds; pooled %.2f; rounds %s)\n", m, s.rate()/n.rate(), fmtRatios(rs))
	m, rs = ratio(noop, bare)
	fmt.Fprintf(stdout, "no-op throughput / bare throughput = %.2f (median of rounds; pooled %.2f; rounds %s)\n", m, n.rate()/b.rate(), fmtRatios(rs))
	if s.cpu > 0 {
		// Served in-process, the process's CPU time is the server's and
		// the clients'. Per request it is what the throughputs would be
		// on a machine of its own: time taken by a neighbour (or the
		// hypervisor) is not the process's, so it varies less.
		rs = make([]float64, len(srch))
		for i := range srch {
			rs[i] = noop[i].cpuPerRequest() / srch[i].cpuPerRequest()
		}
		fmt.Fprintf(stdout, "no-op CPU per request / search CPU per request = %.2f (median of rounds; pooled %.2f; rounds %s)\n", median(rs), n.cpuPerRequest()/s.cpuPerRequest(), fmtRatios(rs))
	}
	if s.errors > 0 || n.errors > 0 || b.errors > 0 {
		return fmt.Errorf("%d search, %d no-op and %d bare requests failed", s.errors, n.errors, b.errors)
	}
	return nil
}

func (r result) rate() float64 { return float64(r.requests) / r.took.Seconds() }

func (r result) cpuPerRequest() float64 { return r.cpu.Seconds() / float64(r.requests) }

func median(xs []float64) float64 {
	xs = slices.Sorted(slices.Values(xs))
	if len(xs)%2 == 1 {
		return xs[len(xs)/2]
	}
	return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
}

func fmtRatios(xs []float64) string {
	var b bytes.Buffer
	for i, x := range xs {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%.2f", x)
	}
	return b.String()
}

func merge(rs []result) result {
	out := result{name: rs[0].name}
	for _, r := range rs {
		out.requests += r.requests
		out.errors += r.errors
		out.took += r.took
		out.cpu += r.cpu
		out.lat = append(out.lat, r.lat...)
	}
	return out
}

// load is how every phase is driven: conc clients, for dur each, cycling
// through queries; with callers, client i sends caller i mod callers's
// key; with measureCPU, the process's CPU time is the server's too.
type load struct {
	client     *http.Client
	base       string
	queries    [][]byte
	conc       int
	dur        time.Duration
	callers    int
	measureCPU bool
}

// drive runs one phase: POSTs to path until ld.dur has passed.
func (ld load) drive(ctx context.Context, name, path string) result {
	client, url, queries, conc, callers := ld.client, ld.base+path, ld.queries, ld.conc, ld.callers
	ctx, cancel := context.WithTimeout(ctx, ld.dur)
	defer cancel()
	var mu sync.Mutex
	res := result{name: name}
	var wg sync.WaitGroup
	start, cpu := time.Now(), processCPU()
	for w := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lat []time.Duration
			errs := 0
			auth := ""
			if callers > 0 {
				auth = "Bearer " + callerKey(w%callers)
			}
			for i := w; ctx.Err() == nil; i += conc {
				t := time.Now()
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(queries[i%len(queries)]))
				req.Header.Set("Content-Type", "application/json")
				if auth != "" {
					req.Header.Set("Authorization", auth)
				}
				resp, err := client.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						errs++
					}
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					errs++
					continue
				}
				lat = append(lat, time.Since(t))
			}
			mu.Lock()
			res.lat = append(res.lat, lat...)
			res.errors += errs
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.took = time.Since(start)
	if ld.measureCPU {
		res.cpu = processCPU() - cpu
	}
	res.requests = len(res.lat)
	return res
}

func loadQueries(path, mode string) ([][]byte, error) {
	cases, err := eval.LoadCases(path)
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for _, c := range cases {
		if c.Query == "" {
			continue
		}
		req := map[string]any{"query": c.Query, "top_k": 10}
		if mode != "" {
			req["mode"] = mode
		}
		b, _ := json.Marshal(req)
		out = append(out, b)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no queries", path)
	}
	return out, nil
}

// serve starts the real router on loopback with the default catalog and
// config, the local embedder, and the baseline routes: the no-op answers
// each of queries with its search's answer, pre-encoded at start, so it
// writes what the search writes (answers differ in size by a fifth).
// With learning, searches are remembered for feedback as serve's are by
// default. Without callers, all come from one address, which past its
// share of the pending window gets answers without a search id; with
// callers keys, each client is its own caller and every answer is
// remembered, as in traffic from many clients.
func serve(ctx context.Context, queries [][]byte, learning bool, callers int) (_ string, _ func(), err error) {
	load := func(context.Context) (*search.Setup, error) {
		p, err := config.DefaultPolicy()
		if err != nil {
			return nil, err
		}
		for i := range callers {
			p.Keys = append(p.Keys, access.Key{Name: fmt.Sprintf("loadgen-%d", i), Hash: access.HashSecret(callerKey(i))})
		}
		return p, nil
	}
	cfg := search.Config{Embedder: embedding.NewLocal(0), Load: load}
	closeStore := func() {}
	defer func() {
		if err != nil {
			closeStore()
		}
	}()
	if learning {
		dir, err := os.MkdirTemp("", "loadgen")
		if err != nil {
			return "", nil, err
		}
		store, err := learn.Open(filepath.Join(dir, "learned.db"), learn.Config{}, nil)
		if err != nil {
			os.RemoveAll(dir)
			return "", nil, err
		}
		cfg.Learning = &search.Learning{Store: store}
		closeStore = func() { store.Close(); os.RemoveAll(dir) }
	}
	svc := search.New(cfg)
	if _, err := svc.Rebuild(ctx); err != nil {
		return "", nil, err
	}
	var caller access.Caller
	if callers > 0 {
		caller.Key = "loadgen-0"
	}
	answers := make(map[string][]byte, len(queries))
	for _, q := range queries {
		var req search.Request
		if err := json.Unmarshal(q, &req); err != nil {
			return "", nil, err
		}
		res, err := svc.Search(ctx, req, caller)
		if err != nil {
			return "", nil, err
		}
		// encoding/json writes what the server's encoder does (httpapi's
		// TestMarshalMatchesEncodingJSON), newline and all.
		b, err := json.Marshal(res)
		if err != nil {
			return "", nil, err
		}
		answers[req.Query] = append(b, '\n')
	}
	noop := func(req search.Request) []byte { return answers[req.Query] }
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: httpapi.NewServer(svc, httpapi.Options{Noop: noop}), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	return ln.Addr().String(), func() { srv.Close(); closeStore() }, nil
}

// callerKey is the API key of the i-th caller of -callers.
func callerKey(i int) string { return fmt.Sprintf("loadgen-key-%d", i) }

// profiled runs drive, under a CPU profile written to path when on.
func profiled(on bool, path string, drive func() result) (result, error) {
	if !on {
		return drive(), nil
	}
	f, err := os.Create(path)
	if err != nil {
		return result{}, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return result{}, err
	}
	r := drive()
	pprof.StopCPUProfile()
	return r, f.Close()
}
