// Package jsonkeys checks the keys of JSON objects before encoding/json
// reads them. encoding/json keeps the last of two equal keys and matches
// keys to fields regardless of case, so {"query":"a","QUERY":"b"} quietly
// becomes a request for "b"; an API that rejects unknown fields should
// reject those too.
package jsonkeys

import (
	"fmt"
	"reflect"
	"strings"
)

// Error is a key problem, with the path of the object that holds it
// (".servers[2].tools[0]").
type Error struct {
	Path    string
	Key     string
	Problem string // "repeated" or "unknown"
	Hint    string // for an unknown key: the known key it differs from in case or spelling
}

func (e *Error) Error() string {
	where := ""
	if e.Path != "" {
		where = " in " + e.Path
	}
	msg := fmt.Sprintf("key %q%s is %s", e.Key, where, e.Problem)
	if e.Hint != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", e.Hint)
	}
	return msg
}

// within places a key problem found inside a value under that value's
// path segment.
func within(err error, segment string) error {
	if ke, ok := err.(*Error); ok {
		ke.Path = segment + ke.Path
	}
	return err
}

// Unknown is the error for key, which is not one of allowed.
func Unknown(key string, allowed []string) *Error {
	return &Error{Key: key, Problem: "unknown", Hint: nearest(key, allowed)}
}

// Fields lists the JSON keys of struct type T's fields, embedded structs'
// included, as encoding/json names them.
func Fields[T any]() []string {
	var out []string
	var add func(t reflect.Type)
	add = func(t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			name, _, _ := strings.Cut(tag, ",")
			switch {
			case name == "-":
			case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
				add(f.Type)
			case !f.IsExported():
			case name == "":
				out = append(out, f.Name)
			default:
				out = append(out, name)
			}
		}
	}
	add(reflect.TypeFor[T]())
	return out
}

// Object checks, in one pass, a JSON object's top-level keys against
// allowed and every object in it for repeated keys. Data that is not an
// object, or not JSON, is left to the decoder.
func Object(data []byte, allowed []string) error {
	if allowed == nil {
		allowed = []string{}
	}
	return Scan(data, func(path []string) []string {
		if len(path) == 0 {
			return allowed
		}
		return nil
	})
}

// nearest is the allowed key that key matches ignoring case, "_" and "-",
// so input_schema suggests inputSchema and QUERY suggests query.
func nearest(key string, allowed []string) string {
	norm := func(s string) string {
		return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(s))
	}
	for _, a := range allowed {
		if norm(a) == norm(key) || norm(a) == norm(key)+"s" || norm(a)+"s" == norm(key) {
			return a
		}
	}
	return ""
}
