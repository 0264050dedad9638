package catalog

import (
	"bytes"
	"embed"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/toolsearch/toolsearch/pkg/internal/readfile"
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
// _meta, which are allowed and ignored (see decoder).
type file struct {
	Servers []Server
	Tools   []Tool
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
	data, err := readfile.Read(path, maxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
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
	var yamlDoc []byte // the YAML, where errors find their lines
	if trimmed[0] != '{' {
		j, err := yamljson.ToJSON(trimmed)
		if err != nil {
			return Part{}, fmt.Errorf("catalog %s: %w", source, err)
		}
		yamlDoc, trimmed = trimmed, j
	}
	f, err := decodeFile(source, trimmed, yamlDoc)
	if err != nil {
		return Part{}, err
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

// The keys a catalog file may use, at each level, exactly (case
// included). MCP fields this service does not use are allowed, so a saved
// tools/list answer loads as it is.
var (
	fileKeys      = []string{"servers", "tools", "nextCursor", "_meta"}
	serverKeys    = []string{"name", "tools"}
	toolKeys      = []string{"name", "title", "description", "inputSchema", "outputSchema", "annotations", "_meta", "icons", "execution"}
	executionKeys = []string{"taskSupport"}
)
