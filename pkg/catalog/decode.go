package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/toolsearch/toolsearch/pkg/jsonkeys"
	"github.com/toolsearch/toolsearch/pkg/redact"
)

// decoder reads a catalog document in one pass over its bytes. jsontext
// checks the syntax, the UTF-8 and repeated keys at every depth as it
// reads; the decoder checks each level's keys against the known ones,
// reads the text fields and copies schemas and annotations, compact, into
// shared blocks. It replaces a key-check walk, a reflective decode and a
// compaction copy of the same bytes, and it knows where it is, so an
// error names the server and tool without parsing the file again.
type decoder struct {
	source string
	data   []byte
	dec    *jsontext.Decoder
	block  []byte // schemas are compacted into it, a fresh one when full
	chunk  int
	quoted []byte // scratch for strings with escapes
	keyAt  int64  // offset of the key last read

	// Where the decoder is, for errors: indexes are -1 outside a server
	// or tool; a name is known once its key has been read.
	server, tool           int
	serverName, toolName   string
	serverNamed, toolNamed bool
	bare                   bool // in a tools/list's "tools", not a server's
}

// decodeFile reads data, a JSON object, as a catalog file.
func decodeFile(source string, data []byte) (file, error) {
	d := &decoder{
		source: source,
		data:   data,
		dec:    jsontext.NewDecoder(bytes.NewBuffer(data)),
		chunk:  min(max(len(data)/8, 4<<10), 256<<10),
		server: -1,
		tool:   -1,
	}
	var f file
	if err := d.file(&f); err != nil {
		return file{}, err
	}
	if _, err := d.dec.ReadValue(); err != io.EOF {
		return file{}, d.fail(d.dec.InputOffset(), "more data after the catalog's object")
	}
	return f, nil
}

func (d *decoder) file(f *file) error {
	return d.object("the file", func(key []byte) error {
		switch string(key) {
		case "servers":
			return d.array("servers", func(i int) error {
				d.server, d.serverNamed, d.serverName = i, false, ""
				f.Servers = append(f.Servers, Server{})
				err := d.serverObject(&f.Servers[i])
				d.server = -1
				return err
			})
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
	return d.object("a server", func(key []byte) error {
		switch string(key) {
		case "name":
			err := d.text(&s.Name, "name")
			d.serverName, d.serverNamed = s.Name, true
			return err
		case "tools":
			return d.tools(&s.Tools)
		}
		return d.unknown(key, serverKeys)
	})
}

func (d *decoder) tools(tools *[]Tool) error {
	return d.array("tools", func(i int) error {
		d.tool, d.toolNamed, d.toolName = i, false, ""
		*tools = append(*tools, Tool{})
		err := d.toolObject(&(*tools)[i])
		d.tool = -1
		return err
	})
}

func (d *decoder) toolObject(t *Tool) error {
	return d.object("a tool", func(key []byte) error {
		switch string(key) {
		case "name":
			err := d.text(&t.Name, "name")
			d.toolName, d.toolNamed = t.Name, true
			return err
		case "title":
			return d.text(&t.Title, "title")
		case "description":
			return d.text(&t.Description, "description")
		case "inputSchema":
			return d.raw(&t.InputSchema)
		case "outputSchema":
			return d.raw(&t.OutputSchema)
		case "annotations":
			return d.raw(&t.Annotations)
		case "_meta", "icons", "execution":
			return d.skip()
		}
		return d.unknown(key, toolKeys)
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
	want := map[jsontext.Kind]string{'{': "an object", '[': "an array"}[kind]
	return false, d.fail(d.dec.InputOffset()-int64(len(v)), "%s: want %s, got %s", what, want, kindOf(v))
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
	return d.fail(d.dec.InputOffset()-int64(len(v)), "%s: want a string, got %s", field, kindOf(v))
}

// raw reads any value into dst, compact. Whether a schema is an object is
// the validation's to say, with the tool's other problems.
func (d *decoder) raw(dst *json.RawMessage) error {
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

func (d *decoder) skip() error { return d.syntax(d.dec.SkipValue()) }

// unquote returns the string a quoted JSON string holds; the decoder has
// checked it.
func (d *decoder) unquote(v jsontext.Value) string { return string(d.unquoted(v)) }

// unquoted is unquote's bytes, valid until the next call.
func (d *decoder) unquoted(v jsontext.Value) []byte {
	s := v[1 : len(v)-1]
	if bytes.IndexByte(s, '\\') < 0 {
		return s
	}
	d.quoted, _ = jsontext.AppendUnquote(d.quoted[:0], v)
	return d.quoted
}

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
	line, col := lineCol(d.data, off)
	problem := fmt.Sprintf("line %d, column %d: ", line, col) + fmt.Sprintf(format, args...)
	if d.server < 0 && !d.bare {
		return fmt.Errorf("catalog %s: %s", d.source, problem)
	}
	e := &Error{Source: d.source, Server: "(tools/list)", Index: d.tool, Problem: problem}
	named := named(d.data)
	if !d.bare {
		e.Server = d.serverName
		if !d.serverNamed && d.server < len(named.Servers) {
			e.Server = named.Servers[d.server].Name
		}
	}
	if d.tool >= 0 {
		e.Tool = d.toolName
		if !d.toolNamed {
			ts := named.Tools
			if !d.bare && d.server < len(named.Servers) {
				ts = named.Servers[d.server].Tools
			}
			if d.tool < len(ts) {
				e.Tool = ts[d.tool].Name
			}
		}
	}
	return e
}

// named is the file's server and tool names as far as encoding/json can
// read them, for an error in an object whose name comes after the
// problem. A file it cannot read names nothing.
func named(data []byte) (out struct {
	Servers []struct {
		Name  string
		Tools []struct{ Name string }
	}
	Tools []struct{ Name string }
}) {
	_ = json.Unmarshal(data, &out)
	return out
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

func kindOf(v jsontext.Value) string {
	switch v.Kind() {
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
	}
	return "an array"
}
