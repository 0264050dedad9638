package catalog

import (
	"encoding/binary"
	"encoding/json"
	"slices"
	"strings"
	"sync"

	"github.com/toolsearch/toolsearch/pkg/internal/pack"
)

// Schemas is a tool's input schema, output schema and annotations, each
// JSON (compact, as catalogs and upstreams give them) or absent. The
// three lie end to end in one string, coded: each of the fragments below
// stands as one byte under 0x20, a byte compact JSON never holds (a
// string's control characters are escaped), and any such byte of the
// input is kept after an escape byte, so any bytes come back as given.
//
// Why: the schemas are most of what a catalog holds beside its vectors
// (33 MB of the 44 of 100,000 generated tools), and while a rebuild makes
// a new index the old one serves, so two catalogs are held at the
// rebuild's peak. Coded they take 0.49 to 0.72 of their bytes in the
// shared evaluation catalogs and 0.58 in generated ones, and one string
// with two ends takes 24 bytes of a tool's record where three slices
// took 72. Reading a schema back is a copy that expands the fragments;
// it happens for the tools an answer shows, and once per tool at a build.
type Schemas struct {
	coded   string
	in, out uint32 // where the input schema's code ends, and the output schema's
}

// fragments are the codes' expansions: JSON Schema's vocabulary and its
// punctuation, no property name or prose. They were chosen one at a time
// for the bytes they save over the schemas of real catalogs (the five
// shared evaluation sets and mcp-real), and a choice made on five of
// those six saved about as much on the sixth as on its own (estimated by
// replacing the fragments longest first); catgen's schemas played no
// part. A code is its index. Coded strings live only in the process
// (nothing writes them out), so the list may change from one version to
// the next, up to escape entries.
var fragments = [...]string{
	`{"type":"object","`,
	`"description":"`,
	`"type":"string"`,
	`,"required":["`,
	`"type":"`,
	`"default":`,
	`"},"`,
	`":{"`,
	`","`,
	`"$schema":"http://json-schema.org/draft-07/schema#"`,
	`"}}`,
	`"additionalProperties":false`,
	`"]}`,
	`},"`,
	`false`,
	`"}`,
	`,"minimum":`,
	`true`,
	`,"title":"`,
	`,"enum":["`,
	`":"`,
	`{"properties":{`,
	`,"maximum":`,
	`,"required":[`,
	`{"minLength":`,
	`,"items":{`,
}

// escape keeps the byte after it as it is.
const escape = 0x1f

// byPair finds the fragments that begin with two bytes: byPair[a<<8|b]
// is 1 + the index in groups of their codes, or 0 for none. special is
// whether a byte begins a fragment or must be escaped.
var byPair, groups, special = func() (byPair *[1 << 16]uint8, groups [][]byte, special [256]bool) {
	if len(fragments) > escape {
		panic("catalog: more fragments than codes")
	}
	byPair = new([1 << 16]uint8)
	for c := range 0x20 {
		special[c] = true
	}
	for code, f := range fragments {
		special[f[0]] = true
		k := uint16(f[0])<<8 | uint16(f[1])
		if byPair[k] == 0 {
			groups = append(groups, nil)
			byPair[k] = uint8(len(groups))
		}
		groups[byPair[k]-1] = append(groups[byPair[k]-1], byte(code))
	}
	return byPair, groups, special
}()

// appendCoded appends src coded, in the fewest bytes the fragments allow.
// Taking the longest fragment at each byte would not: `":{"` takes the
// quote that opens the `"description":"` after it, and coded that way a
// generated catalog's schemas kept 0.75 of their bytes where this keeps
// 0.58. So the fewest bytes from each position to the end are worked out
// from the end back, then the choices read forwards; runs of bytes that
// begin no fragment, most of a schema's prose and names, cost one pass
// each way.
func appendCoded(dst, src []byte) []byte {
	c := coders.Get().(*coder)
	defer coders.Put(c)
	n := len(src)
	c.cost = slices.Grow(c.cost[:0], n+1)[:n+1]
	c.pick = slices.Grow(c.pick[:0], n)[:n]
	cost, pick := c.cost, c.pick
	cost[n] = 0
	for i := n - 1; i >= 0; i-- {
		// A run of bytes that begin no fragment: each is itself.
		k := cost[i+1]
		for ; i >= 0 && !special[src[i]]; i-- {
			k++
			cost[i], pick[i] = k, 0
		}
		if i < 0 {
			break
		}
		b := src[i]
		k, p := k+1, byte(0)
		switch {
		case b < 0x20:
			k++
		case i+8 <= n:
			// A fragment's first eight bytes (fewer, masked, for a
			// shorter one) are one comparison.
			if g := byPair[uint16(b)<<8|uint16(src[i+1])]; g != 0 {
				head := binary.LittleEndian.Uint64(src[i:])
				for _, code := range groups[g-1] {
					f, pre := fragments[code], &prefixes[code]
					if e := i + len(f); head&pre.mask == pre.bits && e <= n && (len(f) <= 8 || string(src[i+8:e]) == f[8:]) && cost[e]+1 < k {
						k, p = cost[e]+1, code+1
					}
				}
			}
		case i+1 < n:
			if g := byPair[uint16(b)<<8|uint16(src[i+1])]; g != 0 {
				for _, code := range groups[g-1] {
					f := fragments[code]
					if e := i + len(f); e <= n && string(src[i+2:e]) == f[2:] && cost[e]+1 < k {
						k, p = cost[e]+1, code+1
					}
				}
			}
		}
		cost[i], pick[i] = k, p
	}
	for i := 0; i < n; {
		j := i
		for j < n && pick[j] == 0 && src[j] >= 0x20 {
			j++
		}
		dst = append(dst, src[i:j]...)
		if i = j; i == n {
			break
		}
		if code := pick[i]; code > 0 {
			dst = append(dst, code-1)
			i += len(fragments[code-1])
			continue
		}
		dst = append(dst, escape, src[i])
		i++
	}
	if cap(c.cost) > 1<<20 {
		c.cost, c.pick = nil, nil // a rare huge schema's buffers are not kept
	}
	return dst
}

// coder is appendCoded's working memory.
type coder struct {
	cost []int32 // the fewest bytes src[i:] codes to
	pick []byte  // how src[i:] begins, coded so: a fragment's code + 1, or 0 for its byte
}

var coders = sync.Pool{New: func() any { return new(coder) }}

// prefixes are the fragments' first eight bytes, little-endian, and the
// mask of those a fragment has.
var prefixes = func() (p [len(fragments)]struct{ bits, mask uint64 }) {
	for code, f := range fragments {
		var b [8]byte
		n := copy(b[:], f)
		p[code].bits = binary.LittleEndian.Uint64(b[:])
		p[code].mask = ^uint64(0) >> (64 - 8*n)
	}
	return p
}()

// appendDecoded appends what coded stands for.
func appendDecoded(dst []byte, coded string) []byte {
	for i := 0; i < len(coded); i++ {
		c := coded[i]
		switch {
		case c >= 0x20:
			j := i + 1
			for j < len(coded) && coded[j] >= 0x20 {
				j++
			}
			dst = append(dst, coded[i:j]...)
			i = j - 1
		case c == escape:
			if i+1 < len(coded) {
				i++
				dst = append(dst, coded[i])
			}
		case int(c) < len(fragments):
			dst = append(dst, fragments[c]...)
		}
	}
	return dst
}

// decodedLen is len(appendDecoded(nil, coded)).
func decodedLen(coded string) int {
	n := 0
	for i := 0; i < len(coded); i++ {
		switch c := coded[i]; {
		case c >= 0x20:
			n++
		case c == escape:
			if i+1 < len(coded) {
				i++
				n++
			}
		case int(c) < len(fragments):
			n += len(fragments[c])
		}
	}
	return n
}

// MakeSchemas holds the three, coded; an empty one is absent.
func MakeSchemas(input, output, annotations []byte) Schemas {
	b, in, out := appendSchemas(nil, input, output, annotations)
	return Schemas{coded: string(b), in: in, out: out}
}

// appendSchemas appends the three coded, end to end, and says where the
// input's and the output's codes end in what it appended.
func appendSchemas(dst, input, output, annotations []byte) (b []byte, in, out uint32) {
	start := len(dst)
	dst = appendCoded(dst, input)
	in = uint32(len(dst) - start)
	dst = appendCoded(dst, output)
	out = uint32(len(dst) - start)
	return appendCoded(dst, annotations), in, out
}

// schemaPacker codes schemas end to end into shared strings: a tool's
// three are one part of a string, not an allocation of their own.
type schemaPacker struct {
	p       pack.Strings
	scratch []byte
}

// schemas is MakeSchemas, packed.
func (p *schemaPacker) schemas(input, output, annotations []byte) Schemas {
	var in, out uint32
	p.scratch, in, out = appendSchemas(p.scratch[:0], input, output, annotations)
	if len(p.scratch) == 0 {
		return Schemas{}
	}
	coded := p.p.Write(len(p.scratch), func(b *strings.Builder) { b.Write(p.scratch) })
	return Schemas{coded: coded, in: in, out: out}
}

func (s Schemas) input() string       { return s.coded[:s.in] }
func (s Schemas) output() string      { return s.coded[s.in:s.out] }
func (s Schemas) annotations() string { return s.coded[s.out:] }

// raw is coded decoded, nil when empty.
func raw(coded string) json.RawMessage {
	if coded == "" {
		return nil
	}
	return appendDecoded(make([]byte, 0, decodedLen(coded)), coded)
}

// Input is the input schema, a copy; nil when absent.
func (s Schemas) Input() json.RawMessage { return raw(s.input()) }

// Output is the output schema, a copy; nil when absent.
func (s Schemas) Output() json.RawMessage { return raw(s.output()) }

// Annotations are the annotations, a copy; nil when absent.
func (s Schemas) Annotations() json.RawMessage { return raw(s.annotations()) }

// AppendInput appends the input schema to dst.
func (s Schemas) AppendInput(dst []byte) []byte { return appendDecoded(dst, s.input()) }

// HasInput reports whether the input schema is present.
func (s Schemas) HasInput() bool { return s.in > 0 }

// Len is the bytes of the three as given.
func (s Schemas) Len() int { return decodedLen(s.coded) }

// rawSchemas is a tool's Schemas read back, for the checks a catalog
// makes of each tool as it is added; its buffers are reused tool after
// tool.
type rawSchemas struct{ in, out, ann []byte }

func (r *rawSchemas) read(s Schemas) {
	r.in = appendDecoded(r.in[:0], s.input())
	r.out = appendDecoded(r.out[:0], s.output())
	r.ann = appendDecoded(r.ann[:0], s.annotations())
}

func (r *rawSchemas) len() int { return len(r.in) + len(r.out) + len(r.ann) }

func (r *rawSchemas) schemas() Schemas { return MakeSchemas(r.in, r.out, r.ann) }
