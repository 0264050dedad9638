package tooldef

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/internal/jsontree"
	"github.com/toolsearch/toolsearch/pkg/redact"
)

// Providers check the schemas of the tools a request offers, and refuse the
// whole request for one they cannot read, so one upstream's slip fails
// every turn its tool ranks in, not just that tool. What they refuse, from
// their documented errors: OpenAI checks parameters against JSON Schema's
// meta-schema, and refuses an array without "items" ("array schema missing
// items") and parameters that are not an object; Anthropic checks
// input_schema against draft 2020-12 and requires its type "object"; Gemini
// reads "type" as an enum of its own; MCP requires the top-level type
// "object". A fault is one such slip, found where the schema has it.
type fault struct {
	at   jsontext.Pointer // the schema (or, for notSchema, the value) at fault
	kind faultKind
	fix  any // type: the type to write, nil to drop it; notSchema: the schema to write; required: the names kept
	note string
}

type faultKind uint8

const (
	badType      faultKind = iota // "type" is not JSON Schema's
	noItems                       // an array type without "items"
	noRootType                    // no "type" at the top
	rootNotObj                    // a top-level type other than "object": nothing to mend
	badRequired                   // "required" holds more than names
	notSchema                     // a value where a schema goes
	notContainer                  // "properties" (or its kind) that is not an object, "anyOf" not an array
	rootCombined                  // "anyOf", "oneOf", "allOf", "enum" or "not" at the top
)

// schemaKeys are the keywords whose values are schemas (one, a map of
// them, or a list), so the walk knows where schemas are. Everything else
// is data: an enum's values, a default, a property's name.
var schemaKeys = map[string]byte{
	"items": 's', "additionalProperties": 's', "additionalItems": 's', "not": 's', "contains": 's',
	"propertyNames": 's', "if": 's', "then": 's', "else": 's', "unevaluatedItems": 's',
	"unevaluatedProperties": 's', "contentSchema": 's',
	"properties": '{', "patternProperties": '{', "$defs": '{', "definitions": '{', "dependentSchemas": '{',
	"anyOf": '[', "oneOf": '[', "allOf": '[', "prefixItems": '[',
}

// topRefused are the keywords OpenAI refuses at the top of parameters
// ("schema must have type 'object' and not have 'oneOf'/'anyOf'/'allOf'/
// 'enum'/'not' at the top level"); Anthropic refuses the first three there.
var topRefused = map[string]bool{"anyOf": true, "oneOf": true, "allOf": true, "enum": true, "not": true}

// typeNames are JSON Schema's seven types, and names that schemas written
// from Python, Java or Go code use for them, read as they mean.
var typeNames = map[string]string{
	"string": "string", "number": "number", "integer": "integer", "boolean": "boolean",
	"object": "object", "array": "array", "null": "null",
	"str": "string", "int": "integer", "float": "number", "double": "number",
	"bool": "boolean", "dict": "object", "map": "object", "list": "array", "tuple": "array",
}

// maxCheckDepth bounds the walk; deeper schemas are passed on as they are
// (provider formats that inline $refs stop at a depth of 8).
const maxCheckDepth = 64

// faults returns what of raw, an input schema, providers would refuse, in
// document order; nil when nothing (or raw is not an object: Render
// handles that).
func faults(raw []byte) []fault {
	if len(raw) == 0 {
		return nil
	}
	c := checkers.Get().(*checker)
	defer checkers.Put(c)
	c.src.Reset(raw)
	c.dec.Reset(&c.src, jsontext.AllowDuplicateNames(true)) // the catalog refused them; tracking names allocates
	c.faults = c.faults[:0]
	if c.dec.PeekKind() != '{' {
		return nil
	}
	if err := c.schema(0); err != nil || len(c.faults) == 0 {
		return nil // catalogs hold valid JSON: a read error is no schema to mend
	}
	return slices.Clone(c.faults)
}

// checker is one walk of a schema. Every definition rendered is checked,
// so checkers are pooled: a decoder's buffers were most of the cost.
type checker struct {
	src    bytes.Reader
	dec    *jsontext.Decoder
	faults []fault
}

var checkers = sync.Pool{New: func() any {
	c := new(checker)
	c.dec = jsontext.NewDecoder(&c.src)
	return c
}}

func (c *checker) add(at jsontext.Pointer, kind faultKind, fix any, format string, args ...any) {
	c.faults = append(c.faults, fault{at: at, kind: kind, fix: fix, note: fmt.Sprintf(format, args...)})
}

// schema reads the schema at the decoder.
func (c *checker) schema(depth int) error {
	switch c.dec.PeekKind() {
	case 't', 'f': // true and false are schemas
		_, err := c.dec.ReadToken()
		return err
	case '{':
	default:
		v, err := c.dec.ReadValue()
		if err != nil {
			return err
		}
		// "properties": {"name": "string"}: a type name where its schema goes.
		var fix any = map[string]any{}
		var name string
		if json.Unmarshal(v, &name) == nil && typeNames[strings.ToLower(name)] != "" {
			fix = map[string]any{"type": typeNames[strings.ToLower(name)]}
		}
		c.add(c.dec.StackPointer(), notSchema, fix, "%s is not a schema, written %s", clipJSON(v), mustJSON(fix))
		return nil
	}
	if depth > maxCheckDepth {
		return c.dec.SkipValue()
	}
	if _, err := c.dec.ReadToken(); err != nil {
		return err
	}
	var typed, isArray, onlyObject, hasItems bool
	var combined []string // at the top: the keywords OpenAI and Anthropic refuse there
	for c.dec.PeekKind() != '}' {
		k, err := c.dec.ReadValue()
		if err != nil {
			return err
		}
		key := k[1 : len(k)-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			var s string
			if err := json.Unmarshal(k, &s); err != nil {
				return err
			}
			key = []byte(s)
		}
		// key is the decoder's buffer, good only until the value is read.
		if depth == 0 && topRefused[string(key)] {
			combined = append(combined, string(key))
		}
		switch string(key) {
		case "type":
			var dropped bool
			isArray, onlyObject, dropped, err = c.typ()
			typed = !dropped
		case "required":
			err = c.required()
		default:
			switch kind := schemaKeys[string(key)]; kind {
			case 's':
				items := string(key) == "items"
				hasItems = hasItems || items
				if items && c.dec.PeekKind() == '[' { // draft 7's tuple form
					err = c.each('[', depth)
				} else {
					err = c.schema(depth + 1)
				}
			case '{', '[':
				hasItems = hasItems || string(key) == "prefixItems"
				err = c.each(kind, depth)
			default:
				err = c.dec.SkipValue()
			}
		}
		if err != nil {
			return err
		}
	}
	if _, err := c.dec.ReadToken(); err != nil {
		return err
	}
	if len(combined) > 0 {
		c.add(c.dec.StackPointer(), rootCombined, nil, `top-level %s read as the properties of its schemas, required where all of them require it`, strings.Join(combined, ", "))
	}
	if isArray && !hasItems {
		c.add(c.dec.StackPointer(), noItems, nil, `an array without "items", given "items": {}`)
	}
	if depth == 0 {
		switch {
		case !typed:
			c.add(c.dec.StackPointer(), noRootType, nil, `no "type" at the top, given "object"`)
		case !onlyObject:
			c.add(c.dec.StackPointer(), rootNotObj, nil, `the top-level type is not "object": providers refuse it, and it is passed on as it is`)
		}
	}
	return nil
}

// typ reads a "type" value, and reports whether the types it names,
// mended, include "array", whether they are "object" alone, and whether
// the mending drops the keyword.
func (c *checker) typ() (isArray, onlyObject, dropped bool, err error) {
	v, err := c.dec.ReadValue()
	if err != nil {
		return false, false, false, err
	}
	if one, ok := plainString(v); ok { // the usual case, read without allocating
		t, exact := typeNames[string(one)]
		exact = exact && t == string(one)
		if !exact {
			t = typeNames[strings.ToLower(string(one))]
		}
		switch {
		case exact:
			return t == "array", t == "object", false, nil
		case t != "":
			c.add(c.dec.StackPointer().Parent(), badType, t, "type %s is not JSON Schema's, written %q", clipJSON(v), t)
			return t == "array", t == "object", false, nil
		}
	}
	var list []any
	if v.Kind() != '[' || json.Unmarshal(v, &list) != nil {
		c.add(c.dec.StackPointer().Parent(), badType, nil, "type %s is not JSON Schema's, left out (any value)", clipJSON(v))
		return false, false, true, nil
	}
	var kept []any
	exact := len(list) > 0
	for _, x := range list {
		s, _ := x.(string)
		t := typeNames[strings.ToLower(s)]
		exact = exact && t == s
		if t != "" && !slices.Contains(kept, any(t)) {
			kept = append(kept, t)
			isArray = isArray || t == "array"
		}
	}
	onlyObject = len(kept) == 1 && kept[0] == "object"
	if exact && len(kept) == len(list) {
		return isArray, onlyObject, false, nil
	}
	var fix any
	if len(kept) > 0 {
		fix = kept
	}
	c.add(c.dec.StackPointer().Parent(), badType, fix, "type %s is not JSON Schema's, written %s", clipJSON(v), mustJSON(fix))
	return isArray, onlyObject, fix == nil, nil
}

// plainString is the text of v when v is a string without escapes.
func plainString(v jsontext.Value) ([]byte, bool) {
	if len(v) < 2 || v[0] != '"' || bytes.IndexByte(v, '\\') >= 0 {
		return nil, false
	}
	return v[1 : len(v)-1], true
}

// onlyStrings reports whether v, a valid JSON array, holds only strings:
// outside its strings, nothing but the brackets, commas and space.
func onlyStrings(v []byte) bool {
	inString, escaped := false, false
	for i, b := range v {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
		case b == '"':
			inString = true
		case b == '[' && i > 0, b != '[' && b != ']' && b != ',' && b != ' ' && b != '\t' && b != '\n' && b != '\r':
			return false
		}
	}
	return true
}

// required reads a "required" value: a list of names.
func (c *checker) required() error {
	v, err := c.dec.ReadValue()
	if err != nil {
		return err
	}
	if v.Kind() == '[' && onlyStrings(v) {
		return nil
	}
	var list []any
	if v.Kind() != '[' || json.Unmarshal(v, &list) != nil {
		c.add(c.dec.StackPointer().Parent(), badRequired, nil, `"required" %s is not a list of names, left out`, clipJSON(v))
		return nil
	}
	kept := make([]any, 0, len(list))
	for _, x := range list {
		if s, ok := x.(string); ok {
			kept = append(kept, s)
		}
	}
	if len(kept) < len(list) {
		var fix any
		if len(kept) > 0 {
			fix = kept
		}
		c.add(c.dec.StackPointer().Parent(), badRequired, fix, `"required" holds %d entries that are not names, left out`, len(list)-len(kept))
	}
	return nil
}

// each reads a map ('{') or list ('[') of schemas.
func (c *checker) each(kind byte, depth int) error {
	if byte(c.dec.PeekKind()) != kind {
		v, err := c.dec.ReadValue()
		if err != nil {
			return err
		}
		c.add(c.dec.StackPointer(), notContainer, nil, "%s is not %s of schemas, left out", clipJSON(v), map[byte]string{'{': "an object", '[': "a list"}[kind])
		return nil
	}
	if _, err := c.dec.ReadToken(); err != nil {
		return err
	}
	for c.dec.PeekKind() != jsontext.Kind(kind+2) { // '}' is '{'+2, ']' is '['+2
		if kind == '{' {
			if _, err := c.dec.ReadValue(); err != nil { // a name
				return err
			}
		}
		if err := c.schema(depth + 1); err != nil {
			return err
		}
	}
	_, err := c.dec.ReadToken()
	return err
}

// clipJSON quotes an upstream's value in a note, bounded.
func clipJSON(v []byte) string { return redact.Clip(string(v), 40, "…") }

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// maxNotes bounds the faults a warning names, and maxNoteAt the bytes of
// each one's place.
const (
	maxNotes  = 3
	maxNoteAt = 80
)

// Mend returns raw, an input schema, with what providers would refuse
// mended (see fault), and a warning naming what was, or raw itself and ""
// when nothing needed it. What it writes means what the upstream wrote,
// read as the providers can: a type name from Python or Go code as JSON
// Schema's, "items": {} (any item) for an array that says nothing of its
// items, "object" for a top level without a type. Keys of a mended schema
// come out sorted.
func Mend(raw json.RawMessage) (json.RawMessage, string) {
	fs := faults(raw)
	if len(fs) == 0 {
		return raw, ""
	}
	warning := describe(fs)
	root, err := jsontree.Decode(raw)
	if err != nil {
		return raw, warning
	}
	mended := false
	for _, f := range fs {
		mended = f.kind != rootNotObj && apply(root, f) || mended
	}
	if !mended {
		return raw, warning
	}
	out, err := jsontree.Encode(root)
	if err != nil {
		return raw, warning
	}
	return out, warning
}

// Malformed says where raw, a schema, has what a JSON Schema reader
// would not compile, and what, or "": a type that is not JSON Schema's,
// "required" of more than names, a value where a schema goes, a keyword
// of the wrong kind ("properties" that is not an object). What only
// providers refuse (an array without items, the top level's type) it
// leaves to Refused.
func Malformed(raw json.RawMessage) string {
	var notes []string
	for _, f := range faults(raw) {
		if what, ok := malformed[f.kind]; ok {
			notes = append(notes, cmp.Or(redact.Clip(string(f.at), maxNoteAt, "…"), "/")+": "+what)
		}
	}
	return firstOf(notes, "; ")
}

// malformed names the faults a JSON Schema reader refuses.
var malformed = map[faultKind]string{
	badType:      "a type that is not JSON Schema's",
	badRequired:  `"required" of more than names`,
	notSchema:    "a value where a schema goes",
	notContainer: "a keyword of the wrong kind",
}

// Refused is the warning Mend would give raw, without mending it: what
// providers would refuse of it, or "", but for the top level's type and
// required list, which a linter's own rules name.
func Refused(raw json.RawMessage) string {
	fs := slices.DeleteFunc(faults(raw), func(f fault) bool {
		return f.at == "" && (f.kind == noRootType || f.kind == rootNotObj || f.kind == badRequired)
	})
	return describe(fs)
}

// describe names the first faults, where each is.
func describe(fs []fault) string {
	if len(fs) == 0 {
		return ""
	}
	notes := make([]string, len(fs))
	for i, f := range fs {
		at := redact.Clip(string(f.at), maxNoteAt, "…") // upstreams' property names
		if at == "" {
			at = "/"
		}
		notes[i] = at + ": " + f.note
	}
	return "inputSchema has what providers refuse: " + firstOf(notes, "; ")
}

// firstOf joins the first maxNotes of items with sep, and says how many
// more there are: a warning of an upstream's schema stays short however
// much is wrong with it.
func firstOf(items []string, sep string) string {
	if n := len(items) - maxNotes; n > 0 {
		items = append(items[:maxNotes:maxNotes], fmt.Sprintf("and %d more", n))
	}
	return strings.Join(items, sep)
}

// apply mends f in root, the decoded schema, and reports whether it found
// the place.
func apply(root any, f fault) bool {
	var parent any
	var last string
	node := root
	for tok := range f.at.Tokens() {
		parent, last = node, tok
		switch n := node.(type) {
		case map[string]any:
			node = n[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(n) {
				return false
			}
			node = n[i]
		default:
			return false
		}
	}
	if f.kind == notSchema || f.kind == notContainer {
		switch p := parent.(type) {
		case map[string]any:
			if f.kind == notContainer {
				delete(p, last)
			} else {
				p[last] = f.fix
			}
		case []any:
			i, _ := strconv.Atoi(last)
			if f.kind == notContainer {
				return false
			}
			p[i] = f.fix
		default:
			return false
		}
		return true
	}
	m, ok := node.(map[string]any)
	if !ok {
		return false
	}
	switch f.kind {
	case badType:
		set(m, "type", f.fix)
	case noItems:
		m["items"] = map[string]any{}
	case noRootType:
		m["type"] = "object"
	case badRequired:
		set(m, "required", f.fix)
	case rootCombined:
		flatten(m)
	}
	return true
}

// flatten reads a top-level anyOf, oneOf or allOf as the properties of
// its schemas (local $refs followed), the first schema's where two name
// one property; a name is required where every schema of an anyOf or
// oneOf requires it, or any of an allOf does. A top-level enum or not is
// dropped. Callers' arguments are still checked against the upstream's
// own schema when toolsearch forwards a call.
func flatten(root map[string]any) {
	props, _ := root["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
	}
	var required []any
	if r, ok := root["required"].([]any); ok {
		required = r
	}
	for _, key := range []string{"allOf", "anyOf", "oneOf"} {
		list, _ := root[key].([]any)
		delete(root, key)
		counts := map[string]int{}
		var order []string
		for _, e := range list {
			em, _ := e.(map[string]any)
			if ref, ok := em["$ref"].(string); ok {
				em, _ = catalog.ResolvePointer(root, ref).(map[string]any)
			}
			if em == nil {
				counts = nil // a schema of no properties: no name is required by all
				continue
			}
			if ep, ok := em["properties"].(map[string]any); ok {
				names := make([]string, 0, len(ep))
				for name := range ep {
					names = append(names, name)
				}
				sort.Strings(names)
				for _, name := range names {
					if _, taken := props[name]; !taken {
						props[name] = ep[name]
					}
				}
			}
			er, _ := em["required"].([]any)
			for _, r := range er {
				if name, ok := r.(string); ok && counts != nil {
					if counts[name] == 0 {
						order = append(order, name)
					}
					counts[name]++
				}
			}
		}
		for _, name := range order {
			if key == "allOf" || counts[name] == len(list) {
				if !slices.Contains(required, any(name)) {
					required = append(required, name)
				}
			}
		}
	}
	delete(root, "enum")
	delete(root, "not")
	if len(props) > 0 {
		root["properties"] = props
	}
	if len(required) > 0 {
		root["required"] = required
	}
}

// set writes v at key, or drops key when v is nil.
func set(m map[string]any, key string, v any) {
	if v == nil {
		delete(m, key)
		return
	}
	m[key] = v
}
