// Package schemare reads the regular expressions of a JSON Schema as a
// validator does (pattern, and the names of patternProperties) and says
// whether Go's regexp reads them, within a budget.
//
// An upstream's schema is untrusted, and a validator compiles every
// pattern of a schema before it checks anything: 1,073 patterns of
// (\w+\s*){1,1000} in one 64 KB schema took 2.7 s to compile, and 1,002
// of [\p{L}\p{N}]{1,1000} took 0.94 s (94 ms only to parse, each Unicode
// class being a table of hundreds of ranges built anew). Past the budget
// a schema's patterns are not read at all, and its arguments are the
// upstream's to check. Real schemas hold a few patterns of a few dozen
// instructions.
package schemare

import (
	"fmt"
	"maps"
	"regexp/syntax"
	"slices"
	"strings"
)

// The budget of one schema's patterns.
const (
	MaxPatterns       = 64
	MaxPatternBytes   = 16 << 10
	MaxUnicodeClasses = 32     // \p{...} and \P{...}
	MaxInsts          = 10_000 // of their programs, estimated without building them
)

// Problem is the first pattern of a schema that Go's regexp does not read
// (Err says why), or the one that took the schema's patterns past the
// budget (Err is nil).
type Problem struct {
	At      string // a JSON pointer: where the pattern is
	Pattern string
	Err     error
}

// Check walks schema, a decoded JSON tree, in key order, and returns its
// first problem pattern, or nil.
func Check(schema any) *Problem {
	var c checker
	c.schema(schema, "", 0)
	return c.problem
}

type checker struct {
	patterns, bytes, classes, insts int
	problem                         *Problem
}

// maxDepth stops a walk of nesting no JSON decoder here lets through.
const maxDepth = 128

// Keywords whose value is a schema, a list of them, or a map of names
// (not keywords: a parameter may be called "pattern") to them; every
// other keyword's value is data (enum, const, default, examples) or not
// a schema at all, as validators read it. Keywords are matched as
// encoding/json matches field names, ignoring case ("Pattern", and
// "pattern" with a Kelvin sign for its k), since jsonschema-go reads a
// schema so.
var (
	oneSchema = []string{"additionalItems", "additionalProperties", "contains", "contentSchema", "else", "if", "items", "not", "propertyNames", "then", "unevaluatedItems", "unevaluatedProperties"}
	schemas   = []string{"allOf", "anyOf", "items", "oneOf", "prefixItems"}
	named     = []string{"$defs", "definitions", "dependencies", "dependentSchemas", "patternProperties", "properties"}
)

func (c *checker) schema(v any, at string, depth int) {
	m, ok := v.(map[string]any)
	if !ok || depth > maxDepth || c.problem != nil {
		return
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		here := at + "/" + token(k)
		switch x := m[k].(type) {
		case string:
			if strings.EqualFold(k, "pattern") {
				c.pattern(here, x)
			}
		case map[string]any:
			switch {
			case keyword(named, k):
				names := strings.EqualFold(k, "patternProperties") // are patterns
				for _, name := range slices.Sorted(maps.Keys(x)) {
					if names {
						c.pattern(here, name)
					}
					c.schema(x[name], here+"/"+token(name), depth+1)
				}
			case keyword(oneSchema, k):
				c.schema(x, here, depth+1)
			}
		case []any:
			if keyword(schemas, k) {
				for i, e := range x {
					c.schema(e, fmt.Sprintf("%s/%d", here, i), depth+1)
				}
			}
		}
		if c.problem != nil {
			return
		}
	}
}

// keyword reports whether k is one of words, as encoding/json matches
// names.
func keyword(words []string, k string) bool {
	return slices.ContainsFunc(words, func(w string) bool { return strings.EqualFold(w, k) })
}

// pattern charges p, at at, to the budget and parses it as regexp does.
func (c *checker) pattern(at, p string) {
	if c.problem != nil {
		return
	}
	c.patterns++
	c.bytes += len(p)
	c.classes += strings.Count(p, `\p`) + strings.Count(p, `\P`)
	if c.patterns > MaxPatterns || c.bytes > MaxPatternBytes || c.classes > MaxUnicodeClasses {
		c.problem = &Problem{At: at, Pattern: p}
		return
	}
	re, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		c.problem = &Problem{At: at, Pattern: p, Err: err}
		return
	}
	if c.insts += size(re); c.insts > MaxInsts {
		c.problem = &Problem{At: at, Pattern: p}
	}
}

// size estimates the instructions re compiles to, at most MaxInsts+1: a
// repetition is its body as many times as it may repeat, which is what
// simplifying it writes out before it is compiled.
func size(re *syntax.Regexp) int {
	const most = MaxInsts + 1
	if re.Op == syntax.OpRepeat {
		k := re.Max
		if k < 0 {
			k = re.Min + 1
		}
		return min(1+max(k, 1)*size(re.Sub[0]), most)
	}
	n := 1
	if re.Op == syntax.OpLiteral {
		n += len(re.Rune)
	}
	for _, sub := range re.Sub {
		n = min(n+size(sub), most)
	}
	return n
}

// token is name as a JSON pointer writes it (RFC 6901).
func token(name string) string { return pointerEscaper.Replace(name) }

// pointerEscaper is built once: a Replacer of single bytes builds a table
// of all 256, and token runs for every key a walk meets.
var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")
