package catalog

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/toolsearch/toolsearch/pkg/internal/jsonread"
	"github.com/toolsearch/toolsearch/pkg/internal/schemare"
	"github.com/toolsearch/toolsearch/pkg/jsonkeys"
	"github.com/toolsearch/toolsearch/pkg/redact"
)

// check returns the tool's warnings, or an error when the tool cannot be
// indexed at all. Real catalogs break the naming advice routinely (spaces,
// slashes), so only what would corrupt identification or the index is an
// error. raw is t's schemas read back.
func (t Tool) check(raw *rawSchemas) (warnings []note, err error) {
	if err := checkName(t.Name); err != nil {
		return nil, fmt.Errorf("name %w", err)
	}
	if len(raw.in) > 0 && !isJSONObject(raw.in) {
		return nil, errors.New("inputSchema is present but not a JSON object")
	}
	if len(raw.out) > 0 && !isJSONObject(raw.out) {
		return nil, errors.New("outputSchema is present but not a JSON object")
	}
	if !utf8.ValidString(t.Description) || !utf8.ValidString(t.Title) {
		return nil, errors.New("title or description is not valid UTF-8")
	}
	if !AdvisedName(t.Name) {
		warnings = append(warnings, note{"", fmt.Sprintf("name is outside the MCP naming advice (1-%d characters of A-Z a-z 0-9 _ - .)", MaxAdvisedNameLen)})
	}
	schema := &schemaTree{raw: raw.in}
	if w := refWarning(schema); w != "" {
		warnings = append(warnings, note{"schema-ref", w})
	}
	if w := patternWarning(schema); w != "" {
		warnings = append(warnings, note{"schema-pattern", w})
	}
	if clipped(t, raw) {
		warnings = append(warnings, note{"clipped", fmt.Sprintf("clipped: a live upstream's description may be %d bytes and each schema %d; answers carry the clipped text, marked", MaxUntrustedDescBytes, MaxUntrustedSchemaBytes)})
	}
	for _, k := range unknownAnnotations(raw.ann) {
		msg := fmt.Sprintf("annotation %q is not one MCP defines, and no client reads it", k)
		if hint := jsonkeys.Unknown(k, annotationKeys).Hint; hint != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", hint)
		}
		warnings = append(warnings, note{"annotations", msg})
	}
	switch {
	case len(bytes.TrimSpace([]byte(t.Description))) == 0:
		warnings = append(warnings, note{"", "empty description"})
	case len(t.Description) > MaxDescEmbedBytes:
		warnings = append(warnings, note{"", fmt.Sprintf("description is %d bytes; only the first %d are embedded", len(t.Description), MaxDescEmbedBytes)})
	}
	return warnings, nil
}

// annotationKeys are MCP's ToolAnnotations; all but the title are hints.
var annotationKeys = []string{"title", "readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"}

// checkAnnotations refuses a catalog's annotations that MCP clients could
// not read: an object whose hints are booleans and whose title is a
// string (null: not given). A hint written as "true" would not count as
// declared true, and a declared hint is never replaced by an inferred one
// (package hints): `destructiveHint: "true"` on a delete tool would have
// its calls go through unconfirmed.
func checkAnnotations(raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" || annotationsOK(raw) {
		return nil
	}
	return annotationsError(raw)
}

// annotationsError is checkAnnotations read through a map.
func annotationsError(raw json.RawMessage) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf("annotations must be an object of MCP's tool annotations (%s)", strings.Join(annotationKeys, ", "))
	}
	for _, k := range annotationKeys {
		v, ok := m[k]
		if !ok {
			continue
		}
		switch {
		case string(v) == "null":
		case k == "title" && v[0] != '"':
			return fmt.Errorf("annotations.title must be a string, not %s", redact.Clip(string(v), 40, "…"))
		case k != "title" && string(v) != "true" && string(v) != "false":
			return fmt.Errorf("annotations.%s must be true or false, not %s", k, redact.Clip(string(v), 40, "…"))
		}
	}
	return nil
}

// unknownAnnotations are the keys of raw that MCP does not define, sorted
// (nothing when raw is not an object). They are kept: a later revision of
// MCP may define them.
func unknownAnnotations(raw json.RawMessage) []string {
	if len(raw) == 0 || annotationsOK(raw) {
		return nil
	}
	return annotationsUnknown(raw)
}

// annotationsUnknown is unknownAnnotations read through a map.
func annotationsUnknown(raw json.RawMessage) []string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	var out []string
	for k := range m {
		if !slices.Contains(annotationKeys, k) {
			out = append(out, redact.Clip(k, redact.MaxEcho, "…"))
		}
	}
	slices.Sort(out)
	return out
}

// annotationsOK reports whether raw is an object of MCP's annotations
// alone, each of its type, as every upstream's and most files' are; the
// checks above decode anything else into a map to say what is wrong. A
// map for each of 100,000 annotated tools was 4 µs and 42 allocations a
// tool; this is about a fifth, and allocates nothing. A name written
// with escapes, repeated or not UTF-8 is not OK here and is left to the
// map.
func annotationsOK(raw []byte) bool {
	d := jsonread.Get(raw)
	defer d.Put()
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return false
	}
	for d.PeekKind() != '}' {
		name, err := d.ReadValue()
		if err != nil {
			return false
		}
		var want string
		switch string(name) {
		case `"title"`:
			want = `"n`
		case `"readOnlyHint"`, `"destructiveHint"`, `"idempotentHint"`, `"openWorldHint"`:
			want = "tfn"
		default:
			return false
		}
		if kind := d.PeekKind(); !strings.ContainsRune(want, rune(kind)) {
			return false
		}
		if _, err := d.ReadValue(); err != nil {
			return false
		}
	}
	if _, err := d.ReadToken(); err != nil {
		return false
	}
	_, err := d.ReadToken() // nothing after the object
	return errors.Is(err, io.EOF)
}

// note is a warning of a tool's, with the lint rule that reports it
// where lint's own checks do not read it from the tool ("": they do).
type note struct{ rule, msg string }

// checkName rejects names that cannot identify a tool safely. The returned
// error reads after the word "name".
func checkName(name string) error {
	switch {
	case len(bytes.TrimSpace([]byte(name))) == 0:
		return errors.New("is empty")
	case len(name) > MaxNameBytes:
		return fmt.Errorf("is %d bytes, over the limit of %d", len(name), MaxNameBytes)
	case !utf8.ValidString(name):
		return errors.New("is not valid UTF-8")
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return fmt.Errorf("contains the control character %U", r)
		}
	}
	return nil
}

// AdvisedName reports whether name follows the MCP naming advice: 1 to 128
// characters of A-Z a-z 0-9 _ - .
func AdvisedName(name string) bool {
	if len(name) == 0 || len(name) > MaxAdvisedNameLen {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

func isJSONObject(raw []byte) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) >= 2 && raw[0] == '{'
}

// MaxInlinedNodes bounds inlining a schema's $refs, as provider formats
// that cannot carry $refs do: tooldef cuts its rendering there, and a tool
// that would need more is warned about at load.
const MaxInlinedNodes = 2000

// schemaTree is a tool's input schema, decoded once when a check first
// needs it: each check looks in the bytes for its keyword first, and a
// schema with both a $ref and a pattern was decoded twice.
type schemaTree struct {
	raw     json.RawMessage
	v       any
	ok, got bool
}

// tree is the decoded schema, and whether it decoded.
func (s *schemaTree) tree() (any, bool) {
	if !s.got {
		s.got = true
		s.ok = len(s.raw) > 0 && json.Unmarshal(s.raw, &s.v) == nil
	}
	return s.v, s.ok
}

// refWarning says when inlining the schema's local $refs would not end
// (a $ref into a schema that contains it) or would exceed MaxInlinedNodes:
// such a tool is rendered in part for those providers. The count is made
// without expanding anything, memoised per $ref, so a hostile schema costs
// its own size, not its expansion.
func refWarning(schema *schemaTree) string {
	if !mayRefer(schema.raw) {
		return ""
	}
	root, ok := schema.tree()
	if !ok {
		return ""
	}
	c := refCounter{root: root, memo: map[string]float64{}, open: map[string]bool{}}
	n := c.count(root, 0)
	switch {
	case c.recursive:
		return "inputSchema's $refs are recursive: formats that inline them (gemini) get it in part"
	case n > MaxInlinedNodes:
		return fmt.Sprintf("inputSchema's $refs inline to over %d nodes: formats that inline them (gemini) get it in part", MaxInlinedNodes)
	case c.dangling != "":
		return fmt.Sprintf("inputSchema's $ref %s leads nowhere in it: clients that resolve it fail, and formats that inline it get nothing there", redact.Echo(c.dangling))
	}
	return ""
}

// patternWarning names the first regular expression of an input schema
// that Go's (RE2) does not read (a lookahead, a backreference,
// \p{Script=...}), or the one that takes its patterns past what is read
// of an untrusted schema (package schemare). call_tool checks a call's
// arguments only against a schema whose every pattern is read (package
// mcpserver), so such a tool's arguments go to its upstream unchecked,
// however wrong.
func patternWarning(schema *schemaTree) string {
	if !mayHavePattern(schema.raw) {
		return ""
	}
	root, ok := schema.tree()
	if !ok {
		return ""
	}
	p := schemare.Check(root)
	if p == nil {
		return ""
	}
	what := fmt.Sprintf("inputSchema's pattern %s at %s", redact.Echo(redact.Clip(p.Pattern, 60, "…")), redact.Echo(redact.Clip(cmp.Or(p.At, "/"), 80, "…")))
	if p.Err != nil {
		what += fmt.Sprintf(" is not one Go's regular expressions read (%v)", regexpCode(p.Err))
	} else {
		what += fmt.Sprintf(" takes the schema's patterns past what is read of an upstream's (%d patterns, %d bytes, %d Unicode classes, about %d instructions)",
			schemare.MaxPatterns, schemare.MaxPatternBytes, schemare.MaxUnicodeClasses, schemare.MaxInsts)
	}
	return what + ": call_tool does not check this tool's arguments, and leaves them to its upstream"
}

// mayRefer reports whether a schema may hold a "$ref", before it is
// decoded to know. The key is looked for without its opening quote: '$'
// is rare in a schema, so the scan skips ahead on it, where a '"' stops it
// every few bytes (at 100,000 tools, 5 ms against 24). A key may also be
// spelt with escapes ("\u0024ref"), which every reader reads as $ref.
func mayRefer(raw []byte) bool { return bytes.Contains(raw, []byte(`$ref"`)) || escapesLetter(raw) }

// mayHavePattern reports whether a schema may hold a "pattern" or
// "patternProperties" key, before it is decoded to know: as written, or
// spelt with escapes ("\u0070attern"), which every reader reads as the
// key. No letter of the key is rare in a schema, so this scan stops at
// every '"', as mayRefer's did before it looked for '$' (at 100,000 tools,
// 20 ms). Spelt in other cases ("PATTERN") it is no keyword to JSON
// Schema, though jsonschema-go reads it so; call_tool reads the schema as
// the validator does, so it still leaves such a schema to the upstream,
// and only this warning is missed: looking for every case cost another 19
// ms at 100,000 tools.
func mayHavePattern(raw []byte) bool {
	return bytes.Contains(raw, []byte(`"pattern`)) || escapesLetter(raw)
}

// escapesLetter reports whether raw writes an ASCII letter or '$' as a \u
// escape, as a key may to be missed by a scan for its bytes. Encoders
// write none: Go's escapes <, > and &, other encoders what is beyond
// ASCII, so a real schema has none and is not decoded for it.
func escapesLetter(raw []byte) bool {
	return anyEscape(raw, func(hex []byte) bool {
		return hex[0] == '0' && hex[1] == '0' && ('4' <= hex[2] && hex[2] <= '7' || hex[2] == '2' && hex[3] == '4')
	})
}

// regexpCode is what a regexp error says is wrong, without the text it
// quotes, which the warning quotes clipped.
func regexpCode(err error) string {
	if e, ok := err.(*syntax.Error); ok {
		return string(e.Code)
	}
	return "does not compile"
}

type refCounter struct {
	root      any
	memo      map[string]float64 // nodes a $ref inlines to
	open      map[string]bool    // $refs being counted: meeting one again is a cycle
	recursive bool
	dangling  string // the first local $ref that leads nowhere
}

// count is the number of schema objects v inlines to, in float64 so that
// a diamond of definitions cannot overflow.
func (c *refCounter) count(v any, depth int) float64 {
	if depth > 64 {
		return 0 // text nesting this deep is refused by the JSON decoder's own limit long before
	}
	switch x := v.(type) {
	case []any:
		var n float64
		for _, e := range x {
			n += c.count(e, depth+1)
		}
		return n
	case map[string]any:
		if ref, ok := x["$ref"].(string); ok {
			if n, ok := c.memo[ref]; ok {
				return n
			}
			if c.open[ref] {
				c.recursive = true
				return 0
			}
			target := ResolvePointer(c.root, ref)
			if target == nil {
				if c.dangling == "" && strings.HasPrefix(ref, "#") {
					c.dangling = ref // a remote one ("https://...") is not this schema's to resolve
				}
				return 1
			}
			c.open[ref] = true
			n := c.count(target, depth+1)
			delete(c.open, ref)
			c.memo[ref] = n
			return n
		}
		n := 1.0
		for k, e := range x {
			if k == "$defs" || k == "definitions" {
				continue // counted where they are referred to
			}
			n += c.count(e, depth+1)
		}
		return n
	}
	return 0
}

// ResolvePointer follows a local JSON pointer ("#", "#/$defs/x") into a
// decoded schema; nil when it leads nowhere or is not local.
func ResolvePointer(root any, ref string) any {
	if ref == "#" {
		return root
	}
	rest, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil
	}
	cur := root
	for _, part := range strings.Split(rest, "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[part]
	}
	return cur
}

// Bounds on what an untrusted source, a live upstream, may put in one
// tool. Its texts reach every answer that returns the tool, so a 1 MB
// description would make each such search a megabyte.
const (
	MaxUntrustedTitleBytes  = 512
	MaxUntrustedDescBytes   = 16 << 10
	MaxUntrustedSchemaBytes = 64 << 10
)

// clipMark starts what Bound appends to a clipped text, and clipKey marks
// a schema Bound replaced.
const (
	clipMark = " …[clipped by toolsearch: "
	clipKey  = "x-toolsearch-clipped"
)

// Bound clips an untrusted tool to the bounds above. A clipped text keeps
// its opening and says it was clipped; a schema over the bound is replaced
// by an open object schema that says so (the upstream still checks the
// arguments it gets). Catalog warnings name every tool clipped.
func Bound(t Tool) Tool {
	if len(t.Title) > MaxUntrustedTitleBytes {
		t.Title = redact.Clip(t.Title, MaxUntrustedTitleBytes, "…")
	}
	if n := len(t.Description); n > MaxUntrustedDescBytes {
		t.Description = redact.Clip(t.Description, MaxUntrustedDescBytes, fmt.Sprintf("%s%d bytes, over the %d-byte limit]", clipMark, n, MaxUntrustedDescBytes))
	}
	in, out, ann := t.Schemas.input(), t.Schemas.output(), t.Schemas.annotations()
	if decodedLen(in) <= MaxUntrustedSchemaBytes && decodedLen(out) <= MaxUntrustedSchemaBytes && decodedLen(ann) <= MaxUntrustedTitleBytes*2 {
		return t
	}
	var raw rawSchemas
	raw.read(t.Schemas)
	t.Schemas = BoundSchemas(raw.in, raw.out, raw.ann)
	return t
}

// BoundSchemas is MakeSchemas of an untrusted tool's schemas and
// annotations, each clipped as Bound clips them first, so that an
// upstream's oversized schema is not coded whole (the coding's working
// memory is five bytes a byte) to be replaced.
func BoundSchemas(input, output, annotations []byte) Schemas {
	if len(annotations) > MaxUntrustedTitleBytes*2 {
		annotations = nil // hints are a few booleans and a title; more is not hints
	}
	return MakeSchemas(boundSchema(input), boundSchema(output), annotations)
}

func boundSchema(raw []byte) []byte {
	if len(raw) <= MaxUntrustedSchemaBytes {
		return raw
	}
	b, _ := json.Marshal(map[string]any{"type": "object", clipKey: len(raw),
		"description": fmt.Sprintf("[clipped by toolsearch: the upstream's schema is %d bytes, over the %d-byte limit; its parameters are not shown]", len(raw), MaxUntrustedSchemaBytes)})
	return b
}

// Clipped reports whether Bound clipped something of t.
func Clipped(t Tool) bool {
	var raw rawSchemas
	raw.read(t.Schemas)
	return clipped(t, &raw)
}

// clipped is Clipped of t with its schemas read back into raw.
func clipped(t Tool, raw *rawSchemas) bool {
	return strings.Contains(t.Description, clipMark) || bytes.Contains(raw.in, []byte(clipKey)) || bytes.Contains(raw.out, []byte(clipKey))
}
