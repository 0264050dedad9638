package catalog

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolsearch/toolsearch/pkg/jsonkeys"
	"github.com/toolsearch/toolsearch/pkg/yamljson"
)

// Part is the servers read from one source.
type Part struct {
	Source  string
	Servers []Server
	// Lenient parts come from servers the operator does not control (live
	// upstreams): an invalid tool is skipped and reported by
	// Catalog.Skipped instead of failing the whole catalog.
	Lenient bool
}

// Server is a named group of tools.
type Server struct {
	Name  string `json:"name"`
	Tools []Tool `json:"tools"`
}

// file is what a catalog file may hold: servers with their tools, or a bare
// tools/list result. A saved tools/list answer also carries nextCursor and
// _meta, which are allowed and ignored (see checkKeys).
type file struct {
	Servers []Server `json:"servers"`
	Tools   []Tool   `json:"tools"`
}

// maxFileBytes bounds a catalog file; the largest real catalogs are a few MiB.
const maxFileBytes = 64 << 20

// DefaultSource names the embedded default catalog in status and errors.
const DefaultSource = "embedded:default"

//go:embed default.yaml
var defaultFS embed.FS

// Default returns the catalog embedded in the binary, used when none is
// configured.
func Default() (*Catalog, error) {
	p, err := DefaultPart()
	if err != nil {
		return nil, err
	}
	return New([]Part{p})
}

// DefaultPart is the embedded default catalog as a part.
func DefaultPart() (Part, error) {
	data, err := defaultFS.ReadFile("default.yaml")
	if err != nil {
		return Part{}, err
	}
	return Parse(DefaultSource, data, "")
}

// ReadParts reads and parses the catalog files at paths, without combining
// them, so that other parts (live upstreams) can join before New.
func ReadParts(paths []string, server string) ([]Part, error) {
	parts := make([]Part, 0, len(paths))
	for _, path := range paths {
		data, err := readFile(path)
		if err != nil {
			return nil, err
		}
		p, err := Parse(path, data, server)
		if err != nil {
			return nil, err
		}
		parts = append(parts, p)
	}
	return parts, nil
}

func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	defer f.Close()
	// Read into a buffer of the file's size, not one grown by doubling.
	size := int64(0)
	if fi, err := f.Stat(); err == nil {
		size = min(fi.Size(), maxFileBytes)
	}
	buf := bytes.NewBuffer(make([]byte, 0, size+bytes.MinRead))
	if _, err := buf.ReadFrom(io.LimitReader(f, maxFileBytes+1)); err != nil {
		return nil, fmt.Errorf("catalog %s: %w", path, err)
	}
	data := buf.Bytes()
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("catalog %s: larger than %d MiB", path, maxFileBytes>>20)
	}
	return data, nil
}

// Parse decodes one catalog document, JSON or YAML (JSON is YAML, so YAML is
// tried when the data does not start like JSON). source names it in errors;
// defaultServer names the server of a bare tools/list result.
func Parse(source string, data []byte, defaultServer string) (Part, error) {
	trimmed := bytes.TrimSpace(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")))
	if len(trimmed) == 0 {
		return Part{}, fmt.Errorf("catalog %s: empty file", source)
	}
	if trimmed[0] != '{' {
		j, err := yamljson.ToJSON(trimmed)
		if err != nil {
			return Part{}, fmt.Errorf("catalog %s: %w", source, err)
		}
		trimmed = j
	}
	// The key check and the decoding read the same bytes independently:
	// on two cores a large file takes the longer of the two, not both.
	// The key check's error comes first, as if it had run first.
	keys := make(chan error, 1)
	go func() { keys <- checkKeys(source, trimmed) }()
	var f file
	err := json.Unmarshal(trimmed, &f)
	if kerr := <-keys; kerr != nil {
		return Part{}, kerr
	}
	if err != nil {
		return Part{}, fmt.Errorf("catalog %s: %w", source, describeJSONError(trimmed, err))
	}
	compactRaw(f.Tools)
	for _, s := range f.Servers {
		compactRaw(s.Tools)
	}
	switch {
	case len(f.Servers) > 0 && len(f.Tools) > 0:
		return Part{}, fmt.Errorf("catalog %s: has both \"servers\" and \"tools\"; use one", source)
	case len(f.Servers) > 0:
		return Part{Source: source, Servers: f.Servers}, nil
	case len(f.Tools) > 0:
		name := defaultServer
		if name == "" {
			name = strings.TrimSuffix(filepath.Base(source), filepath.Ext(source))
		}
		return Part{Source: source, Servers: []Server{{Name: name, Tools: f.Tools}}}, nil
	}
	return Part{}, fmt.Errorf("catalog %s: no tools: want {\"servers\":[{\"name\":...,\"tools\":[...]}]} or a tools/list result {\"tools\":[...]}", source)
}

// describeJSONError adds the line and column to a syntax or type error, since
// encoding/json reports only a byte offset.
func describeJSONError(data []byte, err error) error {
	var off int64
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
		if te.Field != "" {
			err = fmt.Errorf("field %s: want %s, got JSON %s", te.Field, te.Type, te.Value)
		}
	default:
		return err
	}
	line, col := 1, 1
	for _, b := range data[:min(int(off), len(data))] {
		if b == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return fmt.Errorf("line %d, column %d: %w", line, col, err)
}

// The keys a catalog file may use, at each level, exactly (case
// included). MCP fields this service does not use are allowed, so a saved
// tools/list answer loads as it is.
var (
	fileKeys   = []string{"servers", "tools", "nextCursor", "_meta"}
	serverKeys = []string{"name", "tools"}
	toolKeys   = []string{"name", "title", "description", "inputSchema", "outputSchema", "annotations", "_meta", "icons", "execution"}
)

// checkKeys rejects what encoding/json would silently drop or merge: a
// repeated key anywhere, and a key that is not one of the known ones at
// the file, server or tool level (an "input_schema" would lose the tool's
// parameters, an "annotation" its destructive hint). The error names the
// file, server and tool.
func checkKeys(source string, data []byte) error {
	// One walk of the bytes checks every level; only a file it finds
	// wrong is parsed again, to name the server and tool in the error.
	err := jsonkeys.Scan(data, catalogKeys)
	var ke *jsonkeys.Error
	if err == nil || !errors.As(err, &ke) {
		return nil
	}
	if ke.Problem == "unknown" {
		if named := explainKeys(source, data); named != nil {
			return named
		}
	}
	return fmt.Errorf("catalog %s: %w", source, err)
}

// catalogKeys are the keys allowed where a catalog file's objects stand:
// the file, a server, a tool (of a server or of a bare tools/list); any
// key inside a tool's schemas and annotations.
func catalogKeys(path []string) []string {
	switch {
	case len(path) == 0:
		return fileKeys
	case len(path) == 2 && path[0] == "servers" && path[1] == "[]":
		return serverKeys
	case len(path) == 4 && path[0] == "servers" && path[2] == "tools" && path[3] == "[]",
		len(path) == 2 && path[0] == "tools" && path[1] == "[]":
		return toolKeys
	}
	return nil
}

// explainKeys finds the unknown key Scan reported and names its server
// and tool.
func explainKeys(source string, data []byte) error {
	// One parse of the document; its servers and tools are read from it.
	var top map[string]json.RawMessage
	var servers, bare []map[string]json.RawMessage
	if json.Unmarshal(data, &top) != nil || !objects(top["servers"], &servers) || !objects(top["tools"], &bare) {
		return nil // not this shape: the decoder says what is wrong
	}
	if err := jsonkeys.Known(top, fileKeys); err != nil {
		return fmt.Errorf("catalog %s: %w", source, err)
	}
	tools := func(server string, ts []map[string]json.RawMessage) error {
		for i, t := range ts {
			if err := jsonkeys.Known(t, toolKeys); err != nil {
				return &Error{Source: source, Server: server, Tool: nameOf(t), Index: i, Problem: err.Error()}
			}
		}
		return nil
	}
	for _, s := range servers {
		name := nameOf(s)
		if err := jsonkeys.Known(s, serverKeys); err != nil {
			return &Error{Source: source, Server: name, Index: -1, Problem: err.Error()}
		}
		var ts []map[string]json.RawMessage
		if !objects(s["tools"], &ts) {
			return nil
		}
		if err := tools(name, ts); err != nil {
			return err
		}
	}
	return tools("(tools/list)", bare)
}

// objects decodes raw, a list of objects, into out; an absent raw is an
// empty list. It reports false when raw is something else.
func objects(raw json.RawMessage, out *[]map[string]json.RawMessage) bool {
	return raw == nil || json.Unmarshal(raw, out) == nil
}

func nameOf(obj map[string]json.RawMessage) string {
	var name string
	_ = json.Unmarshal(obj["name"], &name)
	return name
}

// compactRaw rewrites the tools' schemas and annotations without the
// whitespace between tokens, end to end in one block. Every encoder that
// hands them on (encoding/json, goccy/go-json) compacts them anyway, so
// callers see the same bytes; held compact, an indented catalog's
// whitespace is not kept in memory, a schema costs its length and not its
// allocation's size class, and the catalog's hash can read them as they
// are.
func compactRaw(tools []Tool) {
	total := 0
	for _, t := range tools {
		total += len(t.InputSchema) + len(t.OutputSchema) + len(t.Annotations)
	}
	block := make([]byte, 0, total)
	for i := range tools {
		t := &tools[i]
		for _, raw := range []*json.RawMessage{&t.InputSchema, &t.OutputSchema, &t.Annotations} {
			if len(*raw) == 0 {
				continue
			}
			start := len(block)
			block = appendCompact(block, *raw)
			*raw = block[start:len(block):len(block)]
		}
	}
}

// appendCompact appends src, valid JSON (Unmarshal checked it), without
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
