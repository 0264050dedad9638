package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/toolsearch/toolsearch/pkg/internal/jsontree"
	"github.com/toolsearch/toolsearch/pkg/redact"
)

// A tool's texts go to models, which read what a person reviewing the
// catalog, in the console or a terminal, does not see. Two kinds of
// characters make that difference an attack on the model:
//   - Unicode tag characters (U+E0000-U+E007F) render as nothing, and
//     models read them as the ASCII characters they shadow: instructions
//     written in them ("ASCII smuggling") are seen by the model only;
//   - bidirectional controls (U+202A-U+202E, U+2066-U+2069) reorder what
//     a reviewer sees, so the text read is not the text shown ("Trojan
//     Source").
//
// A tool's text has no use for either (a flag emoji of a region is the
// one use of tags, and loses only its region), so every text of a tool
// but its name is served without them, and a catalog warning says what
// was removed, spelling out what tags spelled.
func hidden(r rune) bool {
	return 0xE0000 <= r && r <= 0xE007F || 0x202A <= r && r <= 0x202E || 0x2066 <= r && r <= 0x2069
}

// firstHidden is the index of the first hidden character in s, or -1.
// Their UTF-8 begins with 0xE2 (bidi controls) or 0xF3 (tags); most texts
// are ASCII, and those that are not mostly hold other characters so
// begun (dashes, quotes), so each candidate is decoded.
func firstHidden(s string) int {
	start := strings.IndexByte(s, 0xE2)
	if i := strings.IndexByte(s, 0xF3); i >= 0 && (start < 0 || i < start) {
		start = i
	}
	if start < 0 {
		return -1
	}
	for i := start; i < len(s); i++ {
		if c := s[i]; c == 0xE2 || c == 0xF3 {
			if r, _ := utf8.DecodeRuneInString(s[i:]); hidden(r) {
				return i
			}
		}
	}
	return -1
}

// unhide returns s without hidden characters, with how many it removed
// and the ASCII its tag characters spelled.
func unhide(s string) (string, int, string) {
	first := firstHidden(s)
	if first < 0 {
		return s, 0, ""
	}
	var b, spelled strings.Builder
	b.WriteString(s[:first])
	n := 0
	for _, r := range s[first:] {
		if !hidden(r) {
			b.WriteRune(r)
			continue
		}
		n++
		if c := r - 0xE0000; 0x20 <= c && c < 0x7F {
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
func revealHidden(t Tool) (Tool, []note) {
	var warnings []note
	removed := func(where string, n int, spelled string) {
		w := fmt.Sprintf("%s held %d hidden characters (Unicode tags or bidirectional controls: models read what reviewers do not see), removed", where, n)
		if spelled != "" {
			w += "; the tags spelled " + redact.Echo(redact.Clip(spelled, maxSpelled, "…"))
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
	if t.InputSchema, n, spelled = unhideSchema(t.InputSchema); n > 0 {
		removed("inputSchema", n, spelled)
	}
	if t.OutputSchema, n, spelled = unhideSchema(t.OutputSchema); n > 0 {
		removed("outputSchema", n, spelled)
	}
	if t.Annotations, n, spelled = unhideSchema(t.Annotations); n > 0 {
		removed("annotations", n, spelled) // their title is shown as the tool's
	}
	if _, n, _ := unhide(t.Name); n > 0 {
		warnings = append(warnings, note{"hidden-text", fmt.Sprintf("name holds %d hidden characters (Unicode tags or bidirectional controls): it is shown as it is, since calls name the tool by it", n)})
	}
	return t, warnings
}

// unhideSchema is unhide for the string values of a JSON schema or
// annotations (keys are parameter names, which calls must spell as the
// upstream does). The characters may be written as they are or as \u
// escapes (a tag is a surrogate pair, \udb40\udcXX).
func unhideSchema(raw json.RawMessage) (json.RawMessage, int, string) {
	literal := bytes.IndexByte(raw, 0xE2) >= 0 || bytes.IndexByte(raw, 0xF3) >= 0 // without a copy of raw, as firstHidden would need
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
	for {
		i := bytes.Index(raw, []byte(`\u`))
		if i < 0 {
			return false
		}
		raw = raw[i+2:]
		if len(raw) >= 4 && (bytes.EqualFold(raw[:4], []byte("db40")) || bytes.EqualFold(raw[:3], []byte("202")) || bytes.EqualFold(raw[:3], []byte("206"))) {
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
