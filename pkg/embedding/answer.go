package embedding

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
)

// answer decodes one embeddings answer as it is read, vector by vector,
// without reflection: each vector is parsed into one scratch slice (JSON
// floats, or base64 little-endian float32s when the provider honoured
// encoding_format "base64") and handed to put, which copies it where it
// belongs. go-openai would decode the whole answer into a slice per
// vector first; at 2,048 vectors of 1,536 floats a request, several in
// flight, that was most of a build's memory and time.
type answer struct {
	n    int // inputs asked for
	want int // Dimensions asked for; 0: the model's own
	put  func(i int, vec []float32) error
	r    *bufio.Reader
	vec  []float32
	raw  []byte // a string's bytes
	dec  []byte // a base64 vector's bytes
	seen []bool
	got  int
	// plain reads every number with strconv, one at a time, as the
	// decoder did before fastFloat32 and floats: tests read each answer
	// both ways and expect the same vectors and the same errors.
	plain bool
	// What guardTransport found: whether it decoded an answer, and what
	// was wrong with it.
	decoded bool
	err     error
}

// errTooWide is a vector wider than any model's: what a provider sends past
// it, the request did not ask for.
var errTooWide = fmt.Errorf("%w (a vector wider than %d)", ErrAnswerTooLarge, MaxDimensions)

// errBadAnswer wraps what is wrong with an answer.
func errBadAnswer(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadResponse, fmt.Sprintf(format, args...))
}

// decode reads the answer from r: every input's vector, exactly once.
// Keys it does not know (object, model, usage, anything a provider adds)
// are skipped, in any order.
func (a *answer) decode(r io.Reader) error {
	a.r = bufio.NewReaderSize(r, 64<<10)
	a.seen = make([]bool, a.n)
	if err := a.object(0, func(key string) (bool, error) {
		if key != "data" {
			return false, nil
		}
		return true, a.data()
	}); err != nil {
		return err
	}
	if a.got != a.n {
		return errBadAnswer("%d vectors for %d inputs", a.got, a.n)
	}
	return nil
}

// data reads the array of vectors.
func (a *answer) data() error {
	c, err := a.next()
	if err != nil {
		return err
	}
	if c != '[' {
		return errBadAnswer("data is not an array")
	}
	return a.elements("data", a.item)
}

// elements reads the rest of an array whose '[' was read, calling each
// to read every element.
func (a *answer) elements(what string, each func() error) error {
	c, err := a.next()
	if err != nil {
		return err
	}
	if c == ']' {
		return nil
	}
	a.r.UnreadByte()
	for {
		if err := each(); err != nil {
			return err
		}
		if c, err = a.next(); err != nil {
			return err
		}
		switch c {
		case ',':
		case ']':
			return nil
		default:
			return errBadAnswer("unexpected %q in %s", c, what)
		}
	}
}

// item reads one {"index":…, "embedding":…} and hands the vector on.
func (a *answer) item() error {
	index, width := -1, -1
	err := a.object(1, func(key string) (bool, error) {
		switch key {
		case "index":
			if index >= 0 {
				return true, errBadAnswer("index given twice")
			}
			i, err := a.integer()
			if err != nil {
				return true, err
			}
			if i < 0 || i >= a.n {
				return true, errBadAnswer("index %d out of range", i)
			}
			index = i
			return true, nil
		case "embedding":
			if width >= 0 {
				return true, errBadAnswer("embedding given twice")
			}
			w, err := a.embedding()
			width = w
			return true, err
		}
		return false, nil
	})
	if err != nil {
		return err
	}
	if index < 0 || width < 0 {
		return errBadAnswer("an item without index or embedding")
	}
	if a.seen[index] {
		return errBadAnswer("index %d repeated", index)
	}
	a.seen[index] = true
	a.got++
	v := a.vec[:width]
	if a.want > 0 {
		// Servers that ignore "dimensions" return the full width.
		// Truncating a Matryoshka-trained embedding keeps it meaningful
		// once re-normalised; a narrower answer cannot be fixed.
		if len(v) < a.want {
			return errBadAnswer("vector %d has dimension %d, want %d", index, len(v), a.want)
		}
		v = v[:a.want]
	}
	var sum float64
	for _, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return errBadAnswer("vector %d has a non-finite value", index)
		}
		sum += float64(x) * float64(x)
	}
	// A zero vector has no direction: as a row it matches nothing, as a
	// query it ranks nothing. A provider that sends one is failing.
	if len(v) == 0 || math.Sqrt(sum) < minNorm {
		return errBadAnswer("vector %d is empty or (near) zero", index)
	}
	return a.put(index, v)
}

// embedding reads a vector, floats or base64, into a.vec; its width.
func (a *answer) embedding() (int, error) {
	c, err := a.next()
	if err != nil {
		return 0, err
	}
	a.vec = a.vec[:0]
	switch c {
	case '[':
		err := a.elements("a vector", func() error {
			if len(a.vec) == MaxDimensions {
				return errTooWide
			}
			x, err := a.number(32)
			if err == nil {
				a.vec = append(a.vec, float32(x))
			}
			if err == nil && !a.plain && a.floats() {
				err = errEnd
			}
			return err
		})
		if errors.Is(err, errEnd) {
			err = nil
		}
		return len(a.vec), err
	case '"':
		src, err := a.base64()
		if err != nil {
			return 0, err
		}
		a.dec = slices.Grow(a.dec[:0], base64.StdEncoding.DecodedLen(len(src)))
		buf := a.dec[:cap(a.dec)]
		n, err := base64.StdEncoding.Decode(buf, src)
		if err != nil || n%4 != 0 {
			return 0, errBadAnswer("a base64 vector is not float32s")
		}
		a.vec = slices.Grow(a.vec, n/4)[:n/4]
		for i := range a.vec {
			a.vec[i] = math.Float32frombits(binary.LittleEndian.Uint32(buf[4*i:]))
		}
		return len(a.vec), nil
	}
	return 0, errBadAnswer("an embedding that is neither numbers nor base64")
}

// errEnd is floats' reading of an array's end, to stop elements early.
var errEnd = errors.New("the end of the array")

// floats reads, after one of a vector's numbers, as many more as the
// reader's buffer holds in the common spelling (a comma, then a number
// fastFloat32 is sure of), each appended to a.vec; true when it read the
// vector's closing bracket too. It reads nothing it is not sure of
// (wholeFloat32): a number that may go on past the buffer or is longer
// than maxNumber, spaces, any other spelling or a vector at its widest are
// left to elements and number, which read them as they would have, errors
// included. Going back to them for each number's space, comma and bounds
// made a vector of floats take 1.2 to 1.6 times as long to read.
func (a *answer) floats() bool {
	buf, _ := a.r.Peek(a.r.Buffered())
	i := 0 // read up to here
	for i < len(buf) && len(a.vec) < MaxDimensions {
		if buf[i] == ']' {
			_, _ = a.r.Discard(i + 1)
			return true
		}
		if buf[i] != ',' {
			break
		}
		f, n, ok := wholeFloat32(buf[i+1:], false)
		if !ok {
			break
		}
		a.vec = append(a.vec, f)
		i += 1 + n
	}
	_, _ = a.r.Discard(i)
	return false
}

// base64 reads the rest of a base64 vector's string, its opening quote
// read: at most MaxDimensions float32s, whose slashes a JSON encoder may
// have escaped. It reads the reader's buffer a run at a time rather than
// a byte at a time (at 100,000 vectors of 1,536, a byte at a time was
// about 2 s of a provider's build): the string is returned from the
// buffer itself, valid until the next read, unless it has an escape or
// is longer than the buffer, when it is put together in a.raw.
func (a *answer) base64() ([]byte, error) {
	const limit = (MaxDimensions*4 + 2) / 3 * 4
	a.raw = a.raw[:0]
	escape := false // the byte before this run was a backslash
	for {
		run, err := a.r.ReadSlice('"')
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return nil, errBadAnswer("a vector's string ends early")
		}
		end := err == nil // run ends with the closing quote, unless escaped
		if end {
			run = run[:len(run)-1]
		}
		if end && !escape && len(a.raw) == 0 && bytes.IndexByte(run, '\\') < 0 {
			if len(run) > limit {
				return nil, errTooWide
			}
			return run, nil
		}
		for _, b := range run {
			switch {
			case escape && b != '/':
				return nil, errBadAnswer("an escape in a base64 vector")
			case !escape && b == '\\':
				escape = true
				continue
			}
			escape = false
			if len(a.raw) == limit {
				return nil, errTooWide
			}
			a.raw = append(a.raw, b)
		}
		if end {
			if escape { // an escaped quote
				return nil, errBadAnswer("an escape in a base64 vector")
			}
			return a.raw, nil
		}
	}
}

// object reads an object, calling field for each key with the reader at
// its value: field reports whether it read the value; if not, it is
// skipped. depth bounds nesting.
func (a *answer) object(depth int, field func(key string) (bool, error)) error {
	c, err := a.next()
	if err != nil {
		return err
	}
	if c != '{' {
		return errBadAnswer("not an object")
	}
	if c, err = a.next(); err != nil {
		return err
	}
	if c == '}' {
		return nil
	}
	a.r.UnreadByte()
	for {
		if c, err = a.next(); err != nil {
			return err
		}
		if c != '"' {
			return errBadAnswer("a key that is not a string")
		}
		key, err := a.str()
		if err != nil {
			return err
		}
		if c, err = a.next(); err != nil {
			return err
		}
		if c != ':' {
			return errBadAnswer("no colon after a key")
		}
		read, err := field(key)
		if err != nil {
			return err
		}
		if !read {
			if err := a.skip(depth + 1); err != nil {
				return err
			}
		}
		if c, err = a.next(); err != nil {
			return err
		}
		switch c {
		case ',':
		case '}':
			return nil
		default:
			return errBadAnswer("unexpected %q in an object", c)
		}
	}
}

// maxDepth bounds the nesting of values nobody reads.
const maxDepth = 32

// skip reads one value of any kind and drops it.
func (a *answer) skip(depth int) error {
	if depth > maxDepth {
		return errBadAnswer("nested deeper than %d", maxDepth)
	}
	c, err := a.next()
	if err != nil {
		return err
	}
	switch {
	case c == '"':
		_, err := a.str()
		return err
	case c == '{':
		a.r.UnreadByte()
		return a.object(depth, func(string) (bool, error) { return false, nil })
	case c == '[':
		return a.elements("an array", func() error { return a.skip(depth + 1) })
	case c == 't' || c == 'f' || c == 'n':
		a.r.UnreadByte()
		for {
			b, err := a.r.ReadByte()
			if err != nil {
				return nil
			}
			if b < 'a' || b > 'z' {
				return a.r.UnreadByte()
			}
		}
	default:
		a.r.UnreadByte()
		_, err := a.number(64)
		return err
	}
}

// str reads the rest of a string whose opening quote was read. Keys are
// short; one with escapes is unescaped by encoding/json.
func (a *answer) str() (string, error) {
	a.raw = a.raw[:0]
	escaped := false
	for {
		b, err := a.r.ReadByte()
		if err != nil {
			return "", errBadAnswer("a string ends early")
		}
		if len(a.raw) > 1<<16 {
			return "", errBadAnswer("a string longer than 64 KiB")
		}
		if b == '"' && !escaped {
			break
		}
		escaped = b == '\\' && !escaped
		a.raw = append(a.raw, b)
	}
	for _, b := range a.raw {
		if b == '\\' {
			var s string
			if err := json.Unmarshal(append(append([]byte{'"'}, a.raw...), '"'), &s); err != nil {
				return "", errBadAnswer("a malformed string")
			}
			return s, nil
		}
	}
	return string(a.raw), nil
}

// number reads a JSON number at the given float precision, from the
// reader's buffer: a vector of floats is thousands of them.
func (a *answer) number(bits int) (float64, error) {
	if err := a.space(); err != nil {
		return 0, err
	}
	buf, _ := a.r.Peek(maxNumber + 1) // fewer at the answer's end
	if bits == 32 && !a.plain {
		// Fewer than maxNumber+1 bytes: the answer ends after them.
		if f, n, ok := wholeFloat32(buf, len(buf) <= maxNumber); ok {
			_, _ = a.r.Discard(n)
			return float64(f), nil
		}
	}
	n := 0
	for n < len(buf) && numberByte(buf[n]) {
		n++
	}
	if n > maxNumber {
		return 0, errBadAnswer("a number longer than %d bytes", maxNumber)
	}
	x, err := strconv.ParseFloat(string(buf[:n]), bits)
	if err != nil {
		return 0, errBadAnswer("not a number")
	}
	_, _ = a.r.Discard(n) // Peek has them buffered
	return x, nil
}

// wholeFloat32 is the number buf starts with and its length, when the
// fast path may take it (ok): fastFloat32 is sure of it, it is at most
// maxNumber bytes, and it is whole, the byte after it not one that could
// go on a number. A number that reaches the end of buf is whole only when
// last, nothing of the answer coming after buf. Anything else is number's
// to read one at a time, as it did before the fast paths: both call this,
// so that neither takes what the other would refuse.
func wholeFloat32(buf []byte, last bool) (float32, int, bool) {
	f, n, ok := fastFloat32(buf)
	if !ok || n > maxNumber || n == len(buf) && !last || n < len(buf) && numberByte(buf[n]) {
		return 0, 0, false
	}
	return f, n, true
}

// maxNumber is the longest number an answer may hold, in bytes: a
// float32 needs 9 significant digits, and a float64 written in full 24
// characters.
const maxNumber = 64

// numberByte reports whether b may be part of a JSON number.
func numberByte(b byte) bool {
	return b >= '0' && b <= '9' || b == '-' || b == '+' || b == '.' || b == 'e' || b == 'E'
}

// integer reads a JSON number that must be a whole one.
func (a *answer) integer() (int, error) {
	x, err := a.number(64)
	if err != nil {
		return 0, err
	}
	if x != math.Trunc(x) || math.Abs(x) > 1<<31 {
		return 0, errBadAnswer("index %v is not a whole number", x)
	}
	return int(x), nil
}

// next returns the next byte that is not white space.
func (a *answer) next() (byte, error) {
	if err := a.space(); err != nil {
		return 0, err
	}
	b, err := a.r.ReadByte()
	if err != nil {
		return 0, a.short(err)
	}
	return b, nil
}

// space skips white space.
func (a *answer) space() error {
	for {
		b, err := a.r.ReadByte()
		if err != nil {
			return a.short(err)
		}
		if b != ' ' && b != '\t' && b != '\n' && b != '\r' {
			return a.r.UnreadByte()
		}
	}
}

// short is a read error: a cut answer is a bad one, a body over its size
// limit says so.
func (a *answer) short(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errBadAnswer("the answer ends early")
	}
	return err
}
