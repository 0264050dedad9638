// Package jsontree decodes a JSON document to a tree of maps, slices and
// values, and writes one back, for code that mends an untrusted schema:
// numbers keep their text (json.Number), so 12345678901234567890 stays
// itself, and strings are written as they are, without encoding/json's
// HTML escapes, so what was not mended reads as it did.
package jsontree

import (
	"bytes"
	"encoding/json"
	"errors"
)

// Decode reads raw, one JSON value, to a tree.
func Decode(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// Object reads raw, one JSON object, to a tree as Decode does; an error
// when raw is not one (null included).
func Object(raw []byte) (map[string]any, error) {
	v, err := Decode(raw)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errNotObject
	}
	return m, nil
}

var errNotObject = errors.New("not a JSON object")

// Encode writes v compact, object keys sorted.
func Encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Marshal writes raw, one JSON value, as encoding/json writes the value it
// reads into an any (object keys sorted, a repeated key's last value kept,
// HTML characters escaped), but with its numbers as raw has them: what a
// reading through float64s normalised, without rounding an id or a
// schema's default past 2^53. nil for null.
func Marshal(raw []byte) ([]byte, error) {
	v, err := Decode(raw)
	if err != nil || v == nil {
		return nil, err
	}
	return json.Marshal(v)
}
