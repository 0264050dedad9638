package search

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"slices"
	"sync"
	"time"

	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/learn"
)

// searchID is a remembered search's id: random, so that a caller cannot
// guess another's (feedback also checks the caller); 32 hex digits on
// the wire.
type searchID [16]byte

func (id searchID) String() string {
	var b [2 * len(id)]byte
	hex.Encode(b[:], id[:])
	return string(b[:])
}

// parseSearchID reads an id as String writes it, in lower case (the
// window's ids were map keys as sent before it); ok is false for
// anything else.
func parseSearchID(s string) (id searchID, ok bool) {
	if len(s) != 2*len(id) {
		return id, false
	}
	if _, err := hex.Decode(id[:], []byte(s)); err != nil {
		return id, false
	}
	var b [2 * len(id)]byte
	hex.Encode(b[:], id[:])
	return id, string(b[:]) == s
}

// pendingWindow holds the searches that may still teach, in arrival
// order: at most len(slots), each for at most ttl, and at most
// maxPerCaller of one caller's. A search that leaves it (reported on, expired, pushed
// out by a newer one, or drained at stop) teaches what it was used for.
//
// Every search with learning on passes through it, so it is built for
// that path: the slots are allocated once, and a search's record (its
// kept terms and returned tools, length-prefixed in one byte slice of at
// most maxRecord, freed when the search leaves) has nothing for the
// collector to scan and keeps no catalog string alive after a rebuild.
// The expirable LRU it replaces made three map writes, a list element and
// two objects a search and kept 10,000 pointer-laden entries for every
// collection to trace (BENCHMARKS.md, "What learning costs a search").
type pendingWindow struct {
	mu    sync.Mutex
	slots []pendingSlot
	byID  map[searchID]int32
	// The slots in use form a list from oldest to newest through next;
	// those freed a list from free through next. -1 ends a list. Slots
	// from fresh on were never used: their pages are not touched until
	// a search needs them.
	oldest, newest, free, fresh int32
	perCaller                   map[string]int
	maxPerCaller                int
	ttl                         time.Duration
}

// pendingSlot is one remembered search.
type pendingSlot struct {
	id         searchID
	at         time.Time
	prev, next int32
	caller     string
	record     []byte // terms strings, then returned tools' server and name strings, each length-prefixed (appendRecord)
	terms      int
	used       []string // tool ids (server/name), each once
}

func newPendingWindow(size, maxPerCaller int, ttl time.Duration) *pendingWindow {
	return &pendingWindow{
		slots:     make([]pendingSlot, size),
		byID:      map[searchID]int32{},
		oldest:    -1,
		newest:    -1,
		free:      -1,
		perCaller: map[string]int{}, maxPerCaller: maxPerCaller, ttl: ttl,
	}
}

// maxRecord bounds a pending search's record, so that the window holds at
// most its size × maxRecord (40 MiB) whatever callers ask and catalogs
// name: 50 returned tools (MaxTopK) with names of up to 256 bytes
// (catalog.MaxNameBytes) would take 26 KB. Terms take at most 16 × 25
// bytes; tools are recorded in the answer's order while they fit, which
// with names of a usual length is all of them, and with the longest at
// least seven. A report on a tool left out is ignored, as one the search
// did not return.
const maxRecord = 4 << 10

// appendRecord appends a search's record to rec: the kept terms, then
// each returned tool's server and name while the record fits maxRecord.
// tools is how many it holds: every retrieved tool unless the record
// filled first.
func appendRecord(rec []byte, terms []string, hits []Hit, cat *catalog.Catalog) (_ []byte, tools int) {
	for _, t := range terms {
		rec = appendString(rec, t)
	}
	for _, h := range hits {
		if h.Source == SourceCore {
			continue
		}
		t := cat.Tool(h.Row)
		if len(rec)+len(t.Server)+len(t.Name)+2*binary.MaxVarintLen16 > maxRecord {
			break
		}
		rec = appendString(appendString(rec, t.Server), t.Name)
		tools++
	}
	return rec, tools
}

// appendString appends s, length-prefixed, to a pending search's record.
func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// recordFields yields the length-prefixed strings of a record, as
// slices of it: reading a record (a report checked against it) allocates
// nothing.
func recordFields(rec []byte) func(yield func([]byte) bool) {
	return func(yield func([]byte) bool) {
		for len(rec) > 0 {
			n, k := binary.Uvarint(rec)
			f := rec[k : k+int(n) : k+int(n)]
			rec = rec[k+int(n):]
			if !yield(f) {
				return
			}
		}
	}
}

// full reports whether caller holds its share of the window.
func (w *pendingWindow) full(caller string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.perCaller[caller] >= w.maxPerCaller
}

// add remembers a search of caller's, its record (appendRecord, copied)
// holding terms terms first, under id (random; a clash, 2^-128, is refused).
// It returns false, remembering nothing, when caller holds its share.
// Searches it pushes out or finds expired are finished onto taught.
func (w *pendingWindow) add(id searchID, caller string, record []byte, terms int, now time.Time, taught []learn.Event) (bool, []learn.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	taught = w.expire(now, taught)
	if _, clash := w.byID[id]; clash || w.perCaller[caller] >= w.maxPerCaller {
		return false, taught
	}
	var i int32
	switch {
	case w.free >= 0:
		i = w.free
		w.free = w.slots[i].next
	case int(w.fresh) < len(w.slots):
		i = w.fresh
		w.fresh++
	default:
		taught = w.finish(w.oldest, taught)
		i = w.free
		w.free = w.slots[i].next
	}
	s := &w.slots[i]
	s.id, s.at, s.caller, s.terms = id, now, caller, terms
	s.record = bytes.Clone(record)
	s.prev, s.next = w.newest, -1
	if w.newest >= 0 {
		w.slots[w.newest].next = i
	} else {
		w.oldest = i
	}
	w.newest = i
	w.byID[id] = i
	w.perCaller[caller]++
	return true, taught
}

// use adds tools (each server/name, or a name one returned tool has) to
// the uses of caller's search id, and finishes it when final. ok is
// false for an id the window does not hold for caller; the tools the
// search did not return are ignored, and appended as named to ignored,
// which the caller sizes so that nothing is allocated under the lock.
func (w *pendingWindow) use(id searchID, caller string, tools []string, final bool, now time.Time, taught []learn.Event, ignored []string) (used int, _ []string, ok bool, _ []learn.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	taught = w.expire(now, taught)
	i, held := w.byID[id]
	if !held || w.slots[i].caller != caller {
		return 0, ignored, false, taught
	}
	s := &w.slots[i]
	for _, u := range tools {
		switch t := s.resolve(u); {
		case t == "":
			ignored = append(ignored, u)
		case !slices.Contains(s.used, t) && len(s.used) < learn.MaxUsedPerEvent:
			s.used = append(s.used, t)
			used++
		}
	}
	if final {
		taught = w.finish(i, taught)
	}
	return used, ignored, true, taught
}

// remove finishes the search id, if the window holds it.
func (w *pendingWindow) remove(id searchID, taught []learn.Event) []learn.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	if i, held := w.byID[id]; held {
		taught = w.finish(i, taught)
	}
	return taught
}

// expire finishes the searches older than the ttl at now.
func (w *pendingWindow) expire(now time.Time, taught []learn.Event) []learn.Event {
	for w.oldest >= 0 && now.Sub(w.slots[w.oldest].at) > w.ttl {
		taught = w.finish(w.oldest, taught)
	}
	return taught
}

// sweep is expire for callers outside the window.
func (w *pendingWindow) sweep(now time.Time, taught []learn.Event) []learn.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.expire(now, taught)
}

// purge finishes every search.
func (w *pendingWindow) purge(taught []learn.Event) []learn.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.oldest >= 0 {
		taught = w.finish(w.oldest, taught)
	}
	return taught
}

// finish takes slot i out of the window, appending what it taught (if it
// was used) to taught.
func (w *pendingWindow) finish(i int32, taught []learn.Event) []learn.Event {
	s := &w.slots[i]
	if len(s.used) > 0 {
		ev := learn.Event{Caller: s.caller, Used: slices.Clone(s.used)} // At: the learner's clock
		for t := range recordFields(s.record) {
			if len(ev.Terms) == s.terms {
				break
			}
			ev.Terms = append(ev.Terms, string(t))
		}
		taught = append(taught, ev)
	}
	if s.prev >= 0 {
		w.slots[s.prev].next = s.next
	} else {
		w.oldest = s.next
	}
	if s.next >= 0 {
		w.slots[s.next].prev = s.prev
	} else {
		w.newest = s.prev
	}
	delete(w.byID, s.id)
	if w.perCaller[s.caller]--; w.perCaller[s.caller] <= 0 {
		delete(w.perCaller, s.caller)
	}
	clear(s.used)
	s.caller, s.record, s.used = "", nil, s.used[:0]
	s.next, w.free = w.free, i
	return taught
}

// resolve is the id of the tool of s's answer that u names: u itself
// (server/name), or the one returned tool named u; "" for none.
func (s *pendingSlot) resolve(u string) string {
	var match, server []byte
	n, ambiguous := 0, false
	for f := range recordFields(s.record) {
		if n++; n <= s.terms {
			continue
		}
		if (n-s.terms)%2 == 1 {
			server = f
			continue
		}
		name := f
		switch {
		case len(u) == len(server)+1+len(name) && u[len(server)] == '/' && u[:len(server)] == string(server) && u[len(server)+1:] == string(name):
			return u
		case string(name) == u && match == nil:
			match = server
		case string(name) == u:
			ambiguous = true // teaches nothing
		}
	}
	if match == nil || ambiguous {
		return ""
	}
	return string(match) + "/" + u
}
