// Package hints gives every tool the MCP safety annotations a router acts
// on (readOnlyHint, destructiveHint, idempotentHint, openWorldHint): the
// ones its server declared, and, where it declared none, ones inferred from
// the verb its name (or else its description) leads with and from its
// parameters. A declared hint is never overridden; an inferred one is
// always named as inferred, so a caller can weigh a guess as a guess.
//
// The inference is a table (verbs.go) a reviewer can read and extend. Its
// costly mistake is a destructive tool inferred read-only, so the table
// leans the other way: any destructive verb anywhere in the name wins, and
// a read verb is not trusted when the description's first sentence also
// names a change. Precision and recall per hint, against servers that
// declare theirs, are in evals/README.md ("Safety annotations").
package hints

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/toolsearch/toolsearch/pkg/analysis"
)

// The annotation keys, as MCP spells them.
const (
	ReadOnly    = "readOnlyHint"
	Destructive = "destructiveHint"
	Idempotent  = "idempotentHint"
	OpenWorld   = "openWorldHint"
)

// Keys are the four hints, in the order outputs list them.
var Keys = []string{ReadOnly, Destructive, Idempotent, OpenWorld}

const nKeys = 4 // len(Keys)

// Hints are a tool's effective safety annotations.
type Hints struct {
	values [nKeys]int8 // per Keys: 0 unknown, 1 true, -1 false
	// Inferred names the hints that were inferred, in Keys order; nil when
	// every known hint was declared. Shared by every tool with the same
	// set: not to be modified.
	Inferred []string
	// Annotations is the tool's annotations object with the inferred hints
	// added: the declared bytes unchanged when nothing was inferred. Shared
	// as Inferred is.
	Annotations json.RawMessage
}

// is reports whether hint i of Keys is known to be true.
func (h Hints) is(i int) bool { return h.values[i] > 0 }

// IsReadOnly reports whether the tool is known (declared or inferred) to
// change nothing.
func (h Hints) IsReadOnly() bool { return h.is(0) }

// IsDestructive reports whether the tool is known (declared or inferred)
// to be able to destroy or overwrite data. A read-only tool never is,
// whatever its destructiveHint says: MCP gives that hint meaning only when
// readOnlyHint is false. A tool with no hint either way is not: the gate
// before a call acts on evidence, and read_only is the filter for callers
// who want certainty.
func (h Hints) IsDestructive() bool {
	if h.IsReadOnly() {
		return false
	}
	return h.is(1)
}

// Of returns a tool's hints: those declared in its annotations, and for
// each one not declared, the inferred one, if any. params are the names of
// the tool's top-level parameters (catalog.Fields.ParamNames), any case.
func Of(name, description string, params []string, annotations json.RawMessage) Hints {
	h := Hints{Annotations: annotations}
	var declared map[string]any
	if len(annotations) > 0 {
		// Unreadable annotations declare nothing; a catalog file's are
		// refused at load, and an upstream's come typed from the SDK.
		_ = json.Unmarshal(annotations, &declared)
	}
	guess := infer(name, description, params)
	mask := 0 // of Keys, the inferred
	for i, k := range Keys {
		if v, ok := declared[k]; ok {
			if b, isBool := v.(bool); isBool {
				h.values[i] = val(b)
			}
			continue // declared, even if unreadable: never overridden
		}
		if guess[i] != 0 {
			h.values[i] = guess[i]
			mask |= 1 << i
		}
	}
	h.Inferred = inferredNames[mask]
	switch {
	case mask == 0:
	case len(declared) == 0:
		h.Annotations = inferredOnly[h.values]
	default:
		h.Annotations = h.withInferred(declared)
	}
	return h
}

// withInferred is declared with h's inferred hints added, as JSON (keys
// sorted: stable bytes).
func (h Hints) withInferred(declared map[string]any) json.RawMessage {
	merged := maps.Clone(declared)
	if merged == nil {
		merged = map[string]any{}
	}
	for _, k := range h.Inferred {
		merged[k] = h.values[slices.Index(Keys, k)] > 0
	}
	b, _ := json.Marshal(merged)
	return b
}

// A catalog's tools share their Inferred lists and, when they declare
// nothing, their annotations: there are 16 sets of inferred hints and 81
// ways to infer all four, where a copy per tool was about 150 bytes, 15
// MB at 100,000 tools.
var (
	// inferredNames are Keys' subsets in Keys order, by bit mask.
	inferredNames [1 << nKeys][]string
	// inferredOnly is the annotations of a tool that declares none, by
	// its (all inferred) values.
	inferredOnly = map[[nKeys]int8]json.RawMessage{}
)

func init() {
	for mask := 1; mask < len(inferredNames); mask++ {
		for i, k := range Keys {
			if mask&(1<<i) != 0 {
				inferredNames[mask] = append(inferredNames[mask], k)
			}
		}
	}
	// Each way to infer the four hints, each -1, 0 or 1: 3^4 of them.
	for way := range 81 {
		var h Hints
		mask := 0
		for i, n := 0, way; i < nKeys; i, n = i+1, n/3 {
			if h.values[i] = int8(n%3) - 1; h.values[i] != 0 {
				mask |= 1 << i
			}
		}
		h.Inferred = inferredNames[mask]
		inferredOnly[h.values] = h.withInferred(nil)
	}
}

func val(b bool) int8 {
	if b {
		return 1
	}
	return -1
}

// infer guesses the four hints from the tool's leading verb and parameters.
func infer(name, description string, paramNames []string) [4]int8 {
	var out [4]int8
	var buf [8]string
	stems := buf[:0] // of the name's words: a name has a few
	analysis.AppendWords(name, func(w string) { stems = append(stems, analysis.Stem(w)) })
	c := classify(stems, description)
	if c != read && c != none && hasParam(paramNames, "force", "overwrite") {
		c = remove // a force or overwrite switch is how a tool says it destroys
	}
	switch c {
	case read:
		out[0] = 1
	case additive:
		out[0], out[1], out[2] = -1, -1, -1
	case update, act:
		out[0], out[1] = -1, 1
	case remove:
		out[0], out[1], out[2] = -1, 1, 1
	}
	if c != none && (openWorldIn(stems) || hasParam(paramNames, "url", "uri", "webhook", "endpoint")) {
		out[3] = 1
	}
	return out
}

// hasParam reports whether a parameter is one of names, in any case.
func hasParam(params []string, names ...string) bool {
	for _, p := range params {
		for _, n := range names {
			if strings.EqualFold(p, n) {
				return true
			}
		}
	}
	return false
}

// classify finds the tool's action from its name's stemmed words and
// its description: the first verb of its name; any destructive verb
// anywhere in the name; or, for a name without a verb, the first verb in
// the opening words of its description.
func classify(nameStems []string, description string) class {
	c := none
	for _, w := range nameStems {
		v := verbs[w]
		if v == remove {
			return remove
		}
		if c == none {
			c = v
		}
	}
	if c != none && c != read {
		return c
	}
	var first []class // the verbs of the description's first sentence, by word
	analysis.AppendWords(firstSentence(description), func(w string) { first = append(first, verbs[analysis.Stem(w)]) })
	if c == none {
		for _, v := range first[:min(len(first), leadWords)] {
			if v != none {
				c = v
				break
			}
		}
	}
	if c == read {
		// "Get the message and delete it": the change decides.
		for _, v := range first {
			if v == remove || v == update {
				return none
			}
		}
	}
	return c
}

// leadWords is how far into a description its leading verb is looked
// for: past a product name or a "Tool to" preamble, not into the body.
const leadWords = 6

func firstSentence(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 400 {
		s = s[:400]
	}
	if i := strings.IndexAny(s, ".\n"); i >= 0 {
		s = s[:i]
	}
	return s
}

func openWorldIn(stems []string) bool {
	for _, w := range stems {
		if openWorld[w] {
			return true
		}
	}
	return false
}

// Table holds a catalog's hints by row in six bytes a row and no
// pointers, where a Hints takes 56: a row's inferred names are one of
// sixteen lists, and its annotations are the ones it declared (which its
// catalog holds) when nothing was inferred, or a shared set when it
// declared none. Only a tool that declared some hints and had others
// inferred has annotations of its own, which Table keeps. At 100,000
// tools that is 4.8 MiB less per snapshot, and a rebuild holds two.
type Table struct {
	rows   []packed
	merged map[int32]json.RawMessage // rows with inferred hints added to declared ones
}

type packed struct {
	values [nKeys]int8
	mask   uint8 // of Keys, the inferred
	merged bool  // in Table.merged
}

// NewTable packs hs, which Of made, by row.
func NewTable(hs []Hints) Table {
	t := Table{rows: make([]packed, len(hs))}
	for i, h := range hs {
		p := packed{values: h.values}
		for j, k := range Keys {
			if slices.Contains(h.Inferred, k) {
				p.mask |= 1 << j
			}
		}
		p.merged = p.mask != 0 && string(h.Annotations) != string(inferredOnly[h.values])
		t.set(i, p, h.Annotations)
	}
	return t
}

// set puts p at row, and its own annotations when it has them.
func (t *Table) set(row int, p packed, merged json.RawMessage) {
	t.rows[row] = p
	if !p.merged {
		return
	}
	if t.merged == nil {
		t.merged = map[int32]json.RawMessage{}
	}
	t.merged[int32(row)] = merged
}

// At is row's hints; declared is the annotations its tool declared, which
// Of was given.
func (t Table) At(row int, declared json.RawMessage) Hints {
	p := t.rows[row]
	h := Hints{values: p.values, Inferred: inferredNames[p.mask], Annotations: declared}
	switch {
	case p.merged:
		h.Annotations = t.merged[int32(row)]
	case p.mask != 0:
		h.Annotations = inferredOnly[p.values]
	}
	return h
}

// Subset is the table of rows, in their order.
func (t Table) Subset(rows []int) Table {
	s := Table{rows: make([]packed, len(rows))}
	for j, r := range rows {
		s.set(j, t.rows[r], t.merged[int32(r)])
	}
	return s
}
