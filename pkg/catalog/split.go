package catalog

import (
	"bytes"
	"runtime"
	"sync/atomic"

	"github.com/toolsearch/toolsearch/pkg/internal/chunk"
	"github.com/toolsearch/toolsearch/pkg/internal/pack"
)

// A large catalog file is read on every core. Its bytes are mostly its
// tools, objects whose reading (the syntax, the keys, unescaping,
// compacting and coding the schemas) needs nothing outside them.
// splitTools finds them with a scan that only tells strings from
// structure; the rest of the file, each tool replaced by "{}", is read by
// the decoder as a file always is, and the tools, each read by the same
// code as alone, on every core. The parts are valid exactly when the file
// is, and read to the same catalog. Anything the scan does not expect, and
// any error at all, has the file read whole on one core, so a bad file's
// error is the one it always was.

// splitFrom is the smallest file read on every core. A file of fewer
// than 2×chunk.Min tools is read on one core either way, and the scan
// then costs a tenth to a fifth more (generated catalogs of 50 and 500
// tools, 23 and 233 KB); at 2,000 tools (949 KB) the split took 0.6 to
// 0.8 of the time. The bound errs large: a file under it takes
// milliseconds either way.
var splitFrom = 1 << 20

// splitDepth bounds how deep the scan follows a file. The decoder's own
// limit counts from the top of what it reads, and a tool read alone
// starts four levels down, so a tool nested near that limit would be read
// differently alone; no real schema comes near this.
const splitDepth = 512

// toolSpan is one tool object of a file: data[lo:hi], whose "{}" in the
// skeleton ends at end.
type toolSpan struct {
	lo, hi int
	end    int64
}

// toolEnd is where the decoder read a tool of a skeleton: the tool
// (server -1 for a tools/list's) and the offset its object ends at.
type toolEnd struct {
	server, tool int32
	end          int64
}

// decodeSplit is decodeFile on every core; ok is false when the file is
// to be read whole instead.
func decodeSplit(source string, data []byte) (f file, ok bool) {
	skel, spans, ok := splitTools(data)
	if !ok || len(spans) == 0 {
		return file{}, false
	}
	d := newDecoder(source, skel, nil, len(data))
	d.ends = make([]toolEnd, 0, len(spans))
	if d.read(&f) != nil || len(d.ends) != len(spans) {
		return file{}, false
	}
	for i, e := range d.ends {
		// The decoder read a tool where the scan put each "{}": an object
		// ending there can only be that "{}".
		if e.end != spans[i].end {
			return file{}, false
		}
	}
	var failed atomic.Bool
	chunk.Each(len(spans), func(_, lo, hi int) {
		w := newDecoder(source, nil, nil, len(data))
		w.packer = &schemaPacker{p: pack.Strings{Size: w.chunk}}
		for i := lo; i < hi && !failed.Load(); i++ {
			e, s := d.ends[i], spans[i]
			var t *Tool
			if e.server >= 0 {
				t = &f.Servers[e.server].Tools[e.tool]
			} else {
				t = &f.Tools[e.tool]
			}
			w.dec.Reset(bytes.NewBuffer(data[s.lo:s.hi]))
			if w.toolObject(t) != nil || w.more() {
				failed.Store(true)
				return
			}
		}
	})
	return f, !failed.Load()
}

// splitWorth reports whether a file of n bytes is read on every core.
func splitWorth(n int) bool { return n >= splitFrom && runtime.GOMAXPROCS(0) > 1 }

// splitTools finds the tool objects of data, a catalog document: the
// object elements of the file's "tools" array and of each server's. skel
// is data with each replaced by "{}". ok is false when data is not laid
// out as a catalog is, as far as the scan can tell, which checks little:
// the decoders check the rest.
func splitTools(data []byte) (skel []byte, spans []toolSpan, ok bool) {
	s := &splitter{data: data}
	ok = s.object(func(key []byte) bool {
		switch string(key) {
		case "servers":
			return s.array(func() bool {
				return s.object(func(key []byte) bool {
					if string(key) == "tools" {
						return s.tools()
					}
					return s.skip()
				})
			})
		case "tools":
			return s.tools()
		}
		return s.skip()
	})
	if !ok || s.deepest > splitDepth {
		return nil, nil, false
	}
	return append(s.skel, data[s.from:]...), s.spans, true
}

type splitter struct {
	data           []byte
	i              int
	skel           []byte
	from           int // data[from:] is not in skel yet
	spans          []toolSpan
	depth, deepest int
}

// tools reads an array (or anything else), taking out its objects.
func (s *splitter) tools() bool {
	if s.peek() != '[' {
		return s.skip()
	}
	return s.array(func() bool {
		if s.peek() != '{' {
			return s.skip()
		}
		lo := s.i
		if !s.skip() {
			return false
		}
		s.skel = append(append(s.skel, s.data[s.from:lo]...), "{}"...)
		s.from = s.i
		s.spans = append(s.spans, toolSpan{lo: lo, hi: s.i, end: int64(len(s.skel))})
		return len(s.spans) <= maxTools // the decoder says so
	})
}

// object reads an object, each member's value by member, given its key;
// null or anything else is skipped.
func (s *splitter) object(member func(key []byte) bool) bool {
	if s.peek() != '{' {
		return s.skip()
	}
	return s.list('{', '}', func() bool {
		key, ok := s.key()
		if !ok || s.peek() != ':' {
			return false
		}
		s.i++
		return member(key)
	})
}

// array reads an array, each element by elem; null or anything else is
// skipped.
func (s *splitter) array(elem func() bool) bool {
	if s.peek() != '[' {
		return s.skip()
	}
	return s.list('[', ']', elem)
}

// list reads open, items separated by commas, and close.
func (s *splitter) list(open, close byte, item func() bool) bool {
	s.i++
	s.enter()
	if s.peek() == close {
		s.i++
		s.depth--
		return true
	}
	for {
		if !item() {
			return false
		}
		switch s.peek() {
		case ',':
			s.i++
		case close:
			s.i++
			s.depth--
			return true
		default:
			return false
		}
	}
}

// key reads a string without escapes: the keys the scan compares are
// plain, and a file that escapes one is read whole.
func (s *splitter) key() ([]byte, bool) {
	if s.peek() != '"' {
		return nil, false
	}
	n := bytes.IndexByte(s.data[s.i+1:], '"')
	if n < 0 {
		return nil, false
	}
	key := s.data[s.i+1 : s.i+1+n]
	if bytes.IndexByte(key, '\\') >= 0 {
		return nil, false
	}
	s.i += n + 2
	return key, true
}

// skip passes over one value, following strings and brackets only.
func (s *splitter) skip() bool {
	switch s.peek() {
	case 0:
		return false
	case '"':
		return s.str()
	case '{', '[':
	default:
		// A number or a literal: the decoder checks it.
		for s.i < len(s.data) && !delimits[s.data[s.i]] {
			s.i++
		}
		return true
	}
	outer := s.depth
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case '"':
			if !s.str() {
				return false
			}
			continue
		case '{', '[':
			s.enter()
		case '}', ']':
			if s.depth--; s.depth == outer {
				s.i++
				return true
			}
		}
		s.i++
	}
	return false
}

// str passes over a string: to the first quote after it that an odd run
// of backslashes does not escape. Most strings in a catalog are keys and
// short values, which a loop passes faster than a call to IndexByte; a
// description's length is passed by IndexByte.
func (s *splitter) str() bool {
	j := s.i + 1
	for end := min(j+16, len(s.data)); j < end; j++ {
		switch s.data[j] {
		case '"':
			s.i = j + 1
			return true
		case '\\':
			j++
		}
	}
	for ; j < len(s.data); j++ {
		n := bytes.IndexByte(s.data[j:], '"')
		if n < 0 {
			return false
		}
		j += n
		escaped := false
		for k := j - 1; s.data[k] == '\\'; k-- {
			escaped = !escaped
		}
		if !escaped {
			s.i = j + 1
			return true
		}
	}
	return false
}

func (s *splitter) enter() {
	s.depth++
	s.deepest = max(s.deepest, s.depth)
}

// peek is the next byte that is not whitespace, 0 at the end.
func (s *splitter) peek() byte {
	for ; s.i < len(s.data); s.i++ {
		switch c := s.data[s.i]; c {
		case ' ', '\t', '\n', '\r':
		default:
			return c
		}
	}
	return 0
}

// delimits are the bytes that end a number or a literal.
var delimits = func() (d [256]bool) {
	for _, c := range []byte(" \t\n\r,:]}[{\"") {
		d[c] = true
	}
	return d
}()
