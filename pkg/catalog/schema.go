package catalog

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/toolsearch/toolsearch/pkg/redact"
)

// schemaText reads a tool's input schema for its text without building
// it as maps, which cost a sixth of a large catalog's build: each object
// the walk visits is read once for the four keys the text uses, and only
// those values are read again when the walk goes down into them. It
// reads what encoding/json would decode into map[string]any: the last of
// repeated keys, invalid UTF-8 as U+FFFD (FuzzSchemaText holds it to
// that).
type schemaText struct {
	dec           jsontext.Decoder
	rd            bytes.Reader
	params, enums strings.Builder
	schema        []byte // the schema read back (Schemas.AppendInput)
	unquoter
}

var schemaTexts = sync.Pool{New: func() any { return new(schemaText) }}

// schemaOptions read as encoding/json does.
var schemaOptions = []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}

// readSchema returns a schema's parameter names and descriptions and its
// enum values, depth first with names sorted, and its top-level
// parameters' names, sorted. A schema that is not a JSON object gives
// nothing.
func readSchema(s Schemas) (params, enums string, names []string) {
	w := schemaTexts.Get().(*schemaText)
	defer schemaTexts.Put(w)
	w.schema = s.AppendInput(w.schema[:0])
	schema := w.schema
	defer func() {
		if cap(w.schema) > 1<<20 {
			w.schema = nil // a rare huge schema's buffer is not kept for the pool's next
		}
	}()
	w.params, w.enums = strings.Builder{}, strings.Builder{}
	w.params.Grow(min(len(schema), maxSchemaTextBytes)) // the text is at most about that
	top, ok := w.node(schema)
	if !ok {
		return "", "", nil
	}
	props := w.members(top.properties)
	if len(props) > 0 {
		names = make([]string, len(props))
		for i, p := range props {
			names[i] = p.name
		}
	}
	w.walk(props, 0)
	return w.params.String(), w.enums.String(), names
}

// schemaNode is the raw values of the keys the text uses in one schema
// object; nil where absent.
type schemaNode struct {
	properties, description, enum, items jsontext.Value
}

type property struct {
	name string
	raw  jsontext.Value
}

// walk writes the text of props, the members of a schema's "properties"
// at depth, and of the schemas below them.
func (w *schemaText) walk(props []property, depth int) {
	if depth > maxSchemaDepth || w.params.Len()+w.enums.Len() > maxSchemaTextBytes {
		return
	}
	for _, p := range props {
		w.params.WriteString(p.name)
		if words := wordsOf(p.name); words != "" {
			w.params.WriteString(" (" + words + ")")
		}
		prop, isObject := w.node(p.raw)
		if prop.description.Kind() == '"' {
			if d := w.unquote(prop.description); d != "" {
				w.params.WriteString(": ")
				w.params.WriteString(redact.Clip(d, 1024, ""))
			}
		}
		w.params.WriteString("; ")
		w.enumValues(prop.enum)
		if !isObject {
			continue
		}
		w.walk(w.members(prop.properties), depth+1)
		if items, ok := w.node(prop.items); ok {
			w.enumValues(items.enum)
			w.walk(w.members(items.properties), depth+1)
		}
	}
}

// node reads the keys the text uses from raw, a JSON object (false when
// raw is anything else).
func (w *schemaText) node(raw jsontext.Value) (schemaNode, bool) {
	var n schemaNode
	ok := w.each(raw, '{', func(key []byte, v jsontext.Value) {
		switch string(key) {
		case "properties":
			n.properties = v
		case "description":
			n.description = v
		case "enum":
			n.enum = v
		case "items":
			n.items = v
		}
	})
	return n, ok
}

// members is the members of raw, an object, sorted by name, the last of
// a repeated name kept; nil when raw is anything else.
func (w *schemaText) members(raw jsontext.Value) []property {
	var out []property
	if !w.each(raw, '{', func(key []byte, v jsontext.Value) { out = append(out, property{string(key), v}) }) {
		return nil
	}
	slices.SortStableFunc(out, func(a, b property) int { return cmp.Compare(a.name, b.name) })
	kept := out[:0]
	for i, p := range out {
		if i+1 == len(out) || out[i+1].name != p.name {
			kept = append(kept, p)
		}
	}
	return kept
}

// enumValues writes the strings, numbers and booleans of raw, an array.
func (w *schemaText) enumValues(raw jsontext.Value) {
	w.each(raw, '[', func(_ []byte, v jsontext.Value) {
		switch v.Kind() {
		case '"':
			w.enums.Write(w.unquoted(v))
		case '0':
			f, err := strconv.ParseFloat(string(v), 64)
			if err != nil {
				return // out of float64's range
			}
			fmt.Fprint(&w.enums, f) // as encoding/json's float64 prints
		case 't', 'f':
			w.enums.WriteString(strconv.FormatBool(v.Kind() == 't'))
		default:
			return
		}
		w.enums.WriteString(", ")
	})
}

// each reads raw, an object or array as kind says, calling f with each
// member's unquoted key (nil in an array; valid until f returns) and its
// value, a slice of raw. It reports false, having called f for nothing
// or for part, when raw is not a valid value of that kind.
func (w *schemaText) each(raw jsontext.Value, kind jsontext.Kind, f func(key []byte, v jsontext.Value)) bool {
	if len(raw) == 0 {
		return false
	}
	w.rd.Reset(raw)
	w.dec.Reset(&w.rd, schemaOptions...)
	if w.dec.PeekKind() != kind {
		return false
	}
	end := jsontext.Kind('}')
	if kind == '[' {
		end = ']'
	}
	if _, err := w.dec.ReadToken(); err != nil {
		return false
	}
	for w.dec.PeekKind() != end {
		var key []byte
		if kind == '{' {
			k, err := w.dec.ReadValue()
			if err != nil {
				return false
			}
			key = w.unquoted(w.within(raw, k))
		}
		v, err := w.dec.ReadValue()
		if err != nil {
			return false
		}
		f(key, w.within(raw, v))
	}
	_, err := w.dec.ReadToken()
	return err == nil
}

// within is v, just read from raw, as a slice of raw rather than of the
// decoder's buffer, which its next read reuses.
func (w *schemaText) within(raw, v jsontext.Value) jsontext.Value {
	at := int(w.dec.InputOffset())
	return raw[at-len(v) : at]
}

// SchemaTop is what a catalog linter reads of an input schema's top
// level, read as the tool's text is (exact keys, the last of repeated
// ones) without decoding the schema into values.
type SchemaTop struct {
	// Type is the raw JSON of "type" (`"object"` for most), nil when
	// absent; it aliases the schema.
	Type []byte
	// HasParams says "properties" is an object, and Params are its
	// members sorted by name; ParamsOK is false when "properties" is
	// neither an object nor absent nor null.
	HasParams, ParamsOK bool
	Params              []SchemaParam
	// Required are the entries of "required" that are strings, and
	// NotNames the raw JSON of those that are not; RequiredOK is false
	// when "required" is neither an array nor absent nor null.
	Required, NotNames []string
	RequiredOK         bool
}

// SchemaParam is a top-level parameter: its name and whether its
// "description" is a string with more than spaces.
type SchemaParam struct {
	Name      string
	Described bool
}

// ReadSchemaTop reads schema's top level; false when schema is not a
// JSON object.
func ReadSchemaTop(schema []byte) (SchemaTop, bool) {
	w := schemaTexts.Get().(*schemaText)
	defer schemaTexts.Put(w)
	var typ, props, req jsontext.Value
	if !w.each(schema, '{', func(key []byte, v jsontext.Value) {
		switch string(key) {
		case "type":
			typ = v
		case "properties":
			props = v
		case "required":
			req = v
		}
	}) || len(bytes.Trim(schema[w.dec.InputOffset():], " \t\r\n")) > 0 {
		return SchemaTop{}, false
	}
	top := SchemaTop{Type: typ}
	switch props.Kind() {
	case 0, 'n':
		top.ParamsOK = true
	case '{':
		top.ParamsOK, top.HasParams = true, true
		members := w.members(props)
		top.Params = make([]SchemaParam, len(members))
		for i, p := range members {
			n, _ := w.node(p.raw)
			top.Params[i] = SchemaParam{Name: p.name, Described: n.description.Kind() == '"' && len(bytes.TrimSpace(w.unquoted(n.description))) > 0}
		}
	}
	switch req.Kind() {
	case 0, 'n':
		top.RequiredOK = true
	case '[':
		top.RequiredOK = w.each(req, '[', func(_ []byte, v jsontext.Value) {
			if v.Kind() == '"' {
				top.Required = append(top.Required, w.unquote(v))
			} else {
				top.NotNames = append(top.NotNames, string(v))
			}
		})
	}
	return top, true
}
