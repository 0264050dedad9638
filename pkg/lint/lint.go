// Package lint checks a tool catalog the way a reviewer of tool
// descriptions would: tools whose texts are near-duplicates (a model cannot
// tell them apart either), empty or very short descriptions, parameters
// without descriptions, names outside the MCP naming advice, and
// descriptions over a size budget. Tool descriptions are versioned code;
// this is their linter.
package lint

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/toolsearch/toolsearch/pkg/analysis"
	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/redact"
	"github.com/toolsearch/toolsearch/pkg/tooldef"
)

// Severity of a finding. An error fails the lint run.
type Severity string

// Severities.
const (
	Error   Severity = "error"
	Warning Severity = "warning"
)

// Finding is one problem with one tool (or pair of tools).
type Finding struct {
	Severity Severity `json:"severity"`
	Rule     string   `json:"rule"`
	Tool     string   `json:"tool"`            // server/tool
	Other    string   `json:"other,omitempty"` // the other tool of a near-duplicate pair
	Message  string   `json:"message"`
}

// Config sets the thresholds. Zero values take the defaults.
type Config struct {
	// NearDuplicate is the cosine at or above which two tools' texts are
	// reported as near-duplicates (warning); DuplicateError (error) marks
	// texts a model has no chance of telling apart.
	NearDuplicate  float32 // default 0.9
	DuplicateError float32 // default 0.98
	// MinDescription is the shortest description, in words, that is not
	// "very short"; default 4.
	MinDescription int
	// MaxDescription is the description budget in bytes; default 2048.
	MaxDescription int
	// Rows, when not nil, limits the findings to the tools at these rows:
	// each tool's own checks run on them alone, and a pair is reported
	// when either of its tools is among them, its partner anywhere.
	Rows []int
}

func (c *Config) defaults() {
	if c.NearDuplicate <= 0 {
		c.NearDuplicate = 0.9
	}
	if c.DuplicateError <= 0 {
		c.DuplicateError = 0.98
	}
	if c.MinDescription <= 0 {
		c.MinDescription = 4
	}
	if c.MaxDescription <= 0 {
		c.MaxDescription = 2048
	}
}

// Checks that read the catalog alone, and the one that needs embeddings:
// what callers report as run or skipped.
var (
	CatalogChecks  = []string{"names", "descriptions", "parameters", "ambiguous-ids"}
	NearDuplicates = "near-duplicates"
)

// Check lints cat. vecs holds one unit-length vector per tool, in catalog
// order, used for the near-duplicate rule; nil skips that rule. Findings
// are sorted by severity, then tool.
func Check(cat *catalog.Catalog, vecs [][]float32, cfg Config) []Finding {
	cfg.defaults()
	var out []Finding
	var in, inServer map[string]bool // the ids and servers of cfg.Rows; nil: every tool
	if cfg.Rows == nil {
		for _, t := range cat.Tools() {
			out = append(out, checkTool(t, cfg)...)
		}
	} else {
		// A report on one server need not check every other tool: at
		// 10,000 tools that was 39 MB allocated a request, for a few.
		in = make(map[string]bool, len(cfg.Rows))
		inServer = map[string]bool{}
		for _, r := range cfg.Rows {
			t := cat.Tool(r)
			in[t.ID()], inServer[t.Server] = true, true
			out = append(out, checkTool(t, cfg)...)
		}
	}
	for _, f := range duplicates(cat, vecs, cfg) {
		if in == nil || in[f.Tool] || in[f.Other] {
			out = append(out, f)
		}
	}
	out = append(out, ambiguousIDs(cat, in)...)
	// What the catalog found loading a tool and lint cannot read from the
	// tool served: the hidden text it removed, a schema's $refs.
	for _, w := range cat.Warnings() {
		id := w.Server + "/" + w.Tool
		if w.Tool == "" { // the server's own, reported with any of its tools
			id = w.Server
			if in != nil && !inServer[w.Server] {
				continue
			}
		} else if in != nil && !in[id] {
			continue
		}
		if w.Rule != "" {
			out = append(out, Finding{Severity: Warning, Rule: w.Rule, Tool: id, Message: w.Message})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Severity != out[j].Severity {
			return out[i].Severity == Error
		}
		if out[i].Tool != out[j].Tool {
			return out[i].Tool < out[j].Tool
		}
		return out[i].Rule < out[j].Rule
	})
	return out
}

// ambiguousIDs finds tools whose "server/tool" reads the same (server a
// with tool b/c, server a/b with tool c): select:a/b/c cannot name either.
// It also finds ids that differ but look the same to a reader (analysis.
// Fold: a soft hyphen, a fullwidth letter, a Cyrillic е among Latin
// letters), which a reviewer cannot tell apart and a model may call one
// for the other. Only the ids in only are looked for, and compared, unless
// it is nil: a key's report names no tool it cannot see.
func ambiguousIDs(cat *catalog.Catalog, only map[string]bool) []Finding {
	// Rows, not tools: a map of every tool's copy was most of this
	// check's memory, for the few ids that repeat.
	tools := cat.Tools()
	first := make(map[string]int, len(tools))
	var repeated map[string][]int
	for i, t := range tools {
		id := t.ID()
		if only != nil && !only[id] {
			continue
		}
		seen := analysis.Fold(id) // id itself, with no allocation, when ASCII
		j, again := first[seen]
		if !again {
			first[seen] = i
			continue
		}
		if repeated == nil {
			repeated = map[string][]int{}
		}
		if repeated[seen] == nil {
			repeated[seen] = []int{j}
		}
		repeated[seen] = append(repeated[seen], i)
	}
	// Counted, not compared pair by pair: an upstream may send thousands
	// of names that read as one ("de\u00adlete", "del\u00adete", ...).
	var out []Finding
	for _, rows := range repeated {
		ids := make([]string, len(rows))
		count := make(map[string]int, len(rows))
		for k, i := range rows {
			ids[k] = tools[i].ID()
			count[ids[k]]++
		}
		// Each is said to look like the group's first id, and the first
		// (and its repeats) like the first that differs from it.
		firstOther := ""
		if k := slices.IndexFunc(ids, func(o string) bool { return o != ids[0] }); k >= 0 {
			firstOther = ids[k]
		}
		for k, i := range rows {
			t, id := tools[i], ids[k]
			if count[id] > 1 {
				out = append(out, Finding{Severity: Warning, Rule: "ambiguous-id", Tool: id,
					Message: fmt.Sprintf("%q is tool %q of server %q and of another server: references to it are ambiguous; rename one", id, t.Name, t.Server)})
			}
			if firstOther != "" {
				other := ids[0]
				if other == id {
					other = firstOther
				}
				out = append(out, Finding{Severity: Warning, Rule: "lookalike-id", Tool: id,
					Message: fmt.Sprintf("%+q looks the same as %+q, another tool's id: only characters no reader sees, compatibility forms or letters of another script set them apart (written here as escapes), so a reviewer cannot tell them apart and a model may call one for the other; rename one", id, other)})
			}
		}
	}
	return out
}

func checkTool(t catalog.Tool, cfg Config) []Finding {
	var out []Finding
	add := func(sev Severity, rule, format string, args ...any) {
		out = append(out, Finding{Severity: sev, Rule: rule, Tool: t.ID(), Message: fmt.Sprintf(format, args...)})
	}
	words := wordCount(t.Description)
	switch {
	case words == 0:
		add(Error, "empty-description", "no description: a model can only guess what the tool does from its name")
	case words < cfg.MinDescription:
		add(Warning, "short-description", "description has %d words (%q); say what the tool does, to what, and when to use it", words, t.Description)
	}
	if n := tooldef.OpenAIDescriptionLen(t.Description); n > tooldef.MaxOpenAIDescription {
		add(Warning, "openai-description", "description is %d characters, over the %d OpenAI takes in a request: openai definitions carry it cut there", n, tooldef.MaxOpenAIDescription)
	}
	if len(t.Description) > cfg.MaxDescription {
		add(Warning, "long-description", "description is %d bytes, over the budget of %d: every byte is sent to the model on every turn", len(t.Description), cfg.MaxDescription)
	}
	if !catalog.AdvisedName(t.Name) {
		add(Warning, "name", "name %q is outside the MCP naming advice (1-128 characters of A-Z a-z 0-9 _ - .)", t.Name)
	}
	// The schema is read as the tool's text reads it (catalog.ReadSchemaTop:
	// exact keys, no values decoded), so a parameter this calls described
	// is one whose description the index has.
	input := t.Schemas.Input()
	if top, ok := catalog.ReadSchemaTop(input); ok {
		switch typ, ok := schemaType(top.Type); {
		case ok:
		case typ == "":
			add(Warning, "input-schema", `inputSchema has no "type": MCP requires "object"; toolsearch adds it to the definitions it serves, other readers of the catalog may not`)
		default:
			add(Error, "input-schema", `inputSchema's type is %s, not "object": MCP clients that validate tools/list (the TypeScript SDK's do) refuse the whole list, and toolsearch does not list the tool as itself`, typ)
		}
		var missing []string
		for _, p := range top.Params {
			if !p.Described {
				missing = append(missing, p.Name)
			}
		}
		if len(missing) > 0 {
			add(Warning, "param-description", "parameters without a description: %s", strings.Join(missing, ", "))
		}
		if w := tooldef.Refused(input); w != "" {
			add(Warning, "provider-schema", "%s; definitions toolsearch renders for providers carry it mended, other readers of the catalog may not", w)
		}
		if w := tooldef.Renamed(input); w != "" {
			add(Warning, "provider-names", "%s; tools listed as themselves over MCP carry the new names too", w)
		}
		switch notNames, undefined := badRequired(top); {
		case len(notNames) > 0:
			add(Error, "required", "inputSchema.required must list property names (strings), has %s", strings.Join(notNames, ", "))
		case len(undefined) > 0:
			add(Warning, "required", "required parameters not among the properties: %s", strings.Join(undefined, ", "))
		}
	}
	if w := tooldef.Malformed(t.Schemas.Output()); w != "" {
		add(Warning, "output-schema", "outputSchema has what JSON Schema readers do not compile: %s; MCP clients that compile output schemas as they list tools (the TypeScript SDK's do) fail the whole list on it, so toolsearch lists the tool as itself without it", w)
	}
	return out
}

// wordCount is len(strings.Fields(s)) without the slice of words: a
// report at 100,000 tools made 12 MB of them.
func wordCount(s string) int {
	n, inWord := 0, false
	for _, r := range s {
		space := unicode.IsSpace(r)
		if !space && !inWord {
			n++
		}
		inWord = !space
	}
	return n
}

// schemaType reports whether a schema's type is "object", and if not, the
// type it declares ("" for none).
func schemaType(typ []byte) (string, bool) {
	switch t := string(typ); t {
	case `"object"`:
		return "", true
	case "":
		return "", false
	default:
		return redact.Clip(t, 40, "…"), false
	}
}

// badRequired returns the entries of the schema's required list that are
// not strings (an invalid JSON Schema: a YAML 1.1 parser turns a parameter
// named "y" or "on" into true), and the names that no property defines;
// nothing when the properties are not an object's or the list not an
// array, and no undefined names when there are no properties.
func badRequired(top catalog.SchemaTop) (notNames, undefined []string) {
	if !top.ParamsOK || !top.RequiredOK {
		return nil, nil
	}
	for _, name := range top.Required {
		_, found := slices.BinarySearchFunc(top.Params, name, func(p catalog.SchemaParam, n string) int { return strings.Compare(p.Name, n) })
		if !found && top.HasParams {
			undefined = append(undefined, name)
		}
	}
	return top.NotNames, undefined
}

// duplicates reports pairs of tools whose vectors are too close, from one
// matrix product of the vectors with themselves (gonum's Gemm), computed in
// blocks of rows to bound memory on large catalogs.
func duplicates(cat *catalog.Catalog, vecs [][]float32, cfg Config) []Finding {
	n := len(vecs)
	if n < 2 {
		return nil
	}
	dim := len(vecs[0])
	data := make([]float32, 0, n*dim)
	for _, v := range vecs {
		data = append(data, v...)
	}
	all := blas32.General{Rows: n, Cols: dim, Stride: dim, Data: data}
	const block = 512
	sims := make([]float32, block*n)
	var out []Finding
	for start := 0; start < n; start += block {
		rows := min(block, n-start)
		a := blas32.General{Rows: rows, Cols: dim, Stride: dim, Data: data[start*dim : (start+rows)*dim]}
		c := blas32.General{Rows: rows, Cols: n, Stride: n, Data: sims[:rows*n]}
		blas32.Gemm(blas.NoTrans, blas.Trans, 1, a, all, 0, c)
		for i := range rows {
			for j := start + i + 1; j < n; j++ {
				s := c.Data[i*n+j]
				if s < cfg.NearDuplicate {
					continue
				}
				ti, tj := cat.Tool(start+i), cat.Tool(j)
				sev, rule := Warning, "near-duplicate"
				if s >= cfg.DuplicateError {
					sev, rule = Error, "duplicate"
				}
				out = append(out, Finding{Severity: sev, Rule: rule, Tool: ti.ID(), Other: tj.ID(),
					Message: fmt.Sprintf("text is %.3f similar to %s: say what sets them apart, or merge them", s, tj.ID())})
			}
		}
	}
	return out
}
