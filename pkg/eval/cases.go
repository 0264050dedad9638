// Package eval measures retrieval quality: it runs labelled queries against
// a searcher (in-process or a live server) and reports recall, hit@1, MRR,
// nDCG and latency, overall and per category, with every miss explained.
//
// About 1,000 lines, one job (measurement) in files by step: cases.go
// (reading and resolving labelled cases), run.go (running them and the
// metrics), client.go (a live server as the searcher), format.go (text,
// JSON, markdown and JUnit reports), baseline.go (per-case comparison with
// an earlier report). Splitting the steps into packages would only export
// the report's internals between them.
package eval

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"path/filepath"
	"strings"

	"github.com/toolsearch/toolsearch/pkg/internal/jsonerr"
	"github.com/toolsearch/toolsearch/pkg/internal/readfile"
	"github.com/toolsearch/toolsearch/pkg/jsonkeys"
	"github.com/toolsearch/toolsearch/pkg/redact"
	"github.com/toolsearch/toolsearch/pkg/yamljson"

	"github.com/toolsearch/toolsearch/pkg/analysis"
	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/search"
)

// Case is one labelled query: the tools a good search returns for it.
type Case struct {
	ID       string   `json:"id"`
	Category string   `json:"category"`
	Query    string   `json:"query"`
	Expected []string `json:"expected"` // "tool" or "server/tool", resolved like catalog.Resolve
	// Request holds further search fields for this case (template,
	// include_core, mode, servers, ...). Its query, when empty, is Query.
	Request *search.Request `json:"request,omitempty"`
	// keys, when set, are the expected tools already resolved (self cases).
	keys []ToolKey
	// where names the case in errors: its file and place in it, when read
	// from one (ParseCases).
	where string
}

// name is where the case is, for an error about it.
func (c Case) name() string {
	if c.where != "" {
		return c.where
	}
	return fmt.Sprintf("case %q", c.ID)
}

// SelfCases asks, for every tool, its own description (category
// "self-description"; tools without one are skipped) and the words of its
// name ("self-name"). A tool that does not come back near the top is
// shadowed by a near-duplicate, badly described, or not indexed at all:
// gaps that listings by name never show.
func SelfCases(cat *catalog.Catalog) []Case {
	var out []Case
	for _, t := range cat.Tools() {
		key := []ToolKey{{t.Server, t.Name}}
		if d := strings.TrimSpace(t.Description); d != "" {
			out = append(out, Case{ID: "description:" + t.ID(), Category: "self-description", Query: redact.Clip(d, search.MaxQueryBytes, ""), keys: key})
		}
		if words := analysis.Identifier(t.Name); words != "" {
			out = append(out, Case{ID: "name:" + t.ID(), Category: "self-name", Query: words, keys: key})
		}
	}
	return out
}

// ErrBadInput marks problems with the cases or their labels, as opposed to
// a failed search: the command exits 2 for these.
var ErrBadInput = errors.New("bad eval input")

// maxFileBytes bounds a cases file or a baseline report: the shared sets'
// largest, 3,000 cases, is under 1 MiB, and its report a few.
const maxFileBytes = 64 << 20

// LoadCases reads cases from JSONL (one case a line), a JSON array, or YAML
// (a list, or {"cases": [...]}), chosen by the file's extension.
func LoadCases(path string) ([]Case, error) {
	data, err := readfile.Read(path, maxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadInput, err)
	}
	return ParseCases(path, data)
}

// casesFile is the YAML or JSON form {"cases": [...]}.
type casesFile struct {
	Cases []Case `json:"cases"`
}

// The keys each form may hold, where.
var (
	caseRules  = jsonkeys.Typed[Case]()      // a JSONL line
	listRules  = jsonkeys.Typed[[]Case]()    // a JSON array or YAML list
	filesRules = jsonkeys.Typed[casesFile]() // {"cases": [...]}
)

// ParseCases decodes cases; source names them in errors and picks the format.
func ParseCases(source string, data []byte) ([]Case, error) {
	var cases []Case
	switch ext := strings.ToLower(filepath.Ext(source)); ext {
	case ".yaml", ".yml", ".json":
		j := data
		if ext != ".json" {
			var err error
			if j, err = yamljson.ToJSON(data); err != nil {
				return nil, fmt.Errorf("%w: %s: %w", ErrBadInput, source, err)
			}
		}
		// encoding/json drops a misspelt key (a typo in a case's request
		// would quietly measure another search), and matches keys in any
		// case; the scan refuses both, saying where.
		var err error
		if t := bytes.TrimSpace(j); len(t) > 0 && t[0] == '{' {
			var wrapped casesFile
			if err = jsonkeys.Scan(j, filesRules); err == nil {
				err = json.Unmarshal(j, &wrapped)
			}
			cases = wrapped.Cases
		} else if err = jsonkeys.Scan(j, listRules); err == nil {
			err = json.Unmarshal(j, &cases)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrBadInput, source, inJSONTerms(err, j))
		}
	default: // JSONL
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
		for line := 1; sc.Scan(); line++ {
			text := bytes.TrimSpace(sc.Bytes())
			if len(text) == 0 || text[0] == '#' {
				continue
			}
			if err := jsonkeys.Scan(text, caseRules); err != nil {
				return nil, fmt.Errorf("%w: %s:%d: %w", ErrBadInput, source, line, err)
			}
			var c Case
			dec := json.NewDecoder(bytes.NewReader(text))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&c); err != nil {
				return nil, fmt.Errorf("%w: %s:%d: %w", ErrBadInput, source, line, inJSONTerms(err, text))
			}
			cases = append(cases, c)
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrBadInput, source, err)
		}
	}
	if len(cases) == 0 {
		return nil, fmt.Errorf("%w: %s: no cases", ErrBadInput, source)
	}
	seen := map[string]bool{}
	for i, c := range cases {
		where := fmt.Sprintf("%s: case #%d %q", source, i+1, c.ID)
		switch {
		case c.ID == "":
			return nil, fmt.Errorf("%w: %s: missing id", ErrBadInput, where)
		case seen[c.ID]:
			return nil, fmt.Errorf("%w: %s: id repeated", ErrBadInput, where)
		case strings.TrimSpace(c.Query) == "" && (c.Request == nil || c.Request.Template == "" && c.Request.Operation != "list" && c.Request.Regex == "" && len(c.Request.Messages) == 0):
			return nil, fmt.Errorf("%w: %s: empty query", ErrBadInput, where)
		case len(c.Expected) == 0:
			return nil, fmt.Errorf("%w: %s: no expected tools", ErrBadInput, where)
		}
		seen[c.ID] = true
		cases[i].where = where
		if c.Category == "" {
			cases[i].Category = "uncategorized"
		}
	}
	return cases, nil
}

// inJSONTerms is a decoding error of a case as its writer would put it:
// encoding/json's type errors name Go types ("Case.expected of type
// []string").
func inJSONTerms(err error, doc []byte) error {
	if m, ok := jsonerr.Type(err, doc); ok && m.Field != "" {
		return fmt.Errorf("%q must be %s, got JSON %s", m.Field, m.Want, m.Got)
	}
	return err
}

// ToolKey identifies a tool by its parts, never by a joined string: names
// may contain "/".
type ToolKey struct{ Server, Name string }

func (k ToolKey) String() string { return k.Server + "/" + k.Name }

// Keys are the tools a self case expects, exactly (SelfCases resolves them
// itself; a tool id can read like another's). Nil for labelled cases.
func (c Case) Keys() []ToolKey { return c.keys }

// Resolve maps every expected name to its tool, failing on the first
// unknown or ambiguous one with the case that names it.
func Resolve(cat *catalog.Catalog, cases []Case) ([][]ToolKey, error) {
	out := make([][]ToolKey, len(cases))
	var errs []error
	for i, c := range cases {
		if c.keys != nil {
			out[i] = c.keys
			continue
		}
		seen := map[ToolKey]bool{}
		for _, ref := range c.Expected {
			j, err := cat.Resolve(ref)
			if err != nil {
				if near := cat.NearRef(ref); near != "" && errors.Is(err, catalog.ErrUnknownTool) {
					err = fmt.Errorf("%w (did you mean %q?)", err, near)
				}
				errs = append(errs, fmt.Errorf("%s: expected %w", c.name(), err))
				continue
			}
			t := cat.Tool(j)
			k := ToolKey{t.Server, t.Name}
			if !seen[k] {
				seen[k] = true
				out[i] = append(out[i], k)
			}
		}
	}
	if len(errs) > 0 {
		if len(errs) > 10 {
			errs = append(errs[:10], fmt.Errorf("and %d more", len(errs)-10))
		}
		return nil, fmt.Errorf("%w: %w", ErrBadInput, errors.Join(errs...))
	}
	return out, nil
}

// Split returns the half of cases named by half: "dev" or "test" (by an FNV
// hash of the case id, so the halves are stable and independent of file
// order), or all of them for "" or "all". Tune on dev; report test.
func Split(cases []Case, half string) ([]Case, error) {
	switch half {
	case "", "all":
		return cases, nil
	case "dev", "test":
	default:
		return nil, fmt.Errorf("%w: split must be dev, test or all, got %q", ErrBadInput, half)
	}
	var out []Case
	for _, c := range cases {
		h := fnv.New32a()
		h.Write([]byte(c.ID))
		if (h.Sum32()%2 == 0) == (half == "dev") {
			out = append(out, c)
		}
	}
	return out, nil
}
