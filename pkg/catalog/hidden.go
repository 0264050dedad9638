package catalog

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/toolsearch/toolsearch/pkg/analysis"
	"github.com/toolsearch/toolsearch/pkg/internal/jsontree"
	"github.com/toolsearch/toolsearch/pkg/redact"
)

// A tool's texts go to models, which read what a person reviewing the
// catalog, in the console or a terminal, does not see. Characters that
// make that difference an attack on the model:
//   - Unicode tag characters (U+E0000-U+E007F) render as nothing, and
//     models read them as the ASCII characters they shadow: instructions
//     written in them ("ASCII smuggling") are seen by the model only;
//   - variation selectors (U+FE00-U+FE0F, U+E0100-U+E01EF) render as
//     nothing too, and a run of them after one character carries a byte
//     each ("emoji smuggling"), which a model told how can read;
//   - the invisible operators (U+2061-U+2064) render as nothing, and runs
//     of two of them carry bits ("sneaky bits");
//   - bidirectional controls (U+202A-U+202E, U+2066-U+2069) reorder what
//     a reviewer sees, so the text read is not the text shown ("Trojan
//     Source").
//
// A tool's text has no use for any of them but one: a selector of emoji
// or text presentation (U+FE0E, U+FE0F) just after a character that is
// not itself a selector (a red heart, U+2764 U+FE0F), which is kept. The
// others change at most a glyph (a flag emoji of a region loses its
// region, a CJK ideograph its variant), so every text of a tool but its
// name is served without them, and a catalog warning says what was
// removed, spelling out what tags and selectors spelled.
//
// hidden reports whether r is one, after prev, the character before it
// in the text served (0 at its start).
func hidden(r, prev rune) bool {
	switch {
	case 0xE0000 <= r && r <= 0xE007F, 0x202A <= r && r <= 0x202E, 0x2066 <= r && r <= 0x2069, 0x2061 <= r && r <= 0x2064:
		return true
	case r == 0xFE0E || r == 0xFE0F:
		return prev == 0 || selector(prev)
	}
	return selector(r)
}

// selector reports whether r is a variation selector.
func selector(r rune) bool { return 0xFE00 <= r && r <= 0xFE0F || 0xE0100 <= r && r <= 0xE01EF }

// spells is the ASCII character a hidden character stands for, or -1:
// a tag shadows one, and a selector carries a byte (U+FE00-U+FE0F 0 to
// 15, U+E0100-U+E01EF 16 to 255), as the smugglers' decoders read them.
func spells(r rune) rune {
	c := rune(-1)
	switch {
	case 0xE0000 <= r && r <= 0xE007F:
		c = r - 0xE0000
	case 0xFE00 <= r && r <= 0xFE0F:
		c = r - 0xFE00
	case 0xE0100 <= r && r <= 0xE01EF:
		c = r - 0xE0100 + 16
	}
	if 0x20 <= c && c < 0x7F {
		return c
	}
	return -1
}

// firstHidden is the index of the first hidden character in s, or -1.
// Their UTF-8 begins with 0xE2 (bidi controls, invisible operators), 0xEF
// (the first selectors) or 0xF3 (tags, the other selectors); most texts
// are ASCII, and those that are not mostly hold other characters so
// begun (dashes, quotes, fullwidth forms), so each candidate is decoded.
func firstHidden(s string) int {
	start := len(s)
	for _, c := range [...]byte{0xE2, 0xEF, 0xF3} {
		if i := strings.IndexByte(s[:start], c); i >= 0 {
			start = i
		}
	}
	for i := start; i < len(s); i++ {
		if c := s[i]; c == 0xE2 || c == 0xEF || c == 0xF3 {
			if r, _ := utf8.DecodeRuneInString(s[i:]); hidden(r, before(s, i)) {
				return i
			}
		}
	}
	return -1
}

// before is the character before s[i], or 0 at its start, as hidden
// takes it.
func before(s string, i int) rune {
	if i == 0 {
		return 0
	}
	r, _ := utf8.DecodeLastRuneInString(s[:i])
	return r
}

// unhide returns s without hidden characters, with how many it removed
// and the ASCII its tags and selectors spelled.
func unhide(s string) (string, int, string) {
	first := firstHidden(s)
	if first < 0 {
		return s, 0, ""
	}
	var b, spelled strings.Builder
	b.WriteString(s[:first])
	prev, n := before(s, first), 0
	for _, r := range s[first:] {
		if !hidden(r, prev) {
			b.WriteRune(r)
			prev = r
			continue
		}
		n++
		if c := spells(r); c >= 0 {
			spelled.WriteRune(c)
		}
	}
	return b.String(), n, spelled.String()
}

// maxSpelled bounds the hidden text a warning quotes.
const maxSpelled = 120

// revealHidden removes hidden characters from t's title, description,
// and the strings of its schemas and annotations, and says what it
// removed; its name is the tool's identity, so a name holding them is only
// warned of.
//
// raw is t's schemas read back; when it removes any, it writes them again
// into raw as well as t.
func revealHidden(t Tool, raw *rawSchemas) (Tool, []note) {
	var warnings []note
	removed := func(where string, n int, spelled string) {
		w := fmt.Sprintf("%s held %d hidden characters (Unicode tags, variation selectors, invisible operators or bidirectional controls: models read what reviewers do not see), removed", where, n)
		if spelled != "" {
			w += "; they spelled " + redact.Echo(redact.Clip(spelled, maxSpelled, "…"))
		}
		warnings = append(warnings, note{"hidden-text", w})
	}
	var n int
	var spelled string
	if t.Title, n, spelled = unhide(t.Title); n > 0 {
		removed("title", n, spelled)
	}
	if t.Description, n, spelled = unhide(t.Description); n > 0 {
		removed("description", n, spelled)
	}
	changed := false
	for _, s := range []struct {
		raw   *[]byte
		where string // the annotations' title is shown as the tool's
	}{{&raw.in, "inputSchema"}, {&raw.out, "outputSchema"}, {&raw.ann, "annotations"}} {
		if *s.raw, n, spelled = unhideSchema(*s.raw); n > 0 {
			removed(s.where, n, spelled)
			changed = true
		}
	}
	if changed {
		t.Schemas = raw.schemas()
	}
	if _, n, _ := unhide(t.Name); n > 0 {
		warnings = append(warnings, note{"hidden-text", fmt.Sprintf("name holds %d hidden characters (Unicode tags, variation selectors, invisible operators or bidirectional controls): it is shown as it is, since calls name the tool by it", n)})
	} else if seen := analysis.Fold(t.Name); seen != t.Name {
		// A zero-width space, a soft hyphen, a fullwidth or ligature
		// letter, a Cyrillic letter among Latin ones: the name looks like
		// another ("delete_rows"), which a reviewer cannot tell apart and
		// a model may call by mistake. It is spelt with escapes too:
		// status and the console show it as written, where it looks like
		// the name it reads as.
		warnings = append(warnings, note{"hidden-text", fmt.Sprintf("name %s reads as %s (it holds characters no reader sees, compatibility forms of letters, or letters of another script drawn as Latin ones), so it looks like another name: it is shown as it is, since calls name the tool by it",
			redact.Clip(strconv.QuoteToASCII(t.Name), 160, "…"), redact.Echo(redact.Clip(seen, 80, "…")))})
	}
	return t, warnings
}

// unhideSchema is unhide for the string values of a JSON schema or
// annotations (keys are parameter names, which calls must spell as the
// upstream does). The characters may be written as they are or as \u
// escapes (a tag is a surrogate pair, \udb40\udcXX).
func unhideSchema(raw []byte) ([]byte, int, string) {
	literal := bytes.IndexByte(raw, 0xE2) >= 0 || bytes.IndexByte(raw, 0xEF) >= 0 || bytes.IndexByte(raw, 0xF3) >= 0 // without a copy of raw, as firstHidden would need
	if len(raw) == 0 || !literal && !escapesHidden(raw) {
		return raw, 0, ""
	}
	v, err := jsontree.Decode(raw)
	if err != nil {
		return raw, 0, ""
	}
	var n int
	var spelled strings.Builder
	v = walkStrings(v, func(s string) string {
		out, k, sp := unhide(s)
		n += k
		spelled.WriteString(sp)
		return out
	})
	if n == 0 {
		return raw, 0, ""
	}
	out, err := jsontree.Encode(v)
	if err != nil {
		return raw, 0, ""
	}
	return out, n, spelled.String()
}

// escapesHidden reports whether raw may write a hidden character as a \u
// escape.
func escapesHidden(raw []byte) bool {
	return anyEscape(raw, func(hex []byte) bool {
		return bytes.EqualFold(hex, []byte("db40")) || bytes.EqualFold(hex[:3], []byte("202")) || bytes.EqualFold(hex[:3], []byte("206")) || bytes.EqualFold(hex[:3], []byte("fe0"))
	})
}

// anyEscape reports whether raw has a \u escape whose four hex digits
// match: the byte scans that spare decoding JSON look for what its
// escapes may spell as well as for the bytes.
func anyEscape(raw []byte, match func(hex []byte) bool) bool {
	for {
		i := bytes.Index(raw, []byte(`\u`))
		if i < 0 {
			return false
		}
		raw = raw[i+2:]
		if len(raw) >= 4 && match(raw[:4]) {
			return true
		}
	}
}

// walkStrings rewrites every string value in v with f.
func walkStrings(v any, f func(string) string) any {
	switch x := v.(type) {
	case string:
		return f(x)
	case []any:
		for i := range x {
			x[i] = walkStrings(x[i], f)
		}
	case map[string]any:
		for k, e := range x {
			x[k] = walkStrings(e, f)
		}
	}
	return v
}
