// Package jsonread reads small JSON values in one pass: a pool of
// jsontext decoders for readers that run once per tool or per turn, and
// the name of a value's kind for their errors.
package jsonread

import (
	"bytes"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// Decoder is a jsontext decoder lent by Get.
type Decoder struct {
	jsontext.Decoder
	buf bytes.Buffer
}

var pool = sync.Pool{New: func() any { return new(Decoder) }}

// Get lends a decoder reading data in place: jsontext reads a
// bytes.Buffer's bytes without copying them, and writes none. Making a
// decoder for each tool's annotations or each turn of a conversation
// would be a few hundred bytes each.
func Get(data []byte) *Decoder {
	d := pool.Get().(*Decoder)
	d.buf = *bytes.NewBuffer(data)
	d.Reset(&d.buf)
	return d
}

// Put gives d back to the pool, holding none of the bytes it read.
func (d *Decoder) Put() {
	d.buf = bytes.Buffer{}
	d.Reset(&d.buf)
	pool.Put(d)
}

// KindName names the kind of the JSON value v for an error: "a string",
// "an object", ...; "nothing" for no value.
func KindName(v []byte) string {
	switch jsontext.Value(v).Kind() {
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	case '"':
		return "a string"
	case '0':
		return "a number"
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	return "nothing"
}
