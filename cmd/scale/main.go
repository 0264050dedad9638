// Command scale measures toolsearch at catalog sizes from tens to a
// hundred thousand tools, as an operator runs it: the binary started as
// its own process on a generated catalog (package catgen), with the local
// embedder or an OpenAI-compatible provider (a fake one served here, on
// loopback, at -dim dimensions). For each size it reports the time from
// start to /readyz answering 200, the resident set once ready, the peak
// resident set of the start-up, the peaks of three rebuilds (POST
// /mcp/tool-search/rebuild: of the same tools, as learning makes; with
// the tools of three servers revised, as upstream refreshes make; then
// with every tool's text changed, so a provider embeds them all again),
// the peak of a whole-catalog report (the console's catalog view) and
// the median latency of a search over HTTP. -text makes each tool's text
// longer (catgen.Spec.Text), since memory grows with the catalog's bytes
// (status' catalog.bytes, which it reports) as well as with its tools;
// -script cyrillic writes the descriptions in Cyrillic letters
// (catgen.Spec.Script), whose text is read by other code than English.
//
// Memory is quoted against the vectors' own bytes (N×D×4) and time
// against -baseline, another binary measured in the same run, rounds
// alternating between the two, so the ratios survive a shared, noisy
// machine. BENCHMARKS.md records the results; make load runs it.
//
//	go run ./cmd/scale -bin bin/toolsearch -baseline /tmp/old -sizes 73,4000,10000,100000
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolsearch/toolsearch/cmd/internal/peakmem"
	"github.com/toolsearch/toolsearch/cmd/internal/serveproc"
	"github.com/toolsearch/toolsearch/pkg/catgen"
	"github.com/toolsearch/toolsearch/pkg/sizing"
)

func main() {
	ctx, stop := serveproc.Interruptible()
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "scale:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("scale", flag.ContinueOnError)
	fs.SetOutput(stderr)
	bin := fs.String("bin", "bin/toolsearch", "the toolsearch binary to measure")
	baseline := fs.String("baseline", "", "another toolsearch binary, measured in the same run for the time ratios")
	sizes := fs.String("sizes", "73,4000,10000,100000", "catalog sizes, comma-separated")
	embedders := fs.String("embedders", "local,openai", "local, openai (the fake provider) or both, comma-separated")
	dim := fs.Int("dim", 1536, "the fake provider's vector width")
	floats := fs.Bool("floats", false, "the fake provider answers floats of about nine digits even when asked for base64, as a provider that ignores encoding_format")
	rounds := fs.Int("rounds", 3, "rounds per size and binary (medians are reported)")
	queries := fs.Int("queries", 200, "searches timed over HTTP after each start-up")
	dir := fs.String("dir", filepath.Join(os.TempDir(), "toolsearch-scale"), "where generated catalogs are kept between runs")
	text := fs.Int("text", 1, "how many times as long each generated tool's text is (catgen -text)")
	script := fs.String("script", "", `the generated descriptions' letters: "" (English's) or "cyrillic" (catgen -script)`)
	peak := fs.String("peak-profile", "", "a `dir` for each process's serve -peak-profile, and a line of what it held at its peak (both binaries must have the flag)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *text < 1 {
		return fmt.Errorf("-text must be at least 1, got %d", *text)
	}
	if err := catgen.CheckScript(*script); err != nil {
		return fmt.Errorf("-script %w", err)
	}
	var ns []int
	for _, s := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return fmt.Errorf("-sizes: %q is not a catalog size", s)
		}
		ns = append(ns, n)
	}
	bins := []string{*bin}
	if *baseline != "" {
		bins = append(bins, *baseline)
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	if *peak != "" {
		if err := os.MkdirAll(*peak, 0o755); err != nil {
			return err
		}
	}
	fake, err := startFake(*dim, *floats)
	if err != nil {
		return err
	}
	defer fake.Close()
	fmt.Fprintf(stdout, "scale: %s", *bin)
	if *baseline != "" {
		fmt.Fprintf(stdout, " against %s", *baseline)
	}
	fmt.Fprintf(stdout, ", %d rounds each, medians\n", *rounds)
	for _, emb := range strings.Split(*embedders, ",") {
		for _, n := range ns {
			m := measure{n: n, text: *text, script: *script, embedder: emb, fake: fake, dim: *dim, queries: *queries, dir: *dir, peak: *peak}
			if err := m.catalogs(); err != nil {
				return err
			}
			res := make([][]sample, len(bins))
			for r := range *rounds {
				for j := range bins {
					b := bins[(j+r)%len(bins)] // alternate which goes first
					s, err := m.once(ctx, b)
					if err != nil {
						return fmt.Errorf("%s, %d tools, %s: %w", emb, n, b, err)
					}
					res[(j+r)%len(bins)] = append(res[(j+r)%len(bins)], s)
				}
			}
			m.report(stdout, bins, res)
		}
	}
	return nil
}

// measure is one embedder at one catalog size.
type measure struct {
	n, text  int
	script   string // catgen -script
	embedder string
	fake     *fakeProvider
	dim      int
	queries  int
	dir      string
	peak     string // -peak-profile
	cat      string // the catalog served at start
	revised  string // cat with three servers' descriptions revised
	changed  string // the same number of tools, every text different: what the rebuild reads
}

// rebuilds are the rebuilds that follow each start-up, in order, and
// the catalog each reads (none: the one served, unchanged): first the
// same tools, as learning and a refresh that changed nothing make; then
// three servers' tools revised, as upstream refreshes make; then every
// text changed, so a provider embeds them all and the old index serves
// meanwhile: the worst case.
var rebuilds = [...]struct {
	name    string
	catalog func(*measure) string
}{
	{"same tools", nil},
	{"three servers revised", func(m *measure) string { return m.revised }},
	{"every text changed", func(m *measure) string { return m.changed }},
}

// sample is one start-up and its rebuilds of one binary.
type sample struct {
	ready, searchP50 time.Duration
	readyCPU         time.Duration // the service's processor time to ready
	rss, peak        int64         // bytes
	catalogBytes     int64         // status' catalog.bytes
	indexBytes       int64         // status' memory_bytes: the vectors as built
	needed           int64         // status' memory_needed_bytes: the service's own rule
	report           timed         // a whole-catalog report
	rebuilt          [len(rebuilds)]timed
	providerAtStart  int64         // inputs the provider embedded for the start-up
	providerTime     time.Duration // the provider's own time during the start-up
	peakDir          string        // where serve -peak-profile wrote, if asked
}

// timed is one admin request's (a rebuild, a catalog report): how long it
// took, the service's processor time meanwhile, and the resident set as
// it began and at its peak.
type timed struct {
	took, cpu    time.Duration
	before, peak int64 // bytes
}

func (m *measure) width() int {
	if m.embedder == "local" {
		return 1024
	}
	return m.dim
}

// catalogs writes (once) the catalog to serve and the changed one.
func (m *measure) catalogs() error {
	for i, seed := range []uint64{1, 2} {
		path := filepath.Join(m.dir, fmt.Sprintf("cat-%d%s-seed%d.json", m.n, m.textName(), seed))
		if _, err := os.Stat(path); err != nil {
			var buf bytes.Buffer
			if err := (catgen.Spec{Tools: m.n, Seed: seed, Text: m.text, Script: m.script}).Write(&buf); err != nil {
				return err
			}
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				return err
			}
		}
		if i == 0 {
			m.cat = path
		} else {
			m.changed = path
		}
	}
	m.revised = filepath.Join(m.dir, fmt.Sprintf("cat-%d%s-seed1-revised.json", m.n, m.textName()))
	if _, err := os.Stat(m.revised); err == nil {
		return nil
	}
	return revise(m.cat, m.revised)
}

// scriptNote names the descriptions' letters in the report, when not
// English's.
func (m *measure) scriptNote() string {
	if m.script == "" {
		return ""
	}
	return ", " + m.script + " letters"
}

// textName is the part of a catalog's file name that says its -text and
// -script; none for text 1 in English's letters, whose files earlier runs
// made.
func (m *measure) textName() string {
	name := ""
	if m.text != 1 {
		name = fmt.Sprintf("-text%d", m.text)
	}
	if m.script != "" {
		name += "-" + m.script
	}
	return name
}

// revise writes to dst the catalog src with a sentence added to the
// description of every tool of three servers, a quarter, half and three
// quarters of the way down its list: three upstreams whose tools changed,
// the rest as they were.
func revise(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	var cat struct {
		Servers []struct {
			Name  string                       `json:"name"`
			Tools []map[string]json.RawMessage `json:"tools"`
		} `json:"servers"`
	}
	if err := json.Unmarshal(b, &cat); err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	n := len(cat.Servers)
	for _, i := range []int{n / 4, n / 2, 3 * n / 4} {
		for _, t := range cat.Servers[i].Tools {
			var desc string
			if err := json.Unmarshal(t["description"], &desc); err != nil {
				return fmt.Errorf("%s: server %s: %w", src, cat.Servers[i].Name, err)
			}
			t["description"], _ = json.Marshal(desc + " Revised upstream.")
		}
	}
	out, err := json.Marshal(cat)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, out, 0o644)
}

func (m *measure) once(ctx context.Context, bin string) (sample, error) {
	var s sample
	work, err := os.MkdirTemp("", "scale")
	if err != nil {
		return s, err
	}
	defer os.RemoveAll(work)
	catalog := filepath.Join(work, "catalog.json")
	if err := copyFile(m.cat, catalog); err != nil {
		return s, err
	}
	// The searches timed after start-up come from one address, faster
	// than an anonymous caller's default budget; the process learns, as by
	// default, into the run's directory, not beside wherever scale runs.
	config := filepath.Join(work, "config.yaml")
	yaml := fmt.Sprintf("limits:\n  search_rate: -1\nlearning:\n  path: %s\n", filepath.Join(work, "learned.db"))
	if err := os.WriteFile(config, []byte(yaml), 0o644); err != nil {
		return s, err
	}
	args := []string{"-metrics-addr", "off", "-catalog", catalog, "-config", config, "-log-level", "warn"}
	if m.embedder == "openai" {
		args = append(args, "-embedder", "openai", "-embedding-base-url", m.fake.URL+"/v1", "-embedding-dimensions", strconv.Itoa(m.dim))
	}
	if m.peak != "" {
		if s.peakDir, err = os.MkdirTemp(m.peak, fmt.Sprintf("%s-%s-%d-", filepath.Base(bin), m.embedder, m.n)); err != nil {
			return s, err
		}
		args = append(args, "-peak-profile", s.peakDir)
	}
	const token = "scale-admin-token"
	before, busyBefore := m.fake.served.Load(), m.fake.busyTime()
	start := time.Now()
	srv, err := serveproc.Start(ctx, bin, []string{"TOOLSEARCH_ADMIN_TOKEN=" + token, "OPENAI_API_KEY=scale-fake-key"}, 10*time.Minute, args...)
	if err != nil {
		return s, err
	}
	defer srv.Stop()
	s.ready = time.Since(start)
	if s.readyCPU, err = srv.CPU(); err != nil {
		return s, err
	}
	s.providerAtStart = m.fake.served.Load() - before
	s.providerTime = m.fake.busyTime() - busyBefore
	base := srv.Base
	client := &http.Client{Timeout: 10 * time.Second}
	// Ready is published; the memory a build freed is returned just after.
	time.Sleep(time.Second)
	if s.rss, err = srv.Memory("VmRSS"); err != nil {
		return s, err
	}
	if s.peak, err = srv.Memory("VmHWM"); err != nil {
		return s, err
	}
	if s.searchP50, err = searchP50(client, base, m.queries); err != nil {
		return s, err
	}
	if s.catalogBytes, s.indexBytes, s.needed, err = statusSizes(ctx, client, base, token); err != nil {
		return s, err
	}
	// Before the rebuilds: the service gives a large report's memory
	// back once it is written, so it does not raise their peaks.
	if s.report, err = peakOf(ctx, srv, http.MethodGet, "/mcp/tool-search/catalog", token); err != nil {
		return s, fmt.Errorf("catalog report: %w", err)
	}
	for i, r := range rebuilds {
		if r.catalog != nil {
			if err := copyFile(r.catalog(m), catalog); err != nil {
				return s, err
			}
		}
		if s.rebuilt[i], err = peakOf(ctx, srv, http.MethodPost, "/mcp/tool-search/rebuild", token); err != nil {
			return s, fmt.Errorf("%s: %w", r.name, err)
		}
	}
	return s, nil
}

// peakOf makes one admin request (a rebuild, a catalog report) and
// returns how long it took, the process's resident set as it began and
// its peak while it ran.
func peakOf(ctx context.Context, srv *serveproc.Server, method, path, token string) (timed, error) {
	var t timed
	if err := srv.ResetPeak(); err != nil {
		return t, fmt.Errorf("resetting the peak RSS: %w", err)
	}
	before, err := srv.Memory("VmRSS")
	if err != nil {
		return t, err
	}
	req, _ := http.NewRequestWithContext(ctx, method, srv.Base+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	client := &http.Client{Timeout: 10 * time.Minute}
	cpu0, err := srv.CPU()
	if err != nil {
		return t, err
	}
	t0 := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return t, fmt.Errorf("%s: %w", path, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return t, fmt.Errorf("%s: %s: %.200s", path, resp.Status, body)
	}
	t.took, t.before = time.Since(t0), before
	if t.cpu, err = srv.CPU(); err != nil {
		return t, err
	}
	t.cpu -= cpu0
	t.peak, err = srv.Memory("VmHWM")
	return t, err
}

// statusSizes are the served catalog's bytes, its index's and what the
// service's own sizing rule needs, as status reports them to the admin.
func statusSizes(ctx context.Context, client *http.Client, base, token string) (catalog, index, needed int64, err error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/mcp/tool-search/status", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("status: %w", err)
	}
	defer resp.Body.Close()
	var st struct {
		Catalog struct {
			Bytes int64 `json:"bytes"`
		} `json:"catalog"`
		MemoryBytes       int64 `json:"memory_bytes"`
		MemoryNeededBytes int64 `json:"memory_needed_bytes"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return 0, 0, 0, fmt.Errorf("status: %s: %w", resp.Status, err)
	}
	return st.Catalog.Bytes, st.MemoryBytes, st.MemoryNeededBytes, nil
}

// searchP50 is the median latency of n searches over HTTP, one at a time.
func searchP50(client *http.Client, base string, n int) (time.Duration, error) {
	qs := []string{"list the open issues", "send a message to the team channel", "export the monthly report as a file",
		"cancel a pending order", "backup the database table", "forecast the weather for a city", "schedule a meeting next week",
		"upload a photo to the album"}
	var lat []time.Duration
	for i := range n {
		body, _ := json.Marshal(map[string]any{"query": qs[i%len(qs)]})
		t0 := time.Now()
		resp, err := client.Post(base+"/mcp/tool-search", "application/json", bytes.NewReader(body))
		if err != nil {
			return 0, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("search: %s", resp.Status)
		}
		lat = append(lat, time.Since(t0))
	}
	if len(lat) == 0 {
		return 0, nil
	}
	slices.Sort(lat)
	return lat[len(lat)/2], nil
}

func (m *measure) report(w io.Writer, bins []string, res [][]sample) {
	vec := int64(m.n) * int64(m.width()) * 4
	mib := func(b int64) float64 { return float64(b) / (1 << 20) }
	fmt.Fprintf(w, "\n%s, %d tools (text x%d%s), D=%d: vectors %.1f MiB; goals: RSS <= 1.5x vectors + 40 MB (%.0f MiB), peaks <= 2.3x + 40 MB (%.0f MiB)\n",
		m.embedder+m.fake.answers(m.embedder), m.n, m.text, m.scriptNote(), m.width(), mib(vec), mib(vec*3/2+40e6), mib(vec*23/10+40e6))
	med := make([]sample, len(bins))
	for j, b := range bins {
		med[j] = median(res[j])
		s := med[j]
		own := ""
		if m.embedder != "local" {
			own = fmt.Sprintf(" (the provider's own %s, the service's %s)", s.providerTime.Round(time.Millisecond), (s.ready - s.providerTime).Round(time.Millisecond))
		}
		var rb []string
		for i, r := range rebuilds {
			t := s.rebuilt[i]
			rb = append(rb, fmt.Sprintf("%s %8s (cpu %s) peak %7.1f MiB (%.2fx)", r.name, t.took.Round(time.Millisecond), t.cpu.Round(10*time.Millisecond), mib(t.peak), float64(t.peak)/float64(vec)))
		}
		fmt.Fprintf(w, "  %-28s catalog %.1f MiB  ready %8s%s (cpu %s)  RSS %7.1f MiB (%.2fx)  peak %7.1f MiB (%.2fx)  catalog report %s RSS %.1f -> peak %.1f MiB  rebuild, %s  search p50 %s\n",
			filepath.Base(filepath.Dir(b))+"/"+filepath.Base(b), mib(s.catalogBytes), s.ready.Round(time.Millisecond), own, s.readyCPU.Round(10*time.Millisecond),
			mib(s.rss), float64(s.rss)/float64(vec), mib(s.peak), float64(s.peak)/float64(vec),
			s.report.took.Round(time.Millisecond), mib(s.report.before), mib(s.report.peak),
			strings.Join(rb, ", "), s.searchP50.Round(time.Microsecond))
		for _, r := range res[j] {
			if r.peakDir != "" {
				fmt.Fprintf(w, "    %s\n", peakLine(r.peakDir))
			}
		}
	}
	rule := sizing.Catalog{Tools: m.n, TextBytes: med[0].catalogBytes, Dim: m.width(), Local: m.embedder == "local"}
	fmt.Fprintf(w, "  sizing rule for the first (docs/operations.md, Memory): built %.0f MiB, rebuild %.0f MiB, report adds %.0f MiB\n",
		mib(rule.Built()), mib(rule.Rebuild()), mib(rule.Report()))
	rule.VectorBytes = med[0].indexBytes
	fmt.Fprintf(w, "  the same with its index's %.1f MiB as built, as the service reads it: built %.0f MiB, rebuild %.0f MiB; status' memory_needed_bytes %.0f MiB\n",
		mib(rule.VectorBytes), mib(rule.Built()), mib(rule.Rebuild()), mib(med[0].needed))
	if len(bins) == 2 {
		a, b := med[0], med[1]
		var rb []string
		for i, r := range rebuilds {
			rb = append(rb, fmt.Sprintf("rebuild, %s %.2f (cpu %.2f), its peak %.2f", r.name, ratio(a.rebuilt[i].took, b.rebuilt[i].took), ratio(a.rebuilt[i].cpu, b.rebuilt[i].cpu), float64(a.rebuilt[i].peak)/float64(b.rebuilt[i].peak)))
		}
		fmt.Fprintf(w, "  ratio (first / baseline): ready %.2f (cpu %.2f)  RSS %.2f  peak %.2f  catalog report's peak %.2f  %s  search p50 %.2f\n",
			ratio(a.ready, b.ready), ratio(a.readyCPU, b.readyCPU), float64(a.rss)/float64(b.rss), float64(a.peak)/float64(b.peak), float64(a.report.peak)/float64(b.report.peak),
			strings.Join(rb, "  "), ratio(a.searchP50, b.searchP50))
	}
}

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

// peakLine is what a process held at its highest resident set, as serve
// -peak-profile wrote it into dir.
func peakLine(dir string) string {
	_, figures, err := peakmem.Read(dir)
	if err != nil {
		return fmt.Sprintf("%s: %v", dir, err)
	}
	v := make(map[string]float64, len(figures))
	for name, n := range figures {
		v[name] = float64(n) / (1 << 20)
	}
	return fmt.Sprintf("at its peak (%s): RSS %.1f MiB (anonymous %.1f, file %.1f); the heap's objects %.1f (live at the last collection %.1f), free pages %.1f, unused in spans %.1f; the runtime's metadata %.1f",
		dir, v["VmRSS:bytes"], v["RssAnon:bytes"], v["RssFile:bytes"], v["/memory/classes/heap/objects:bytes"], v["/gc/heap/live:bytes"],
		v["/memory/classes/heap/free:bytes"], v["/memory/classes/heap/unused:bytes"],
		v["/memory/classes/metadata/other:bytes"]+v["/memory/classes/metadata/mspan/inuse:bytes"]+v["/memory/classes/metadata/mcache/inuse:bytes"])
}

// median takes each figure's median over the samples on its own.
func median(ss []sample) sample {
	pick := func(f func(sample) int64) int64 {
		v := make([]int64, len(ss))
		for i, s := range ss {
			v[i] = f(s)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	pickTimed := func(f func(sample) timed) timed {
		return timed{
			took:   time.Duration(pick(func(s sample) int64 { return int64(f(s).took) })),
			cpu:    time.Duration(pick(func(s sample) int64 { return int64(f(s).cpu) })),
			before: pick(func(s sample) int64 { return f(s).before }),
			peak:   pick(func(s sample) int64 { return f(s).peak }),
		}
	}
	out := sample{
		ready:        time.Duration(pick(func(s sample) int64 { return int64(s.ready) })),
		readyCPU:     time.Duration(pick(func(s sample) int64 { return int64(s.readyCPU) })),
		providerTime: time.Duration(pick(func(s sample) int64 { return int64(s.providerTime) })),
		rss:          pick(func(s sample) int64 { return s.rss }),
		peak:         pick(func(s sample) int64 { return s.peak }),
		catalogBytes: pick(func(s sample) int64 { return s.catalogBytes }),
		indexBytes:   pick(func(s sample) int64 { return s.indexBytes }),
		needed:       pick(func(s sample) int64 { return s.needed }),
		report:       pickTimed(func(s sample) timed { return s.report }),
		searchP50:    time.Duration(pick(func(s sample) int64 { return int64(s.searchP50) })),
	}
	for i := range out.rebuilt {
		out.rebuilt[i] = pickTimed(func(s sample) timed { return s.rebuilt[i] })
	}
	return out
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o644)
}
