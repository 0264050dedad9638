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
// it as maps, which cost a sixth of a large catalog's build: one pass
// over the schema keeps, of each object, only the four keys the text
// uses (parse), and the walk then writes the text from those. It reads
// what encoding/json would decode into map[string]any: the last of
// repeated keys, invalid UTF-8 as U+FFFD (FuzzSchemaText holds it to
// that).
type schemaText struct {
	dec           jsontext.Decoder
	rd            bytes.Reader
	params, enums strings.Builder
	schema        []byte // the schema read back (Schemas.AppendInput)
	// The schema as parse read it: its objects' nodes, the members of
	// their "properties", and members whose objects are still being read.
	nodes          []schemaNode
	props, pending []property
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
	top, ok := w.parse(schema)
	if !ok {
		return "", "", nil
	}
	props := w.sortedProps(top.props)
	if len(props) > 0 {
		names = make([]string, len(props))
		for i, p := range props {
			names[i] = p.name
		}
	}
	w.walk(props, 0)
	return w.params.String(), w.enums.String(), names
}

// schemaNode is what the text uses of one schema object, read in one
// pass over the schema (parse): the raw values of "description" and
// "enum", the members of "properties" (a range of schemaText.props; none
// when it is absent or not an object), and "items" (an index of
// schemaText.nodes, -1 when absent or not an object). Reading each
// object's members again as the walk went down into them read each byte
// of a schema three times over, a tenth of a build.
type schemaNode struct {
	description, enum jsontext.Value
	props             [2]int32
	items             int32
}

// property is a member of "properties": its name and its schema's node,
// -1 when that is not an object.
type property struct {
	name string
	node int32
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
		if p.node < 0 {
			w.params.WriteString("; ")
			continue
		}
		prop := w.nodes[p.node]
		if prop.description.Kind() == '"' {
			if d := w.unquote(prop.description); d != "" {
				w.params.WriteString(": ")
				w.params.WriteString(redact.Clip(d, 1024, ""))
			}
		}
		w.params.WriteString("; ")
		w.enumValues(prop.enum)
		w.walk(w.sortedProps(prop.props), depth+1)
		if prop.items >= 0 {
			items := w.nodes[prop.items]
			w.enumValues(items.enum)
			w.walk(w.sortedProps(items.props), depth+1)
		}
	}
}

// sortedProps is the members in span sorted by name, the last of a
// repeated name kept.
func (w *schemaText) sortedProps(span [2]int32) []property {
	return lastByName(w.props[span[0]:span[1]], func(p property) string { return p.name })
}

// lastByName sorts members by name, in place, and keeps the last of each
// repeated name, as encoding/json's map would.
func lastByName[M any](members []M, name func(M) string) []M {
	slices.SortStableFunc(members, func(a, b M) int { return cmp.Compare(name(a), name(b)) })
	kept := members[:0]
	for i, m := range members {
		if i+1 == len(members) || name(members[i+1]) != name(m) {
			kept = append(kept, m)
		}
	}
	return kept
}

// parse reads schema, which must be a valid JSON object, into w.nodes
// and w.props, and returns its top node.
func (w *schemaText) parse(schema []byte) (schemaNode, bool) {
	w.nodes, w.props, w.pending = w.nodes[:0], w.props[:0], w.pending[:0]
	w.rd.Reset(schema)
	w.dec.Reset(&w.rd, schemaOptions...)
	if w.dec.PeekKind() != '{' {
		return schemaNode{}, false
	}
	top, err := w.object(schema, 0, false)
	if err != nil {
		return schemaNode{}, false
	}
	return w.nodes[top], true
}

// object reads the object the decoder is at as a schema node whose
// "properties" the walk reads at depth: deeper ones are skipped, as are
// the "items" of an items node, which the walk never reads, so that
// nesting cannot make the reading recurse deeper than the walk.
func (w *schemaText) object(raw []byte, depth int, isItems bool) (int32, error) {
	if _, err := w.dec.ReadToken(); err != nil {
		return -1, err
	}
	at := int32(len(w.nodes))
	w.nodes = append(w.nodes, schemaNode{})
	n := schemaNode{items: -1}
	for w.dec.PeekKind() != '}' {
		k, err := w.dec.ReadValue()
		if err != nil {
			return -1, err
		}
		switch string(w.unquoted(w.within(raw, k))) {
		case "description":
			n.description, err = w.value(raw)
		case "enum":
			n.enum, err = w.value(raw)
		case "properties":
			n.props = [2]int32{}
			if w.dec.PeekKind() == '{' && depth <= maxSchemaDepth {
				n.props, err = w.members(raw, depth)
			} else {
				err = w.dec.SkipValue()
			}
		case "items":
			n.items = -1
			if w.dec.PeekKind() == '{' && !isItems {
				n.items, err = w.object(raw, depth, true)
			} else {
				err = w.dec.SkipValue()
			}
		default:
			err = w.dec.SkipValue()
		}
		if err != nil {
			return -1, err
		}
	}
	if _, err := w.dec.ReadToken(); err != nil {
		return -1, err
	}
	w.nodes[at] = n
	return at, nil
}

// members reads the "properties" object the decoder is at, of a node at
// depth, into a range of w.props: each member's node is read first (its
// own members go to w.props meanwhile), so they wait in w.pending and
// join w.props together.
func (w *schemaText) members(raw []byte, depth int) ([2]int32, error) {
	if _, err := w.dec.ReadToken(); err != nil {
		return [2]int32{}, err
	}
	mark := len(w.pending)
	for w.dec.PeekKind() != '}' {
		k, err := w.dec.ReadValue()
		if err != nil {
			return [2]int32{}, err
		}
		p := property{name: string(w.unquoted(w.within(raw, k))), node: -1}
		if w.dec.PeekKind() == '{' {
			p.node, err = w.object(raw, depth+1, false)
		} else {
			err = w.dec.SkipValue()
		}
		if err != nil {
			return [2]int32{}, err
		}
		w.pending = append(w.pending, p)
	}
	if _, err := w.dec.ReadToken(); err != nil {
		return [2]int32{}, err
	}
	start := int32(len(w.props))
	w.props = append(w.props, w.pending[mark:]...)
	w.pending = w.pending[:mark]
	return [2]int32{start, int32(len(w.props))}, nil
}

// value reads the value the decoder is at, as a slice of raw.
func (w *schemaText) value(raw []byte) (jsontext.Value, error) {
	v, err := w.dec.ReadValue()
	if err != nil {
		return nil, err
	}
	return w.within(raw, v), nil
}

// rawMember is a member of an object as its raw value.
type rawMember struct {
	name string
	raw  jsontext.Value
}

// rawMembers is the members of raw, an object, sorted by name, the last
// of a repeated name kept; nil when raw is anything else.
func (w *schemaText) rawMembers(raw jsontext.Value) []rawMember {
	var out []rawMember
	if !w.each(raw, '{', func(key []byte, v jsontext.Value) { out = append(out, rawMember{string(key), v}) }) {
		return nil
	}
	return lastByName(out, func(m rawMember) string { return m.name })
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
		members := w.rawMembers(props)
		top.Params = make([]SchemaParam, len(members))
		for i, p := range members {
			var desc jsontext.Value
			w.each(p.raw, '{', func(key []byte, v jsontext.Value) {
				if string(key) == "description" {
					desc = v
				}
			})
			top.Params[i] = SchemaParam{Name: p.name, Described: desc.Kind() == '"' && len(bytes.TrimSpace(w.unquoted(desc))) > 0}
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
