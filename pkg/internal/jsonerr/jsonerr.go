// Package jsonerr says what encoding/json's type errors mean in JSON's
// own terms, for the JSON people write (request bodies, config files,
// eval cases): a field's path as they wrote it, the kind of value it
// takes ("an array", not "[]config.Key") and what came.
package jsonerr

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"unicode"

	"github.com/toolsearch/toolsearch/pkg/internal/jsonread"
	"github.com/toolsearch/toolsearch/pkg/redact"
)

// Mismatch is a value of the wrong kind.
type Mismatch struct {
	Field string // its JSON path ("top_k", "limits.max_connections"); "" for the whole document
	Want  string // what the field takes: "an integer", "an array", …
	Got   string // what came, as encoding/json names it ("string", "number 2.5"), clipped
}

// Type is err's type mismatch, if it is one, in doc, the JSON whose
// decoding failed (nil if not at hand). encoding/json names the field
// without the item of an array it is in ("auth.keys.name" for the second
// key's name, "servers" for a number among the strings), and doc says
// which: "auth.keys[1].name", "servers[0]".
func Type(err error, doc []byte) (Mismatch, bool) {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return Mismatch{}, false
	}
	field := at(doc, te.Offset)
	if field == "" {
		field = path(te.Field)
	}
	// te.Value is "number " and the number itself, whole: 5,000 digits
	// would be echoed back.
	return Mismatch{Field: field, Want: kind(te.Type), Got: redact.Clip(te.Value, redact.MaxEcho, "…")}, true
}

// at is the path in doc of the value encoding/json refused, which ends
// at offset (a literal) or opens just before it (an array or object):
// the value of the first token read up to there. "" when doc does not
// say (no doc, the whole document, a doc it cannot read).
func at(doc []byte, offset int64) string {
	if len(doc) == 0 || offset <= 0 || offset > int64(len(doc)) {
		return ""
	}
	d := jsonread.Get(doc)
	defer d.Put()
	for {
		if _, err := d.ReadToken(); err != nil {
			return ""
		}
		if d.InputOffset() >= offset {
			break
		}
	}
	var b strings.Builder
	level := 0
	for tok := range d.StackPointer().Tokens() {
		level++
		if kind, _ := d.StackIndex(level); kind == '[' {
			b.WriteString("[" + tok + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(redact.Clip(tok, redact.MaxEcho, "…"))
	}
	return b.String()
}

// path drops the Go names of embedded structs ("Request.query" is
// "query" to whoever wrote it, who never saw a Request). It tells them by
// their capital: the JSON names of every type read here are lower case,
// and the structs they embed exported.
func path(field string) string {
	parts := strings.Split(field, ".")
	kept := parts[:0]
	for _, p := range parts {
		if p != "" && !unicode.IsUpper(rune(p[0])) {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, ".")
}

// kind is what a value of Go type t is in JSON.
func kind(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "an object"
}
