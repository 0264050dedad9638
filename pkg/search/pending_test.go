package search

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/learn"
)

// record is a pending search's record: terms, then server/name pairs.
func record(terms []string, tools ...string) []byte {
	var b []byte
	for _, t := range terms {
		b = appendString(b, t)
	}
	for _, id := range tools {
		server, name, _ := strings.Cut(id, "/")
		b = appendString(appendString(b, server), name)
	}
	return b
}

func idOf(n int) searchID {
	var id searchID
	copy(id[:], fmt.Sprintf("%016d", n))
	return id
}

// TestPendingWindow drives the window through what the learner does: a
// search remembered, used, finished (reported, pushed out, expired,
// drained), and what each teaches.
func TestPendingWindow(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	terms := []string{"send", "mail"}
	tools := []string{"mail/send", "chat/send", "mail/draft"}
	type step struct {
		op     string // add, use, final, remove, sweep, purge
		n      int    // the search's id, idOf(n)
		caller string
		tools  []string
		at     time.Duration // after t0
		// what it should do
		ok            bool
		used, ignored int
		taught        []learn.Event
		live          int // searches held after the step
	}
	ev := func(caller string, used ...string) learn.Event {
		return learn.Event{Caller: caller, Terms: terms, Used: used}
	}
	for _, c := range []struct {
		name        string
		size, share int
		steps       []step
	}{
		{"a report teaches the returned tools it names, once", 4, 4, []step{
			{op: "add", n: 1, caller: "a", ok: true, live: 1},
			{op: "use", n: 1, caller: "a", tools: []string{"mail/send", "draft", "send", "other/tool", "mail/send"}, ok: true, used: 2, ignored: 2, live: 1},
			{op: "final", n: 1, caller: "a", tools: []string{"chat/send"}, ok: true, used: 1, taught: []learn.Event{ev("a", "mail/send", "mail/draft", "chat/send")}},
			{op: "use", n: 1, caller: "a", tools: []string{"mail/send"}},
			{op: "remove", n: 1},
		}},
		{"another caller's id is unknown, and changes nothing", 4, 4, []step{
			{op: "add", n: 1, caller: "a", ok: true, live: 1},
			{op: "final", n: 1, caller: "b", tools: []string{"mail/send"}, live: 1},
			{op: "final", n: 2, caller: "a", tools: []string{"mail/send"}, live: 1},
			{op: "final", n: 1, caller: "a", tools: []string{"mail/send"}, ok: true, used: 1, taught: []learn.Event{ev("a", "mail/send")}},
		}},
		{"a full window pushes out the oldest, which teaches its uses", 2, 2, []step{
			{op: "add", n: 1, caller: "a", ok: true, live: 1},
			{op: "use", n: 1, caller: "a", tools: []string{"mail/send"}, ok: true, used: 1, live: 1},
			{op: "add", n: 2, caller: "b", ok: true, live: 2},
			{op: "add", n: 3, caller: "c", ok: true, live: 2, taught: []learn.Event{ev("a", "mail/send")}},
			{op: "add", n: 4, caller: "c", ok: true, live: 2}, // 2 goes, unused: teaches nothing
			{op: "use", n: 1, caller: "a", tools: []string{"mail/send"}, live: 2},
			{op: "use", n: 2, caller: "b", tools: []string{"mail/send"}, live: 2},
			{op: "use", n: 3, caller: "c", tools: []string{"mail/send"}, ok: true, used: 1, live: 2},
		}},
		{"a finished search frees its slot: the window counts searches held", 2, 2, []step{
			{op: "add", n: 1, caller: "a", ok: true, live: 1},
			{op: "add", n: 2, caller: "a", ok: true, live: 2},
			{op: "remove", n: 2, live: 1},
			{op: "add", n: 3, caller: "a", ok: true, live: 2},
			{op: "use", n: 1, caller: "a", tools: []string{"chat/send"}, ok: true, used: 1, live: 2},
		}},
		{"a caller past its share is refused, and admitted once one finishes", 4, 2, []step{
			{op: "add", n: 1, caller: "a", ok: true, live: 1},
			{op: "add", n: 2, caller: "a", ok: true, live: 2},
			{op: "add", n: 3, caller: "a", live: 2},
			{op: "add", n: 4, caller: "b", ok: true, live: 3},
			{op: "final", n: 1, caller: "a", ok: true, live: 2},
			{op: "add", n: 5, caller: "a", ok: true, live: 3},
		}},
		{"a search expires after the ttl, teaching its uses", 4, 4, []step{
			{op: "add", n: 1, caller: "a", ok: true, live: 1},
			{op: "use", n: 1, caller: "a", tools: []string{"send"}, ok: true, ignored: 1, live: 1}, // two tools are named send
			{op: "use", n: 1, caller: "a", tools: []string{"draft"}, ok: true, used: 1, live: 1},
			{op: "add", n: 2, caller: "a", at: 10 * time.Minute, ok: true, live: 2},
			{op: "sweep", at: 15 * time.Minute, live: 2},
			{op: "sweep", at: 15*time.Minute + 1, live: 1, taught: []learn.Event{ev("a", "mail/draft")}},
			{op: "use", n: 2, caller: "a", tools: []string{"draft"}, at: 26 * time.Minute, live: 0},
		}},
		{"a stopping service drains every search", 4, 4, []step{
			{op: "add", n: 1, caller: "a", ok: true, live: 1},
			{op: "add", n: 2, caller: "b", ok: true, live: 2},
			{op: "use", n: 2, caller: "b", tools: []string{"chat/send"}, ok: true, used: 1, live: 2},
			{op: "purge", live: 0, taught: []learn.Event{ev("b", "chat/send")}},
			{op: "add", n: 3, caller: "a", ok: true, live: 1},
		}},
		{"an id is not taken twice", 4, 4, []step{
			{op: "add", n: 1, caller: "a", ok: true, live: 1},
			{op: "add", n: 1, caller: "b", live: 1},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newPendingWindow(c.size, c.share, 15*time.Minute)
			for i, s := range c.steps {
				now := t0.Add(s.at)
				var (
					ok      bool
					used    int
					ignored []string
					taught  []learn.Event
				)
				switch s.op {
				case "add":
					ok, taught = w.add(idOf(s.n), s.caller, record(terms, tools...), len(terms), now, nil)
				case "use", "final":
					used, ignored, ok, taught = w.use(idOf(s.n), s.caller, s.tools, s.op == "final", now, nil, nil)
				case "remove":
					taught = w.remove(idOf(s.n), nil)
				case "sweep":
					taught = w.sweep(now, nil)
				case "purge":
					taught = w.purge(nil)
				}
				if ok != s.ok || used != s.used || len(ignored) != s.ignored {
					t.Errorf("step %d (%s %d): ok %v, used %d, ignored %q; want %v, %d, %d", i, s.op, s.n, ok, used, ignored, s.ok, s.used, s.ignored)
				}
				if fmt.Sprint(taught) != fmt.Sprint(s.taught) {
					t.Errorf("step %d (%s %d): taught %v, want %v", i, s.op, s.n, taught, s.taught)
				}
				if got := w.held(); got != s.live {
					t.Errorf("step %d (%s %d): %d searches held, want %d", i, s.op, s.n, got, s.live)
				}
			}
		})
	}
}

// held counts the searches held, checking the window's lists and counts
// agree with each other.
func (w *pendingWindow) held() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, prev, perCaller := 0, int32(-1), map[string]int{}
	for i := w.oldest; i >= 0; i = w.slots[i].next {
		if w.slots[i].prev != prev || w.byID[w.slots[i].id] != i {
			return -1
		}
		prev = i
		n++
		perCaller[w.slots[i].caller]++
	}
	free := 0
	for i := w.free; i >= 0; i = w.slots[i].next {
		free++
	}
	if prev != w.newest || len(w.byID) != n || n+free+len(w.slots)-int(w.fresh) != len(w.slots) || fmt.Sprint(perCaller) != fmt.Sprint(w.perCaller) {
		return -1
	}
	return n
}

func TestSearchIDs(t *testing.T) {
	id := searchID{0xab, 0xcd, 0xef, 7}
	s := id.String()
	for _, c := range []struct {
		in string
		ok bool
	}{
		{s, true},
		{strings.ToUpper(s), false},
		{s[:31], false},
		{s + "0", false},
		{"zz" + s[2:], false},
		{"", false},
	} {
		got, ok := parseSearchID(c.in)
		if ok != c.ok || (ok && got != id) {
			t.Errorf("parseSearchID(%q) = %v, %v; want ok %v", c.in, got, ok, c.ok)
		}
	}
}

// FuzzSearchID: an id is read back only as it is written.
func FuzzSearchID(f *testing.F) {
	id := searchID{0xab, 0xcd, 0xef, 7}
	for _, s := range []string{id.String(), strings.ToUpper(id.String()), "", "0", strings.Repeat("g", 32)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, ok := parseSearchID(s)
		if ok != (id.String() == s) {
			t.Fatalf("parseSearchID(%q) ok %v, but the id it read writes %q", s, ok, id.String())
		}
	})
}

// TestRecordKeepsItsBytes: the window copies a record; the retrieval's
// working memory it came from is reused by the next search.
func TestRecordKeepsItsBytes(t *testing.T) {
	w := newPendingWindow(2, 2, time.Minute)
	rec := record([]string{"send"}, "mail/send")
	now := time.Now()
	w.add(idOf(1), "a", rec, 1, now, nil)
	copy(rec, record([]string{"xxxx"}, "xxxx/xxxx"))
	w.use(idOf(1), "a", []string{"mail/send"}, false, now, nil, nil)
	taught := w.purge(nil)
	if len(taught) != 1 || !slices.Equal(taught[0].Terms, []string{"send"}) || !slices.Equal(taught[0].Used, []string{"mail/send"}) {
		t.Errorf("taught %v, want the record as added", taught)
	}
}

// TestPendingWindowConcurrent: searches remembered, reported, finished
// and swept from many goroutines (run with -race) leave the window's
// lists and counts consistent, and no search teaches twice.
func TestPendingWindowConcurrent(t *testing.T) {
	w := newPendingWindow(64, 16, time.Minute)
	rec := record([]string{"send"}, "mail/send", "chat/send")
	t0 := time.Now()
	var mu sync.Mutex
	taughtBy, added := map[string]int{}, 0
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			caller := fmt.Sprint("c", g%4)
			for i := range 500 {
				id := idOf(g*1000 + i)
				now := t0.Add(time.Duration(i) * time.Second / 10)
				ok, taught := w.add(id, caller, rec, 1, now, nil)
				if ok {
					_, _, ok, taught = w.use(id, caller, []string{"mail/send"}, i%3 == 0, now, taught, nil)
				}
				if i%5 == 0 {
					taught = w.remove(idOf(g*1000+i-1), taught)
				}
				if i%50 == 0 {
					taught = w.sweep(now, taught)
				}
				mu.Lock()
				if ok {
					added++
				}
				for _, ev := range taught {
					taughtBy[ev.Caller]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	taught := w.purge(nil)
	for _, ev := range taught {
		taughtBy[ev.Caller]++
	}
	if n := w.held(); n != 0 {
		t.Fatalf("%d searches held after the purge (-1: lists and counts disagree)", n)
	}
	total := 0
	for _, n := range taughtBy {
		total += n
	}
	// Every search held was used at once, so each teaches exactly once:
	// when reported, removed, pushed out, expired or purged.
	if total != added || added == 0 {
		t.Errorf("%d searches taught, want %d (those added and used)", total, added)
	}
}

// TestRecordBounded: a record holds the kept terms and the returned tools
// in the answer's order while they fit maxRecord; the core whitelist's
// tools are not among them.
func TestRecordBounded(t *testing.T) {
	catOf := func(server string, names ...string) *catalog.Catalog {
		tools := make([]catalog.Tool, len(names))
		for i, n := range names {
			tools[i] = catalog.Tool{Name: n, Description: "A tool."}
		}
		cat, err := catalog.New([]catalog.Part{{Source: "test", Servers: []catalog.Server{{Name: server, Tools: tools}}}})
		if err != nil {
			t.Fatal(err)
		}
		return cat
	}
	longServer := strings.Repeat("s", catalog.MaxNameBytes)
	var short, long []string
	for i := range MaxTopK {
		short = append(short, fmt.Sprintf("tool_%02d", i))
		long = append(long, fmt.Sprintf("%02d%s", i, strings.Repeat("n", catalog.MaxNameBytes-2)))
	}
	terms := make([]string, learn.MaxTermsPerEvent)
	for i := range terms {
		terms[i] = strings.Repeat(string(rune('a'+i)), 24)
	}
	hits := func(n int) []Hit {
		out := []Hit{{Row: n - 1, Source: SourceCore}}
		for i := range n {
			out = append(out, Hit{Row: i, Source: Source(ModeHybrid)})
		}
		return out
	}
	for _, c := range []struct {
		name  string
		cat   *catalog.Catalog
		tools int // recorded
	}{
		{"usual names: every returned tool", catOf("mail", short...), MaxTopK},
		{"the longest names: as many as fit", catOf(longServer, long...), 7},
	} {
		rec, n := appendRecord(nil, terms, hits(MaxTopK), c.cat)
		if n != c.tools {
			t.Errorf("%s: appendRecord says it holds %d tools, want %d", c.name, n, c.tools)
		}
		if len(rec) > maxRecord {
			t.Errorf("%s: a record of %d bytes, over %d", c.name, len(rec), maxRecord)
		}
		var got []string
		for f := range recordFields(rec) {
			got = append(got, string(f))
		}
		if !slices.Equal(got[:len(terms)], terms) || len(got) != len(terms)+2*c.tools {
			t.Fatalf("%s: %d strings recorded, want %d terms then %d tools", c.name, len(got), len(terms), c.tools)
		}
		for i := range c.tools {
			if tool := c.cat.Tool(i); got[len(terms)+2*i] != tool.Server || got[len(terms)+2*i+1] != tool.Name {
				t.Errorf("%s: tool %d recorded as %.20s/%.20s, want %.20s/%.20s", c.name, i, got[len(terms)+2*i], got[len(terms)+2*i+1], tool.Server, tool.Name)
			}
		}
	}
}

// TestReportAllocatesNothing: checking a report's names against a
// search's record (a flood of reports naming tools it did not return)
// allocates nothing.
func TestReportAllocatesNothing(t *testing.T) {
	w := newPendingWindow(2, 2, time.Minute)
	now := time.Now()
	w.add(idOf(1), "a", record([]string{"send"}, "mail/send", "chat/send", "mail/draft"), 1, now, nil)
	id, names := idOf(1), []string{"other/tool", "nothing", "send", "mail/sen", "mail/send/x"}
	ignored := make([]string, 0, len(names)) // as the learner sizes it, before the lock
	if n := testing.AllocsPerRun(100, func() { w.use(id, "a", names, false, now, nil, ignored[:0]) }); n != 0 {
		t.Errorf("a report of names the search did not return (or named ambiguously) made %v allocations", n)
	}
}
