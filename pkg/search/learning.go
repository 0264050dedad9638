package search

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/analysis"
	"github.com/toolsearch/toolsearch/pkg/config"
	"github.com/toolsearch/toolsearch/pkg/learn"
	"github.com/toolsearch/toolsearch/pkg/redact"
)

// Learning turns on learning from use (package learn): where evidence is
// kept, and how often the merged tally is read (a replica sees what the
// others learned within Refresh; a change rebuilds the index).
type Learning struct {
	Store   learn.Store
	Refresh time.Duration // DefaultLearnRefresh when 0
}

// Learning's defaults and bounds.
const (
	DefaultLearnRefresh = time.Minute
	// pendingSearches bounds the searches remembered for feedback, and
	// pendingTTL how long each waits: a search reported on later teaches
	// nothing.
	pendingSearches = 10000
	pendingTTL      = config.SearchIDLifetime
	// pendingPerCaller bounds one caller's share of them, so that a caller
	// searching at its rate limit without reporting cannot push every other
	// caller's searches out: past it, its answers carry no search id.
	pendingPerCaller = 1000
	// eventQueue bounds the events waiting for the store; past it, events
	// are dropped (and counted), never waited for. As many again may be
	// held for a store that failed to write them (learner.held).
	eventQueue = 1024
	// A write that failed is tried again after retryFirst, the wait
	// doubling to retryMost while the store keeps failing; an event is
	// dropped after retryTries failed writes (about a minute and a half),
	// so one the store refuses for itself holds the others up no longer.
	retryFirst = time.Second
	retryMost  = 30 * time.Second
	retryTries = 6
)

// ErrUnknownSearch is returned for feedback on a search id the service
// does not hold for this caller: never issued, expired, reported already,
// or another caller's.
var ErrUnknownSearch = errors.New("unknown search id: it expired, was reported already, or was not this caller's")

// learner is a service's learning: the searches that may teach, the
// events on their way to the store, and the tally the index is built
// with.
type learner struct {
	cfg     Learning
	s       *Service
	pending *pendingWindow
	events  chan learn.Event
	learned atomic.Pointer[learn.Learned]
	// hash of the tally learned holds, to tell a change.
	version atomic.Uint64

	// held are events the store failed to write without having written
	// them, oldest first, waiting to be written again (retry): a database
	// that restarts costs no use recorded meanwhile. Only run touches
	// them. retryFirst is the first wait, retryFirst unless a test sets it.
	held       []heldEvent
	retryFirst time.Duration
	waiting    atomic.Int64 // len(held), for status

	mu         sync.Mutex
	lastErr    string
	lastErrAt  time.Time
	recorded   int64
	dropped    int64
	lastLoadAt time.Time
}

// heldEvent is an event the store failed to write, and how many times.
type heldEvent struct {
	ev    learn.Event
	tries int
}

func newLearner(s *Service, cfg Learning) *learner {
	if cfg.Refresh <= 0 {
		cfg.Refresh = DefaultLearnRefresh
	}
	return &learner{cfg: cfg, s: s, events: make(chan learn.Event, eventQueue), retryFirst: retryFirst,
		pending: newPendingWindow(pendingSearches, pendingPerCaller, pendingTTL)}
}

// callerOf is the id a caller's evidence counts under: its key, or an
// anonymous caller's address.
func callerOf(c access.Caller) string { return learn.Caller(c.Key, c.Address) }

// remember holds a retrieval's answer for feedback and returns its id.
// The query's terms are kept only as learn.AppendTerms allows: words the
// catalog or the dictionary knows. w is the retrieval's working memory.
func (l *learner) remember(caller access.Caller, snap *Snapshot, terms []string, hits []Hit, w *work) string {
	who := callerOf(caller)
	// A caller at its share of the window gets no id, whatever it
	// searched: said before anything is built for it (add checks again,
	// where it counts).
	if l.pending.full(who) {
		return ""
	}
	known := func(t string) bool { return snap.Keywords.Has(t) || analysis.English.InLexicon(t) }
	w.kept = learn.AppendTerms(w.kept[:0], terms, known)
	var returned int
	w.record, returned = appendRecord(w.record[:0], w.kept, hits, snap.Catalog)
	if returned == 0 || (len(w.kept) == 0 && returned < 2) {
		return "" // nothing it could teach
	}
	var id searchID
	rand.Read(id[:])
	added, taught := l.pending.add(id, who, w.record, len(w.kept), l.s.cfg.Now(), nil)
	l.teach(taught)
	if !added {
		return ""
	}
	return id.String()
}

// use records that the caller used tools after the search id (each
// server/name, or a name one returned tool has); a tool the search did
// not return teaches nothing, and is returned as ignored, as named. A
// final use finishes the search.
func (l *learner) use(caller access.Caller, id string, tools []string, final bool) (used int, ignored []string, err error) {
	sid, ok := parseSearchID(id)
	if !ok {
		return 0, nil, ErrUnknownSearch
	}
	used, ignored, ok, taught := l.pending.use(sid, callerOf(caller), tools, final, l.s.cfg.Now(), nil, make([]string, 0, len(tools)))
	l.teach(taught)
	if !ok {
		return 0, nil, ErrUnknownSearch
	}
	return used, ignored, nil
}

// done finishes the search id: it teaches what it was used for.
func (l *learner) done(id string) {
	if sid, ok := parseSearchID(id); ok {
		l.teach(l.pending.remove(sid, nil))
	}
}

// teach sends what finished searches taught to the store, never waiting:
// past the queue, events are dropped and counted.
func (l *learner) teach(taught []learn.Event) {
	for _, ev := range taught {
		ev.At = l.s.cfg.Now()
		select {
		case l.events <- ev:
		default:
			l.drop()
		}
	}
}

// drop counts an event lost.
func (l *learner) drop() {
	l.mu.Lock()
	l.dropped++
	l.mu.Unlock()
	l.s.metrics.learnEvents.WithLabelValues("dropped").Inc()
}

// run writes events to the store and reads the merged tally every
// Refresh, asking for a rebuild (on changed) when it moved. A store that
// is down keeps the tally it had, and the events it failed to write are
// held and written once it is back (retry); searches never wait for it.
func (l *learner) run(ctx context.Context, changed chan<- struct{}) {
	tick := time.NewTicker(l.cfg.Refresh)
	defer tick.Stop()
	retry := time.NewTimer(time.Hour)
	retry.Stop() // armed when a write fails
	defer retry.Stop()
	wait := l.retryFirst
	for {
		select {
		case <-ctx.Done():
			l.drain()
			return
		case ev := <-l.events:
			if len(l.held) > 0 { // the store is failing: wait with the others
				l.hold(heldEvent{ev: ev})
				continue
			}
			if l.write(ctx, heldEvent{ev: ev}) {
				continue
			}
			wait = l.retryFirst
			retry.Reset(wait)
		case <-retry.C:
			if l.retry(ctx) {
				wait = l.retryFirst
				continue
			}
			wait = min(2*wait, retryMost)
			retry.Reset(wait)
		case <-tick.C:
			l.teach(l.pending.sweep(l.s.cfg.Now(), nil)) // searches that went quiet
			if l.load(ctx) && changed != nil {
				select {
				case changed <- struct{}{}:
				default: // a rebuild is due already; it reads this tally too
				}
			}
		}
	}
}

// drainBudget bounds how long a stopping service spends writing what its
// searches taught.
const drainBudget = 2 * time.Second

// drain, as the service stops, finishes every pending search (those with
// uses teach, as a session's close would) and writes the events waiting,
// for at most drainBudget: a restart loses none of what was taught.
func (l *learner) drain() {
	l.teach(l.pending.purge(nil))
	ctx, cancel := context.WithTimeout(context.Background(), drainBudget)
	defer cancel()
	for len(l.held) > 0 {
		if l.record(ctx, l.held[0].ev) != nil {
			return
		}
		l.setHeld(slices.Delete(l.held, 0, 1))
	}
	for {
		select {
		case ev := <-l.events:
			if l.record(ctx, ev) != nil {
				return
			}
		default:
			return
		}
	}
}

// write records h's event, within 5 s, and reports whether it is done
// with: written, or lost for good. One the store failed to write, and
// may write on a later try, is held.
func (l *learner) write(ctx context.Context, h heldEvent) bool {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := l.record(rctx, h.ev)
	switch {
	case err == nil:
		return true
	case errors.Is(err, learn.ErrMaybeRecorded):
		// Written again, a use written once would count twice.
		return true
	}
	h.tries++
	if h.tries >= retryTries {
		l.drop()
		return true
	}
	l.setHeld(slices.Insert(l.held, 0, h)) // first: the oldest
	return false
}

// hold keeps h for the next retry, the oldest dropped past the bound.
func (l *learner) hold(h heldEvent) {
	if len(l.held) >= eventQueue {
		l.held = slices.Delete(l.held, 0, 1)
		l.drop()
	}
	l.setHeld(append(l.held, h))
}

// setHeld makes held the events held, and status' count of them.
func (l *learner) setHeld(held []heldEvent) {
	l.held = held
	l.waiting.Store(int64(len(held)))
}

// retry writes the held events, oldest first, and reports whether all
// were done with; it stops at the first the store fails again.
func (l *learner) retry(ctx context.Context) bool {
	for len(l.held) > 0 {
		h := l.held[0]
		l.setHeld(slices.Delete(l.held, 0, 1))
		if !l.write(ctx, h) {
			return false
		}
	}
	return true
}

// record writes ev to the store, counting it either way.
func (l *learner) record(ctx context.Context, ev learn.Event) error {
	err := l.cfg.Store.Record(ctx, ev)
	result := "recorded"
	if err != nil {
		result = "error"
		l.fail("record", err)
	} else {
		l.mu.Lock()
		l.recorded++
		l.mu.Unlock()
	}
	l.s.metrics.learnEvents.WithLabelValues(result).Inc()
	return err
}

// load reads the merged tally and reports whether it changed.
func (l *learner) load(ctx context.Context) bool {
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	learned, err := l.cfg.Store.Load(lctx)
	if err != nil {
		l.fail("load", err)
		return false
	}
	l.mu.Lock()
	l.lastLoadAt = l.s.cfg.Now().UTC()
	l.mu.Unlock()
	h := learnedHash(learned)
	l.learned.Store(learned)
	return l.version.Swap(h) != h
}

func (l *learner) fail(what string, err error) {
	msg := redact.Clip(what+": "+err.Error(), maxStatusError, "… (cut)")
	l.mu.Lock()
	l.lastErr, l.lastErrAt = msg, l.s.cfg.Now().UTC()
	l.mu.Unlock()
	l.s.logger.Warn("learning store", "op", what, "err", err)
}

// learnedHash fingerprints what an index takes of a tally: each term's
// learnedTF and each companion's weight, rounded. Weights decay a little
// at every read; a change that rounds away is no reason to rebuild.
func learnedHash(l *learn.Learned) uint64 {
	h := fnv.New64a()
	for i, m := range []map[string][]learn.Weighted{l.Terms, l.Companions} {
		for _, tool := range slices.Sorted(maps.Keys(m)) {
			fmt.Fprintf(h, "%s\x00", tool)
			for _, w := range m[tool] {
				n := learnedTF(w.Weight)
				if i == 1 {
					n = int(math.Round(w.Weight))
				}
				fmt.Fprintf(h, "%s\x00%d\x00", w.Name, n)
			}
		}
		h.Write([]byte{1})
	}
	return h.Sum64()
}

// Learn runs learning until ctx is done (see learner.run): serve starts
// it beside Follow, with the same changed channel, so a moved tally
// rebuilds the index. Without learning it returns at once.
func (s *Service) Learn(ctx context.Context, changed chan<- struct{}) {
	if s.learner == nil {
		return
	}
	s.learner.run(ctx, changed)
}

// Feedback reports the tools a caller used after the search id: those the
// search returned teach (once: the search is then done), others are
// ignored, and returned as the caller named them, so that a misspelt one
// shows. A tool is named server/name, or by its name alone when one tool
// of that name was returned.
func (s *Service) Feedback(ctx context.Context, caller access.Caller, id string, used []string) (learned int, ignored []string, err error) {
	if s.learner == nil {
		return 0, nil, ErrLearningOff
	}
	return s.learner.use(caller, id, used, true)
}

// Used records that an MCP session's caller used tool after the search id
// (asked for its schema, or called it successfully); the search teaches
// when the session searches again, closes, or after pendingTTL.
func (s *Service) Used(ctx context.Context, caller access.Caller, id, tool string) {
	if s.learner == nil || id == "" {
		return
	}
	s.learner.use(caller, id, []string{tool}, false)
}

// SearchDone says an MCP session's search id teaches what it has now.
func (s *Service) SearchDone(id string) {
	if s.learner == nil || id == "" {
		return
	}
	s.learner.done(id)
}

// ErrLearningOff is returned for feedback while learning is off.
var ErrLearningOff = errors.New("learning is off on this server (learning.enabled in the config)")

// LearnedTool is what was learned about one tool, as a caller may see it:
// the terms of the queries that led to it and the tools used with it,
// among the tools the caller can see.
type LearnedTool struct {
	Tool       string           `json:"tool"`
	Terms      []learn.Weighted `json:"terms"`
	Companions []learn.Weighted `json:"companions"`
}

// Learned is what the current index holds of learning, through the
// caller's view: for tool (server/name, or a name one tool has), or for
// every tool with something learned (at most max) when tool is "". A tool
// the caller cannot see is unknown.
func (s *Service) Learned(caller access.Caller, tool string, max int) ([]LearnedTool, error) {
	if s.learner == nil {
		return nil, ErrLearningOff
	}
	snap, err := s.View(caller)
	if err != nil {
		return nil, err
	}
	// The snapshot holds what was learned for its own tools only
	// (learnedFor): a view's, for a key that sees part of the catalog.
	of := func(row int) LearnedTool {
		id := snap.Catalog.Tool(row).ID()
		lt := LearnedTool{Tool: id, Terms: []learn.Weighted{}, Companions: []learn.Weighted{}}
		if snap.learned != nil {
			lt.Terms = append(lt.Terms, snap.learned.Terms[id]...)
			lt.Companions = append(lt.Companions, snap.learned.Companions[id]...)
		}
		return lt
	}
	if tool != "" {
		row, err := snap.row("", tool)
		if err != nil {
			return nil, err
		}
		return []LearnedTool{of(row)}, nil
	}
	out := []LearnedTool{}
	if snap.learned == nil {
		return out, nil
	}
	// The tools that learned something, in catalog order: found from the
	// learned ids, not by an id built for every row.
	var rows []int
	for _, m := range []map[string][]learn.Weighted{snap.learned.Terms, snap.learned.Companions} {
		for id, ws := range m {
			if row, ok := snap.Catalog.ByID(id); ok && len(ws) > 0 {
				rows = append(rows, row)
			}
		}
	}
	slices.Sort(rows)
	for _, row := range slices.Compact(rows) {
		if len(out) >= max {
			break
		}
		out = append(out, of(row))
	}
	return out, nil
}

// ResetLearned forgets what was learned about tool (server/name, or a
// name the catalog holds once; every tool when ""), rebuilds the index
// without it, and returns the id it forgot ("" for every tool).
func (s *Service) ResetLearned(ctx context.Context, tool string) (string, error) {
	if s.learner == nil {
		return "", ErrLearningOff
	}
	if tool != "" {
		id, err := s.learnedID(tool)
		if err != nil {
			return "", err
		}
		tool = id
	}
	if err := s.learner.cfg.Store.Reset(ctx, tool); err != nil {
		s.learner.fail("reset", err)
		return "", err
	}
	_, err := s.Relearn(ctx)
	return tool, err
}

// learnedID is the id the store keeps tool's evidence under: that of the
// catalog's tool it names, or tool itself when the store has learned
// about it though the catalog no longer holds it (a removed tool can
// still be forgotten). Anything else is ErrUnknownTool, with a hint: the
// store keys full ids, so a bare name or a typo would otherwise be
// answered as if something had been forgotten.
func (s *Service) learnedID(tool string) (string, error) {
	snap := s.cur.Load()
	if snap == nil {
		return "", ErrNotReady
	}
	if l := s.learner.learned.Load(); l != nil && l.Mentions(tool) {
		return tool, nil
	}
	row, err := snap.row("", tool)
	if err != nil {
		return "", err
	}
	return snap.Catalog.Tool(row).ID(), nil
}

// Relearn rebuilds the index with what the store holds now: by Rebuild,
// which also re-reads the catalog, when there is a loader; otherwise from
// the setup the current index was built from.
func (s *Service) Relearn(ctx context.Context) (*Snapshot, error) {
	if s.cfg.Load != nil {
		return s.Rebuild(ctx)
	}
	cur := s.cur.Load()
	if cur == nil {
		return nil, ErrNotReady
	}
	if s.learner != nil {
		s.learner.load(ctx)
	}
	return s.Build(ctx, cur.setup)
}

// LearningStatus is learning's part of the status page.
type LearningStatus struct {
	Enabled     bool       `json:"enabled"`
	Store       string     `json:"store,omitempty"`
	Tools       int        `json:"tools"`      // tools with learned terms in the index
	Companions  int        `json:"companions"` // tools with learned companions
	Recorded    int64      `json:"recorded"`   // events written since start
	Dropped     int64      `json:"dropped"`    // events lost: to a full queue, or to the store failing them (learner.held)
	Waiting     int64      `json:"waiting"`    // events held for a store that failed to write them, written once it answers
	LastLoadAt  *time.Time `json:"last_load_at"`
	LastError   string     `json:"last_error"`
	LastErrorAt *time.Time `json:"last_error_at"`
}

// learningStatus reports learning for status; snap is the one status
// reads.
func (s *Service) learningStatus(snap *Snapshot) *LearningStatus {
	l := s.learner
	if l == nil {
		return &LearningStatus{LastError: s.cfg.LearningOff}
	}
	st := &LearningStatus{Enabled: true, Store: l.cfg.Store.Kind()}
	if snap != nil && snap.learned != nil {
		st.Tools, st.Companions = len(snap.learned.Terms), len(snap.learned.Companions)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	st.Recorded, st.Dropped, st.LastError = l.recorded, l.dropped, l.lastErr
	st.Waiting = l.waiting.Load()
	st.LastLoadAt, st.LastErrorAt = timePtr(l.lastLoadAt), timePtr(l.lastErrAt)
	return st
}
