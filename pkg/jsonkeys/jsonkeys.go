// Package jsonkeys checks the keys of JSON objects before encoding/json
// reads them. encoding/json keeps the last of two equal keys and matches
// keys to fields regardless of case, so {"query":"a","QUERY":"b"} quietly
// becomes a request for "b"; an API that rejects unknown fields should
// reject those too.
package jsonkeys

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/toolsearch/toolsearch/pkg/internal/edit"
	"github.com/toolsearch/toolsearch/pkg/redact"
)

// Error is a key problem, with the path of the object that holds it
// (".servers[2].tools[0]").
type Error struct {
	Path    string
	Key     string
	Problem string // "repeated" or "unknown"
	Hint    string // for an unknown key: the known key it differs from in case or spelling
	// Allowed are the keys the object takes, for an unknown key: named
	// when no Hint is, as when a key is another API's name for one of
	// them ("limit" for "top_k").
	Allowed []string
}

// maxListed bounds the keys an error lists: every object here has fewer.
const maxListed = 32

func (e *Error) Error() string {
	where := ""
	if e.Path != "" {
		where = " in " + e.Path
	}
	msg := fmt.Sprintf("key %s%s is %s", redact.Echo(e.Key), where, e.Problem)
	switch {
	case e.Hint != "":
		msg += fmt.Sprintf(" (did you mean %q?)", e.Hint)
	default:
		msg += e.Takes()
	}
	return msg
}

// Takes is "; it takes" and the keys the object takes, or "" when there
// are none or too many to list.
func (e *Error) Takes() string {
	if len(e.Allowed) == 0 || len(e.Allowed) > maxListed {
		return ""
	}
	return "; it takes " + strings.Join(e.Allowed, ", ")
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
	return &Error{Key: key, Problem: "unknown", Hint: nearest(key, allowed), Allowed: allowed}
}

// Fields lists the JSON keys of struct type T's fields, embedded structs'
// included, as encoding/json names them.
func Fields[T any]() []string { return fieldsOf(reflect.TypeFor[T]()) }

func fieldsOf(t reflect.Type) []string {
	var out []string
	eachField(t, func(name string, _ reflect.Type) bool {
		out = append(out, name)
		return true
	})
	return out
}

// eachField calls f with the JSON name and type of each of struct type
// t's fields, embedded structs' included, until f returns false.
func eachField(t reflect.Type, f func(name string, typ reflect.Type) bool) bool {
	for i := range t.NumField() {
		sf := t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		switch {
		case name == "-":
		case sf.Anonymous && name == "" && sf.Type.Kind() == reflect.Struct:
			if !eachField(sf.Type, f) {
				return false
			}
		case !sf.IsExported():
		case name == "":
			if !f(sf.Name, sf.Type) {
				return false
			}
		default:
			if !f(name, sf.Type) {
				return false
			}
		}
	}
	return true
}

// Typed is the Rules of T's shape: at each path, the keys of the struct
// found there by following T's fields by JSON name, slices by "[]" and
// maps by any key. Where no struct is (a map's keys, a type that decodes
// itself, json.RawMessage), any key goes.
func Typed[T any]() Rules {
	root := reflect.TypeFor[T]()
	return func(path []string) []string {
		t := root
		for _, step := range path {
			t = plain(t)
			switch {
			case t == nil:
				return nil
			case t.Kind() == reflect.Map:
				t = t.Elem()
			case step == "[]" && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array):
				t = t.Elem()
			case t.Kind() == reflect.Struct:
				var next reflect.Type
				eachField(t, func(name string, typ reflect.Type) bool {
					if name == step {
						next = typ
					}
					return next == nil
				})
				t = next
			default:
				return nil
			}
		}
		if t = plain(t); t == nil || t.Kind() != reflect.Struct {
			return nil
		}
		return fieldsOf(t)
	}
}

var unmarshaler = reflect.TypeFor[json.Unmarshaler]()

// plain is t without pointers, or nil when t decodes itself.
func plain(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Implements(unmarshaler) || reflect.PointerTo(t).Implements(unmarshaler) {
		return nil
	}
	return t
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

// nearest is the allowed key that key most likely meant, or "" when none
// stands out: first one it matches ignoring case, "_" and "-"
// (input_schema suggests inputSchema, QUERY query), then also a plural
// "s"; then the
// one key one typing error from it (qeury, top_kk), for keys of four
// letters or more, where one error leaves a word recognisable; then the
// one key it ends or starts with as a word of its own (search_id
// suggests id, query_text query); then the one key it abbreviates, in
// four letters or more (desc suggests description). Two candidates in a
// step are a guess, and the step suggests nothing.
func nearest(key string, allowed []string) string {
	norm := func(s string) string {
		return strings.ToLower(strings.NewReplacer("_", "", "-", "").Replace(s))
	}
	nk := norm(key)
	steps := []func(a string) bool{
		func(a string) bool { return norm(a) == nk },
		func(a string) bool { na := norm(a); return na == nk+"s" || na+"s" == nk },
		func(a string) bool { return len(nk) >= 4 && edit.One(nk, norm(a)) },
		func(a string) bool {
			low := strings.ToLower(key)
			na := strings.ToLower(a)
			return strings.HasSuffix(low, "_"+na) || strings.HasPrefix(low, na+"_")
		},
		// An abbreviation of four letters or more (desc, anno).
		func(a string) bool { return len(nk) >= 4 && strings.HasPrefix(norm(a), nk) },
	}
	for _, matches := range steps {
		if a, n := only(allowed, matches); n == 1 {
			return a
		}
	}
	return ""
}

// only is the allowed key that matches, and how many do.
func only(allowed []string, matches func(string) bool) (string, int) {
	found, n := "", 0
	for _, a := range allowed {
		if matches(a) {
			found, n = a, n+1
		}
	}
	return found, n
}
