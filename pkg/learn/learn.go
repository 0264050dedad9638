// Package learn is what toolsearch learns from use: a caller searches, then
// uses some of the tools the search returned (an MCP client asks for a
// tool's schema or calls it; an HTTP caller reports what it used). The
// query's words become evidence for the tools used (query-log document
// expansion: BM25 indexes them as a field of the tool's own), and tools
// used for one task become each other's companions.
//
// Learning must not become a way to push a tool up or to read other
// callers' queries, so evidence is counted per caller and per session: a
// term counts for a tool only once MinCallers distinct callers have taught
// it over at least MinSessions sessions, each caller's part is capped at
// CallerCap sessions, everything decays with a half-life and is dropped
// after the retention, and only plain dictionary words are kept (Keep):
// never numbers, identifiers, e-mail addresses or rare tokens.
package learn

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math"
	"slices"
	"strings"
	"time"
)

// Defaults for Config's zero values, and the reasons for them.
const (
	// DefaultMinCallers: one caller (one API key, or one client address
	// without a key) can never teach a term alone, however many sessions it
	// opens; a second, independent caller must have found the same tool
	// with the same word.
	DefaultMinCallers = 2
	// DefaultMinSessions: a term needs three sessions' worth of evidence,
	// so a chance co-occurrence in one or two tasks teaches nothing.
	DefaultMinSessions = 3
	// DefaultCallerCap: a caller's sessions count at most this much for one
	// term of one tool, so a key that replays a query a thousand times
	// weighs as three honest sessions.
	DefaultCallerCap = 3
	// DefaultHalfLife: last month's evidence counts half; what a catalog's
	// users stop asking for fades.
	DefaultHalfLife = 30 * 24 * time.Hour
	// DefaultRetention: evidence not renewed for this long is deleted.
	DefaultRetention = 90 * 24 * time.Hour
	// MaxTermsPerEvent bounds what one search can teach: its first
	// distinct kept terms.
	MaxTermsPerEvent = 16
	// MaxUsedPerEvent bounds the tools one search can teach about.
	MaxUsedPerEvent = 8
	// MaxTermsPerTool and MaxCompanionsPerTool bound what a tool's index
	// entry takes from learning, whatever callers teach: its heaviest.
	MaxTermsPerTool      = 64
	MaxCompanionsPerTool = 16
	// What a store keeps, whatever callers send, so that its size (and
	// each Load's tally) is bounded by the catalog, not by traffic: one
	// key's evidence from its MaxCallersPerKey most recently active
	// callers (8 callers of at most CallerCap sessions weigh 24, past
	// what a term's weight can add to a tool's index entry); per tool,
	// its MaxStoredTermsPerTool heaviest terms (twice what its index entry
	// takes, so words on their way up have room) and, as the first of a
	// pair, its MaxStoredPairsPerTool heaviest companions. A new key
	// evicts the lightest, which is a flood's own: honest words have
	// several callers' weight.
	MaxCallersPerKey      = 8
	MaxStoredTermsPerTool = 2 * MaxTermsPerTool
	MaxStoredPairsPerTool = 4 * MaxCompanionsPerTool
)

// Config says how evidence counts. The zero value of each field takes its
// default.
type Config struct {
	MinCallers  int
	MinSessions float64
	CallerCap   float64
	HalfLife    time.Duration
	Retention   time.Duration
}

func (c Config) withDefaults() Config {
	if c.MinCallers <= 0 {
		c.MinCallers = DefaultMinCallers
	}
	if c.MinSessions <= 0 {
		c.MinSessions = DefaultMinSessions
	}
	if c.CallerCap <= 0 {
		c.CallerCap = DefaultCallerCap
	}
	if c.HalfLife <= 0 {
		c.HalfLife = DefaultHalfLife
	}
	if c.Retention <= 0 {
		c.Retention = DefaultRetention
	}
	return c
}

// Event is what one search taught: the kept terms of its query and the
// tools used of those it returned, by one caller in one session.
type Event struct {
	Caller string    // Caller's id for a key name or an anonymous address
	Terms  []string  // Keep'd analysed terms, each once
	Used   []string  // tool ids (server/name) used, each returned by the search
	At     time.Time // when
}

// Caller is the id evidence is counted under: a hash, so neither key names
// nor addresses are stored.
func Caller(key, address string) string {
	who := "key:" + key
	if key == "" {
		who = "anon:" + address
	}
	h := sha256.Sum256([]byte(who))
	return hex.EncodeToString(h[:8])
}

// Keep reports whether an analysed query term may be stored: plain letters,
// 3 to 24 of them, that the catalog or the dictionary knows (known). A
// number, an identifier with digits, a token of an e-mail address that is
// no word, a name no dictionary has: none is kept.
func Keep(term string, known func(string) bool) bool {
	if len(term) < 3 || len(term) > 24 {
		return false
	}
	for i := 0; i < len(term); i++ {
		if c := term[i]; c < 'a' || c > 'z' {
			return false
		}
	}
	return known(term)
}

// AppendTerms appends a query's terms as an Event keeps them to out:
// Keep'd, each once, at most MaxTermsPerEvent.
func AppendTerms(out, terms []string, known func(string) bool) []string {
	n := len(out)
	for _, t := range terms {
		if len(out)-n == MaxTermsPerEvent {
			break
		}
		if Keep(t, known) && !slices.Contains(out[n:], t) {
			out = append(out, t)
		}
	}
	return out
}

// Evidence is one caller's decayed weight for a key (a tool's term, or two
// tools used together), as a store holds it.
type Evidence struct {
	Weight  float64
	Updated time.Time
}

// decayed is w at now, halving every half-life since it was updated.
func decayed(e Evidence, now time.Time, halfLife time.Duration) float64 {
	age := now.Sub(e.Updated)
	if age <= 0 {
		return e.Weight
	}
	return e.Weight * math.Exp2(-float64(age)/float64(halfLife))
}

// Add is e with one more session at now, decayed first and capped.
func (c Config) Add(e Evidence, now time.Time) Evidence {
	c = c.withDefaults()
	return Evidence{Weight: min(decayed(e, now, c.HalfLife)+1, c.CallerCap), Updated: now}
}

// Expired reports whether e has not been renewed within the retention.
func (c Config) Expired(e Evidence, now time.Time) bool {
	return now.Sub(e.Updated) > c.withDefaults().Retention
}

// Learned is what counts, once the thresholds are applied: each tool's
// learned terms with their weight (decayed sessions, at least
// MinSessions), and each tool's companions with theirs. It is immutable.
type Learned struct {
	Terms      map[string][]Weighted // tool id -> terms, heaviest first
	Companions map[string][]Weighted // tool id -> tools used with it, heaviest first
}

// Weighted is a term or a tool with its weight.
type Weighted struct {
	Name   string  `json:"name"`
	Weight float64 `json:"weight"`
}

// Empty reports whether nothing was learned.
func (l *Learned) Empty() bool { return l == nil || len(l.Terms) == 0 && len(l.Companions) == 0 }

// Mentions reports whether l learned anything about tool: terms, or
// companions on either side.
func (l *Learned) Mentions(tool string) bool {
	if l == nil {
		return false
	}
	if len(l.Terms[tool]) > 0 || len(l.Companions[tool]) > 0 {
		return true
	}
	for _, ws := range l.Companions {
		if slices.ContainsFunc(ws, func(w Weighted) bool { return w.Name == tool }) {
			return true
		}
	}
	return false
}

// Tally gathers evidence per caller into Learned: for each key (tool and
// term, or two tools), the callers' decayed weights.
type Tally struct {
	cfg   Config
	now   time.Time
	terms map[[2]string]*count
	pairs map[[2]string]*count
}

type count struct {
	callers int
	weight  float64
}

// NewTally starts a tally at now.
func NewTally(cfg Config, now time.Time) *Tally {
	return &Tally{cfg: cfg.withDefaults(), now: now, terms: map[[2]string]*count{}, pairs: map[[2]string]*count{}}
}

// Term adds one caller's evidence that term led to tool.
func (t *Tally) Term(tool, term string, e Evidence) { t.add(t.terms, [2]string{tool, term}, e) }

// Pair adds one caller's evidence that tools a and b were used together.
func (t *Tally) Pair(a, b string, e Evidence) { t.add(t.pairs, [2]string{a, b}, e) }

func (t *Tally) add(m map[[2]string]*count, k [2]string, e Evidence) {
	if t.cfg.Expired(e, t.now) {
		return
	}
	w := decayed(e, t.now, t.cfg.HalfLife)
	c := m[k]
	if c == nil {
		c = &count{}
		m[k] = c
	}
	c.callers++
	c.weight += min(w, t.cfg.CallerCap)
}

// Learned is what passes the thresholds.
func (t *Tally) Learned() *Learned {
	l := &Learned{Terms: map[string][]Weighted{}, Companions: map[string][]Weighted{}}
	pass := func(c *count) bool { return c.callers >= t.cfg.MinCallers && c.weight >= t.cfg.MinSessions }
	for k, c := range t.terms {
		if pass(c) {
			l.Terms[k[0]] = append(l.Terms[k[0]], Weighted{k[1], c.weight})
		}
	}
	for k, c := range t.pairs {
		if pass(c) {
			l.Companions[k[0]] = append(l.Companions[k[0]], Weighted{k[1], c.weight})
			l.Companions[k[1]] = append(l.Companions[k[1]], Weighted{k[0], c.weight})
		}
	}
	heaviest(l.Terms, MaxTermsPerTool)
	heaviest(l.Companions, MaxCompanionsPerTool)
	return l
}

// heaviest sorts each list of m heaviest first (by name on a tie) and
// keeps its first limit.
func heaviest(m map[string][]Weighted, limit int) {
	for k, ws := range m {
		slices.SortFunc(ws, func(a, b Weighted) int {
			return cmp.Or(cmp.Compare(b.Weight, a.Weight), strings.Compare(a.Name, b.Name))
		})
		m[k] = ws[:min(len(ws), limit)]
	}
}

// pairKey orders two tools, so a pair is one key whichever came first.
func pairKey(a, b string) (string, string) {
	if a > b {
		return b, a
	}
	return a, b
}

// Pairs is every two tools of used, ordered (pairKey), each once.
func Pairs(used []string) [][2]string {
	var out [][2]string
	for i := range used {
		for j := i + 1; j < len(used); j++ {
			if used[i] == used[j] {
				continue
			}
			a, b := pairKey(used[i], used[j])
			if !slices.Contains(out, [2]string{a, b}) {
				out = append(out, [2]string{a, b})
			}
		}
	}
	return out
}

// touched is what an event with these pairs adds rows to, for a store to
// bound: the tools whose terms it taught (none without terms), and the
// first tool of each pair, under whose name a pair is kept; each once.
func touched(ev Event, pairs [][2]string) (terms, pairTools []string) {
	if len(ev.Terms) > 0 {
		terms = slices.Compact(slices.Sorted(slices.Values(ev.Used)))
	}
	for _, p := range pairs {
		if !slices.Contains(pairTools, p[0]) {
			pairTools = append(pairTools, p[0])
		}
	}
	return terms, pairTools
}

// Store keeps evidence: an embedded file (Open) by default, PostgreSQL
// (OpenPostgres) for replicas that share what they learn. Load merges
// every replica's evidence.
type Store interface {
	Record(ctx context.Context, ev Event) error
	Load(ctx context.Context) (*Learned, error)
	// Reset forgets what was learned about tool (every tool when "").
	Reset(ctx context.Context, tool string) error
	Close() error
	Kind() string
}

// ErrMaybeRecorded is what a Record error is (errors.Is) when the store
// may have written the event all the same: the connection failed as the
// database was committing it. Such an event is not written again, since
// a use would then count twice; any other Record error wrote nothing.
var ErrMaybeRecorded = errors.New("learning store: the event may have been recorded")

// maybeRecorded is a Record error that is an ErrMaybeRecorded; its text
// is err's (scrubbed of the password, which drops err's own chain).
type maybeRecorded struct{ error }

func (m maybeRecorded) Is(target error) bool { return target == ErrMaybeRecorded }
func (m maybeRecorded) Unwrap() error        { return m.error }

// ErrWaiting is what an opening error is (errors.Is) when the store was
// returned all the same and becomes usable by itself (ErrUnreachable,
// ErrHeld): its calls fail until then, and searches never wait for it.
var ErrWaiting = errors.New("learning store: not usable yet")

// waiting is an ErrWaiting with its own message.
type waiting string

func (w waiting) Error() string        { return string(w) }
func (w waiting) Is(target error) bool { return target == ErrWaiting }

// key joins a store key's parts; no tool id, term or caller id holds a
// NUL.
func key(parts ...string) string { return strings.Join(parts, "\x00") }

func split(k string) []string { return strings.Split(k, "\x00") }

// row is one caller's evidence for one key of a tool (a term, or the
// other tool of a pair), as a store reads a tool's rows to bound them.
type row struct {
	Key, Caller string
	Evidence
}

// excess is what a store deletes of one tool's rows to keep them within
// bounds: past MaxCallersPerKey callers of a key, the least recently
// active; past maxKeys keys, the lightest (decayed, each caller capped as
// the tally counts it; on a tie the least recently renewed). Both stores
// bound themselves by it, so they keep the same rows.
func (c Config) excess(rows []row, maxKeys int, now time.Time) []row {
	c = c.withDefaults()
	slices.SortFunc(rows, func(a, b row) int {
		return cmp.Or(strings.Compare(a.Key, b.Key), b.Updated.Compare(a.Updated), strings.Compare(a.Caller, b.Caller))
	})
	type group struct {
		rows    []row // kept, most recent first
		weight  float64
		renewed time.Time
	}
	var groups []group
	var out []row
	for i := 0; i < len(rows); {
		j := i + 1
		for j < len(rows) && rows[j].Key == rows[i].Key {
			j++
		}
		g := group{rows: rows[i:min(j, i+MaxCallersPerKey)], renewed: rows[i].Updated}
		out = append(out, rows[min(j, i+MaxCallersPerKey):j]...)
		for _, r := range g.rows {
			g.weight += min(decayed(r.Evidence, now, c.HalfLife), c.CallerCap)
		}
		groups = append(groups, g)
		i = j
	}
	if len(groups) <= maxKeys {
		return out
	}
	slices.SortFunc(groups, func(a, b group) int {
		return cmp.Or(cmp.Compare(b.weight, a.weight), b.renewed.Compare(a.renewed), strings.Compare(a.rows[0].Key, b.rows[0].Key))
	})
	for _, g := range groups[maxKeys:] {
		out = append(out, g.rows...)
	}
	return out
}
