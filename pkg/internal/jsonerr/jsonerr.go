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

	"github.com/toolsearch/toolsearch/pkg/redact"
)

// Mismatch is a value of the wrong kind.
type Mismatch struct {
	Field string // its JSON path ("top_k", "limits.max_connections"); "" for the whole document
	Want  string // what the field takes: "an integer", "an array", …
	Got   string // what came, as encoding/json names it ("string", "number 2.5"), clipped
}

// Type is err's type mismatch, if it is one.
func Type(err error) (Mismatch, bool) {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return Mismatch{}, false
	}
	// te.Value is "number " and the number itself, whole: 5,000 digits
	// would be echoed back.
	return Mismatch{Field: path(te.Field), Want: kind(te.Type), Got: redact.Clip(te.Value, redact.MaxEcho, "…")}, true
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
