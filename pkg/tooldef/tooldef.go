// Package tooldef renders catalog tools as the tool definitions that model
// providers accept, so a router that talks to several providers can forward
// search results as they are.
package tooldef

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/toolsearch/toolsearch/pkg/catalog"
)

// Formats lists the formats Render accepts.
var Formats = []string{"mcp", "openai", "openai_responses", "anthropic", "gemini"}

// Valid reports whether f is a known format.
func Valid(f string) bool {
	for _, x := range Formats {
		if f == x {
			return true
		}
	}
	return false
}

// maxNameLen is the limit shared by OpenAI, Anthropic and Gemini function
// names.
const maxNameLen = 64

// Namer gives each tool in one answer a function name the providers accept
// (letters, digits, _ and -, starting with a letter or _, at most 64) and
// that is unique within the answer. It keeps the tool's own name whenever
// that is already valid and unused, so most names pass through unchanged.
type Namer struct{ taken map[string]bool }

// Name returns t's function name for this answer.
func (n *Namer) Name(t catalog.Tool) string {
	if n.taken == nil {
		n.taken = map[string]bool{}
	}
	candidates := []string{t.Name, t.Server + "_" + t.Name}
	for _, c := range candidates {
		s := sanitize(c)
		if s == c || c != t.Name { // the bare name only if it needed no change
			if len(s) <= maxNameLen && !n.taken[s] {
				n.taken[s] = true
				return s
			}
		}
	}
	// Still clashing or too long: a readable prefix and a hash of the ID.
	s := hashed(t, sanitize(t.Server+"_"+t.Name))
	n.taken[s] = true
	return s
}

// hashed is prefix, cut to fit, and a hash of t's ID: a valid name that no
// other tool's can equal.
func hashed(t catalog.Tool, prefix string) string {
	h := sha256.Sum256([]byte(t.ID()))
	suffix := "_" + hex.EncodeToString(h[:4])
	return prefix[:min(len(prefix), maxNameLen-len(suffix))] + suffix
}

// Qualified is t's name with its server, "server__tool", as a function
// name every provider accepts: for listing a tool beside other servers'
// under a name that cannot collide with theirs. The plain form is used
// only when its first "__" is the separator (the server has no "__" and
// does not end in "_"), or "a__b"+"c" and "a"+"b__c" would share it; one
// that is not, or is not valid or too long, is cut and given a hash of the
// tool's ID.
func Qualified(t catalog.Tool) string {
	plain := t.Server + "__" + t.Name
	s := sanitize(plain)
	if s != plain || len(s) > maxNameLen || strings.Contains(t.Server, "__") || strings.HasSuffix(t.Server, "_") {
		return hashed(t, s)
	}
	return plain
}

func sanitize(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := b.String()
	if s == "" || !(s[0] == '_' || s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z') {
		s = "_" + s
	}
	return s
}

// MaxOpenAIDescription is the longest function description OpenAI takes,
// in its characters (UTF-16 code units, OpenAIDescriptionLen): a longer
// one fails the whole request ("string_above_max_length"), as MCP
// servers' long descriptions routinely did.
const MaxOpenAIDescription = 1024

// OpenAIDescriptionLen is s's length as OpenAI counts a description.
func OpenAIDescriptionLen(s string) int { return utf16Len(s) }

// clipUTF16 cuts s to at most n UTF-16 code units, ending in "…", at a
// space when one is near the end; clipped reports whether it had to.
func clipUTF16(s string, n int) (string, bool) {
	if len(s) <= n || utf16Len(s) <= n { // a byte is at most a unit
		return s, false
	}
	units, end := 0, 0
	for end < len(s) {
		r, size := utf8.DecodeRuneInString(s[end:]) // an invalid byte is U+FFFD, one unit
		w := max(utf16.RuneLen(r), 1)
		if units+w > n-1 { // room for the "…"
			break
		}
		units += w
		end += size
	}
	cut := s[:end]
	if sp := strings.LastIndexAny(cut, " \n\t"); sp > len(cut)-80 && sp > 0 {
		cut = cut[:sp]
	}
	return strings.TrimRight(cut, " \n\t") + "…", true
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if w := utf16.RuneLen(r); w > 0 {
			n += w
		} else {
			n++
		}
	}
	return n
}

// emptyObject is the schema of a tool that declares no parameters. OpenAI
// and Anthropic require an object schema even then.
var emptyObject = json.RawMessage(`{"type":"object","properties":{}}`)

func inputSchema(t catalog.Tool) json.RawMessage {
	if !t.Schemas.HasInput() {
		return emptyObject
	}
	return t.Schemas.Input()
}

// Render returns t as a tool definition in format, named name:
//
//   - mcp: the MCP Tool object (name, title, description, inputSchema,
//     outputSchema, annotations, execution), under its own name.
//   - openai: Chat Completions {"type":"function","function":{name,
//     description, parameters}}.
//   - openai_responses: the Responses API's {"type":"function", name,
//     description, parameters, "strict":false}: that API takes a function
//     as strict unless told, and refuses a schema strict mode does not
//     allow (one with an optional parameter), as most tools' are.
//   - anthropic: Messages API {name, description, input_schema}.
//   - gemini: a functionDeclarations entry {name, description, parameters}
//     with the schema reduced to the OpenAPI 3.0 subset Gemini accepts.
//
// In every format the input schema is first mended where providers would
// refuse it (see Mend); for anthropic, parameters whose names Anthropic
// refuses are named anew (see SafeKeys). annotations are what mcp's
// carries: the tool's own, or those with inferred hints (package hints).
func Render(format string, t catalog.Tool, annotations json.RawMessage, name string) (Definition, error) {
	var v any
	var names map[string]string
	schema, warning := Mend(inputSchema(t))
	switch format {
	case "mcp":
		e := t.Entry()
		e.InputSchema, e.Annotations = schema, annotations // schema is never empty: mcp's inputSchema is required
		v = e
	case "openai", "openai_responses":
		type function struct {
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			Parameters  json.RawMessage `json:"parameters"`
		}
		desc, clipped := clipUTF16(t.Description, MaxOpenAIDescription)
		if clipped {
			warning = joinWarnings(warning, fmt.Sprintf("description is %d characters, over the %d OpenAI takes: clipped", utf16Len(t.Description), MaxOpenAIDescription))
		}
		f := function{name, desc, schema}
		if format == "openai" {
			v = struct {
				Type     string   `json:"type"`
				Function function `json:"function"`
			}{"function", f}
			break
		}
		v = struct {
			Type string `json:"type"`
			function
			Strict bool `json:"strict"`
		}{"function", f, false}
	case "anthropic":
		if schema, names = SafeKeys(schema); names != nil {
			warning = joinWarnings(warning, renameWarning(names))
		}
		v = struct {
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			InputSchema json.RawMessage `json:"input_schema"`
		}{name, t.Description, schema}
	case "gemini":
		if !t.Schemas.HasInput() {
			schema = nil // Gemini wants no parameters rather than an empty object
		}
		params, warn, err := geminiParameters(schema)
		if err != nil {
			return Definition{}, fmt.Errorf("tool %s: %w", t.ID(), err)
		}
		warning = joinWarnings(warning, warn)
		v = struct {
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			Parameters  json.RawMessage `json:"parameters,omitempty"`
		}{name, t.Description, params}
	default:
		return Definition{}, fmt.Errorf("unknown format %q", format)
	}
	b, err := json.Marshal(v)
	return Definition{JSON: b, Warning: warning, ArgumentNames: names}, err
}

// Definition is a tool rendered for a provider.
type Definition struct {
	JSON json.RawMessage
	// Warning, when not empty, says what of the schema was mended, named
	// anew, or left out to keep the definition within bounds (see
	// GeminiSchema).
	Warning string
	// ArgumentNames maps each parameter name the definition uses anew to
	// the tool's own, under which a call's arguments must be given.
	ArgumentNames map[string]string
}

func joinWarnings(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "; " + b
}
