package catalog

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/toolsearch/toolsearch/pkg/internal/chunk"
	"github.com/toolsearch/toolsearch/pkg/internal/jsonread"
	"github.com/toolsearch/toolsearch/pkg/internal/pack"
	"github.com/toolsearch/toolsearch/pkg/jsonkeys"
	"github.com/toolsearch/toolsearch/pkg/redact"
	"github.com/toolsearch/toolsearch/pkg/yamljson"
)

// decoder reads a catalog document in one pass over its bytes. jsontext
// checks the syntax, the UTF-8 and repeated keys at every depth as it
// reads; the decoder checks each level's keys against the known ones,
// reads the text fields and copies schemas and annotations, compact, into
// shared blocks, which it codes (Schemas) once the file is read. It
// replaces a key-check walk, a reflective decode and a compaction copy of
// the same bytes, and it knows where it is, so an error names the server
// and tool without parsing the file again.
type decoder struct {
	source string
	data   []byte
	yaml   []byte // the YAML data was converted from, if it was
	dec    *jsontext.Decoder
	// A tool's schemas and annotations are compacted into block (a fresh
	// one when full), and coded once the whole file is read, on every
	// core (code).
	block   []byte
	chunk   int
	pending []pendingSchemas
	// packer, when set, codes each tool's schemas as it is read, into
	// block afresh: a decoder of decodeSplit's, on a core of its own.
	packer *schemaPacker
	// ends, when not nil, records where each tool is read: a skeleton's
	// decoder (decodeSplit).
	ends []toolEnd
	unquoter
	keyAt                  int64 // offset of the key last read
	toolsRead, serversRead int   // of the file

	// Where the decoder is, for errors: indexes are -1 outside a server
	// or tool, and srv and tl the server and tool being read.
	server, tool int
	srv          *Server
	tl           *Tool
	bare         bool // in a tools/list's "tools", not a server's
}

// decodeFile reads data, a JSON object, as a catalog file; yamlDoc, when
// not nil, is the YAML it was converted from, whose lines errors name. A
// large file is read on every core (decodeSplit).
func decodeFile(source string, data, yamlDoc []byte) (file, error) {
	if splitWorth(len(data)) {
		if f, ok := decodeSplit(source, data); ok {
			return f, nil
		}
	}
	d := newDecoder(source, data, yamlDoc, len(data))
	var f file
	if err := d.read(&f); err != nil {
		return file{}, err
	}
	d.code(&f)
	return f, nil
}

// newDecoder reads data, from a file of size bytes.
func newDecoder(source string, data, yamlDoc []byte, size int) *decoder {
	return &decoder{
		source: source,
		data:   data,
		yaml:   yamlDoc,
		dec:    jsontext.NewDecoder(bytes.NewBuffer(data)),
		chunk:  min(max(size/8, 4<<10), 256<<10),
		server: -1,
		tool:   -1,
	}
}

// read reads the file, which must end after its object.
func (d *decoder) read(f *file) error {
	if err := d.file(f); err != nil {
		return err
	}
	if d.more() {
		return d.fail(d.dec.InputOffset(), "more data after the catalog's object")
	}
	return nil
}

// more reports whether anything follows the value read.
func (d *decoder) more() bool {
	_, err := d.dec.ReadValue()
	return err != io.EOF
}

// pendingSchemas is a tool's schemas and annotations as read, to code:
// the tool is f.Servers[server].Tools[tool], or f.Tools[tool] when server
// is -1.
type pendingSchemas struct {
	server, tool int32
	in, out, ann []byte
}

// code codes the schemas read, each core a run of tools into its own
// strings: coding takes about three times compacting, and a file is
// read on one core.
func (d *decoder) code(f *file) {
	chunk.Each(len(d.pending), func(_, lo, hi int) {
		p := schemaPacker{p: pack.Strings{Size: d.chunk}}
		for _, s := range d.pending[lo:hi] {
			var t *Tool
			if s.server >= 0 {
				t = &f.Servers[s.server].Tools[s.tool]
			} else {
				t = &f.Tools[s.tool]
			}
			t.Schemas = p.schemas(s.in, s.out, s.ann)
		}
	})
	d.pending = nil
}

func (d *decoder) file(f *file) error {
	return d.object("the file", func(key []byte) error {
		switch string(key) {
		case "servers":
			return elements(d, "servers", &f.Servers, &d.server, d.serverObject)
		case "tools":
			d.bare = true
			err := d.tools(&f.Tools)
			d.bare = false
			return err
		case "nextCursor", "_meta":
			return d.skip()
		}
		return d.unknown(key, fileKeys)
	})
}

func (d *decoder) serverObject(s *Server) error {
	d.srv = s
	if d.serversRead++; d.serversRead > maxTools {
		// A server holds a tool or is nothing: as many as tools at most.
		return fmt.Errorf("catalog %s: more than the %d servers a catalog may hold", d.source, maxTools)
	}
	return d.object("a server", func(key []byte) error {
		switch string(key) {
		case "name":
			return d.text(&s.Name, "name")
		case "tools":
			return d.tools(&s.Tools)
		}
		return d.unknown(key, serverKeys)
	})
}

func (d *decoder) tools(tools *[]Tool) error {
	return elements(d, "tools", tools, &d.tool, d.toolObject)
}

// elements reads an array of objects into *list, each by read, with *at
// the index of the one being read (-1 after), for errors.
func elements[T any](d *decoder, what string, list *[]T, at *int, read func(*T) error) error {
	return d.array(what, func(i int) error {
		*list = append(*list, *new(T))
		*at = i
		err := read(&(*list)[i])
		*at = -1
		return err
	})
}

func (d *decoder) toolObject(t *Tool) error {
	d.tl = t
	if d.toolsRead++; d.toolsRead > maxTools {
		// Bounded as it is read: a file of "{}," is 21 million tools
		// in 64 MiB, 1.8 GB of records before New could count them.
		return fmt.Errorf("catalog %s: more than the %d tools a catalog may hold", d.source, maxTools)
	}
	var s pendingSchemas
	err := d.object("a tool", func(key []byte) error {
		switch string(key) {
		case "name":
			return d.text(&t.Name, "name")
		case "title":
			return d.text(&t.Title, "title")
		case "description":
			return d.text(&t.Description, "description")
		case "inputSchema":
			return d.raw(&s.in)
		case "outputSchema":
			return d.raw(&s.out)
		case "annotations":
			if err := d.raw(&s.ann); err != nil {
				return err
			}
			if err := checkAnnotations(s.ann); err != nil {
				return d.fail(d.keyAt, "%v", err)
			}
			return nil
		case "execution":
			return d.execution(&t.Tasks)
		case "_meta", "icons":
			return d.skip()
		}
		return d.unknown(key, toolKeys)
	})
	switch {
	case err != nil:
	case d.ends != nil:
		d.ends = append(d.ends, toolEnd{server: int32(d.server), tool: int32(d.tool), end: d.dec.InputOffset()})
	case len(s.in)+len(s.out)+len(s.ann) == 0:
	case d.packer != nil:
		t.Schemas = d.packer.schemas(s.in, s.out, s.ann)
		d.block = d.block[:0]
	default:
		s.server, s.tool = int32(d.server), int32(d.tool)
		d.pending = append(d.pending, s)
	}
	return err
}

// execution reads a tool's execution: its taskSupport.
func (d *decoder) execution(tasks *TaskSupport) error {
	return d.object("execution", func(key []byte) error {
		if string(key) != "taskSupport" {
			return d.unknown(key, executionKeys)
		}
		var s string
		if err := d.text(&s, "execution.taskSupport"); err != nil {
			return err
		}
		t, ok := ParseTaskSupport(s)
		if !ok && s != "" {
			return d.fail(d.keyAt, "execution.taskSupport: want one of %s, got %s", strings.Join(taskSupports, ", "), redact.Echo(s))
		}
		*tasks = t
		return nil
	})
}

// object reads an object (null is an empty one), calling member for each
// key with the decoder before the key's value; the key is valid until
// the decoder reads on.
func (d *decoder) object(what string, member func(key []byte) error) error {
	if ok, err := d.open('{', what); !ok || err != nil {
		return err
	}
	for d.dec.PeekKind() != '}' {
		v, err := d.dec.ReadValue()
		if err != nil {
			return d.syntax(err)
		}
		d.keyAt = d.dec.InputOffset() - int64(len(v))
		if err := member(d.unquoted(v)); err != nil {
			return err
		}
	}
	_, err := d.dec.ReadToken()
	return d.syntax(err)
}

// array reads an array (null is an empty one), calling elem for each
// element with the decoder before it.
func (d *decoder) array(what string, elem func(i int) error) error {
	if ok, err := d.open('[', what); !ok || err != nil {
		return err
	}
	for i := 0; d.dec.PeekKind() != ']'; i++ {
		if err := elem(i); err != nil {
			return err
		}
	}
	_, err := d.dec.ReadToken()
	return d.syntax(err)
}

// open reads the start of an object or array, or a null (false).
func (d *decoder) open(kind jsontext.Kind, what string) (bool, error) {
	switch d.dec.PeekKind() {
	case kind:
		_, err := d.dec.ReadToken()
		return err == nil, d.syntax(err)
	case 'n':
		_, err := d.dec.ReadToken()
		return false, d.syntax(err)
	}
	v, err := d.dec.ReadValue()
	if err != nil {
		return false, d.syntax(err)
	}
	return false, d.fail(d.dec.InputOffset()-int64(len(v)), "%s: want %s, got %s", what, jsonread.KindName([]byte{byte(kind)}), jsonread.KindName(v))
}

// text reads a string (null leaves dst empty).
func (d *decoder) text(dst *string, field string) error {
	v, err := d.dec.ReadValue()
	if err != nil {
		return d.syntax(err)
	}
	switch v.Kind() {
	case '"':
		*dst = d.unquote(v)
		return nil
	case 'n':
		return nil
	}
	return d.fail(d.dec.InputOffset()-int64(len(v)), "%s: want a string, got %s", field, jsonread.KindName(v))
}

// raw reads any value into dst, compact. Whether a schema is an object is
// the validation's to say, with the tool's other problems.
func (d *decoder) raw(dst *[]byte) error {
	v, err := d.dec.ReadValue()
	if err != nil {
		return d.syntax(err)
	}
	if cap(d.block)-len(d.block) < len(v) {
		d.block = make([]byte, 0, max(d.chunk, len(v)))
	}
	start := len(d.block)
	d.block = appendCompact(d.block, v)
	*dst = d.block[start:len(d.block):len(d.block)]
	return nil
}

// appendCompact appends src, valid JSON (the decoder checked it), without
// the whitespace outside its strings: what json.Compact writes, at a
// fraction of its cost, since it need not validate.
func appendCompact(dst, src []byte) []byte {
	for i := 0; i < len(src); i++ {
		switch c := src[i]; c {
		case ' ', '\t', '\n', '\r':
		case '"':
			// Copy the string whole, to its closing quote.
			j := i + 1
			for j < len(src) && src[j] != '"' {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			dst = append(dst, src[i:min(j+1, len(src))]...)
			i = j
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

func (d *decoder) skip() error { return d.syntax(d.dec.SkipValue()) }

// unquoter unquotes JSON strings read by a jsontext decoder.
type unquoter struct{ buf []byte }

// unquoted is the text of v, a JSON string, valid until the next call:
// v's own bytes when it has no escapes, else unquoted into scratch
// memory; invalid UTF-8 becomes U+FFFD, as encoding/json has it.
func (u *unquoter) unquoted(v jsontext.Value) []byte {
	s := v[1 : len(v)-1]
	if bytes.IndexByte(s, '\\') < 0 && utf8.Valid(s) {
		return s
	}
	u.buf, _ = jsontext.AppendUnquote(u.buf[:0], v)
	return u.buf
}

func (u *unquoter) unquote(v jsontext.Value) string { return string(u.unquoted(v)) }

func (d *decoder) unknown(key []byte, allowed []string) error {
	return d.fail(d.keyAt, "%v", jsonkeys.Unknown(redact.Clip(string(key), redact.MaxEcho, "…"), allowed))
}

// syntax places a reading error; nil stays nil.
func (d *decoder) syntax(err error) error {
	if err == nil {
		return nil
	}
	var se *jsontext.SyntacticError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return d.fail(int64(len(d.data)), "the file ends early")
	case !errors.As(err, &se):
		return d.fail(d.dec.InputOffset(), "%v", err)
	case errors.Is(se.Err, jsontext.ErrDuplicateName):
		ke := &jsonkeys.Error{Path: redact.Clip(string(se.JSONPointer.Parent()), MaxNameBytes, "…"),
			Key: redact.Clip(se.JSONPointer.LastToken(), redact.MaxEcho, "…"), Problem: "repeated"}
		return d.fail(se.ByteOffset, "%v", ke)
	}
	return d.fail(se.ByteOffset, "%v", se.Err)
}

// fail is a problem at byte offset off, with its line and column and the
// server and tool it is in.
func (d *decoder) fail(off int64, format string, args ...any) error {
	line, col, ok := 0, 0, true
	if d.yaml == nil {
		line, col = lineCol(d.data, off)
	} else {
		// The converted JSON's offsets say nothing of the file's lines.
		line, col, ok = yamljson.Locate(d.yaml, d.dec.StackPointer())
	}
	problem := fmt.Sprintf(format, args...)
	if ok {
		problem = fmt.Sprintf("line %d, column %d: %s", line, col, problem)
	}
	if d.server < 0 && !d.bare {
		return fmt.Errorf("catalog %s: %s", d.source, problem)
	}
	e := &Error{Source: d.source, Server: "(tools/list)", Index: d.tool, Problem: problem}
	if !d.bare {
		e.Server = d.srv.Name
	}
	if d.tool >= 0 {
		e.Tool = d.tl.Name
	}
	if (!d.bare && e.Server == "") || (d.tool >= 0 && e.Tool == "") {
		d.nameLater(e)
	}
	return e
}

// nameLater names e's server and tool when their names come after the
// problem in the file, as far as encoding/json can read it: a file it
// cannot read names nothing.
func (d *decoder) nameLater(e *Error) {
	var named struct {
		Servers []struct {
			Name  string
			Tools []struct{ Name string }
		}
		Tools []struct{ Name string }
	}
	_ = json.Unmarshal(d.data, &named)
	ts := named.Tools
	if !d.bare && d.server < len(named.Servers) {
		e.Server = cmp.Or(e.Server, named.Servers[d.server].Name)
		ts = named.Servers[d.server].Tools
	}
	if d.tool >= 0 && d.tool < len(ts) {
		e.Tool = cmp.Or(e.Tool, ts[d.tool].Name)
	}
}

func lineCol(data []byte, off int64) (line, col int) {
	line, col = 1, 1
	for _, b := range data[:min(max(int(off), 0), len(data))] {
		if b == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return line, col
}
