package tooldef

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/toolsearch/toolsearch/pkg/catalog"
)

// geminiKeys are the Schema fields Gemini's function declarations accept
// (a subset of OpenAPI 3.0). Anything else is dropped or translated.
var geminiKeys = map[string]bool{
	"type": true, "format": true, "title": true, "description": true, "nullable": true, "enum": true,
	"properties": true, "required": true, "items": true, "minItems": true, "maxItems": true,
	"minLength": true, "maxLength": true, "pattern": true, "minimum": true, "maximum": true,
	"minProperties": true, "maxProperties": true, "anyOf": true, "default": true, "example": true,
	"propertyOrdering": true,
}

// geminiFormats are the formats Gemini's Schema accepts, by type.
var geminiFormats = map[string][]string{
	"string": {"enum", "date-time"}, "number": {"float", "double"}, "integer": {"int32", "int64"},
}

// Rendering bounds. Inlining $refs can multiply a schema: a 1.5 KB
// recursive one expanded to 235 MB. Depth, the number of schema nodes
// written, and the rendered size are all capped; what does not fit is
// replaced by a stub that says so.
const (
	maxRefDepth    = 8
	MaxSchemaNodes = catalog.MaxInlinedNodes
	MaxSchemaBytes = 256 << 10
)

// Truncation notes, in a stub's description and in warnings.
const (
	noteDeep      = "(nested too deeply to describe)"
	noteRecursive = "(recursive: refers to a schema it is part of)"
	noteLarge     = "(too large to describe)"
)

// GeminiSchema reduces a JSON Schema to what Gemini accepts: local $refs
// inlined (within the bounds above; a $ref back into itself is cut),
// oneOf read as anyOf, const as a one-value enum, ["string","null"] as
// nullable, non-string enums moved into the description, and unsupported
// keywords dropped. A tool with no parameters gets no schema (Gemini wants
// "parameters" left unset then). The warning, when not empty, says what
// was cut to stay within the bounds.
func GeminiSchema(raw json.RawMessage) (map[string]any, string, error) {
	if len(raw) == 0 {
		return nil, "", nil
	}
	var root map[string]any
	if err := json.Unmarshal(raw, &root); err != nil {
		return nil, "", fmt.Errorf("inputSchema: %w", err)
	}
	c := converter{root: root, budget: MaxSchemaNodes, refs: map[string]bool{}}
	out := c.convert(root, 0)
	if props, _ := out["properties"].(map[string]any); len(props) == 0 && out["type"] == "object" && len(c.cut) == 0 {
		return nil, "", nil
	}
	return out, c.warning(), nil
}

// converter is one schema's conversion, with its remaining node budget,
// the $refs being expanded (to cut cycles) and what was cut.
type converter struct {
	root    map[string]any
	budget  int
	refs    map[string]bool
	cut     map[string]bool
	untyped int // schemas given "string" for want of a type
}

func (c *converter) stub(note string) map[string]any {
	if c.cut == nil {
		c.cut = map[string]bool{}
	}
	c.cut[note] = true
	return map[string]any{"type": "object", "description": note}
}

func (c *converter) warning() string {
	notes := make([]string, 0, len(c.cut))
	for n := range c.cut {
		notes = append(notes, n)
	}
	w := cutWarning(notes...)
	if c.untyped > 0 {
		noun := "schemas"
		if c.untyped == 1 {
			noun = "schema"
		}
		w = joinWarnings(w, fmt.Sprintf(`%d %s without a type given "string": Gemini needs one`, c.untyped, noun))
	}
	return w
}

// cutWarning says which parts of a schema were left out, and why.
func cutWarning(notes ...string) string {
	if len(notes) == 0 {
		return ""
	}
	for i, n := range notes {
		notes[i] = strings.Trim(n, "()")
	}
	sort.Strings(notes)
	return fmt.Sprintf("inputSchema rendered in part, within %d nodes, depth %d and %d KiB: %s", MaxSchemaNodes, maxRefDepth, MaxSchemaBytes>>10, strings.Join(notes, "; "))
}

// geminiParameters is the rendered parameters of a Gemini declaration,
// cut to a stub when over MaxSchemaBytes (long descriptions or enums can
// make a schema large without any $ref). nil: no parameters.
func geminiParameters(raw json.RawMessage) (json.RawMessage, string, error) {
	params, warning, err := GeminiSchema(raw)
	if err != nil || params == nil {
		return nil, warning, err
	}
	b, err := json.Marshal(params)
	if err != nil {
		return nil, "", err
	}
	if len(b) > MaxSchemaBytes {
		b, _ = json.Marshal(map[string]any{"type": "object", "description": noteLarge})
		warning = cutWarning(noteLarge)
	}
	return b, warning, nil
}

func (c *converter) convert(node map[string]any, depth int) map[string]any {
	switch {
	case depth > maxRefDepth:
		return c.stub(noteDeep)
	case c.budget <= 0:
		return c.stub(noteLarge)
	}
	c.budget--
	if ref, ok := node["$ref"].(string); ok {
		if c.refs[ref] {
			return c.stub(noteRecursive)
		}
		if target, _ := catalog.ResolvePointer(c.root, ref).(map[string]any); target != nil {
			merged := map[string]any{}
			for k, v := range target {
				merged[k] = v
			}
			if d, ok := node["description"]; ok {
				merged["description"] = d
			}
			c.refs[ref] = true
			defer delete(c.refs, ref)
			return c.convert(merged, depth+1)
		}
		return map[string]any{"type": "object", "description": "(refers to an external schema)"}
	}
	out := map[string]any{}
	var notes []string
	for k, v := range node {
		switch k {
		case "type":
			switch t := v.(type) {
			case string:
				out["type"] = t
			case []any:
				// ["string","null"]: Gemini has one type plus nullable.
				for _, x := range t {
					if s, _ := x.(string); s == "null" {
						out["nullable"] = true
					} else if s != "" && out["type"] == nil {
						out["type"] = s
					}
				}
			}
		case "properties":
			props, _ := v.(map[string]any)
			conv := make(map[string]any, len(props))
			for name, p := range props {
				if pm, ok := p.(map[string]any); ok {
					conv[name] = c.convert(pm, depth+1)
				}
			}
			out["properties"] = conv
		case "items":
			if im, ok := v.(map[string]any); ok {
				out["items"] = c.convert(im, depth+1)
			}
		case "anyOf", "oneOf":
			list, _ := v.([]any)
			var conv []any
			for _, x := range list {
				if xm, ok := x.(map[string]any); ok {
					conv = append(conv, c.convert(xm, depth+1))
				}
			}
			if len(conv) > 0 {
				out["anyOf"] = conv
			}
		case "const":
			if s, ok := v.(string); ok {
				out["enum"] = []any{s}
			} else {
				notes = append(notes, fmt.Sprintf("must be %v", v))
			}
		case "enum":
			list, _ := v.([]any)
			allStrings := true
			for _, x := range list {
				if _, ok := x.(string); !ok {
					allStrings = false
				}
			}
			if allStrings {
				out["enum"] = list
				if out["format"] == nil && node["format"] == nil {
					out["format"] = "enum"
				}
			} else {
				notes = append(notes, fmt.Sprintf("one of %v", list))
			}
		case "required":
			out["required"] = v
		default:
			if geminiKeys[k] {
				out[k] = v
			}
		}
	}
	if len(notes) > 0 {
		sort.Strings(notes)
		desc, _ := out["description"].(string)
		out["description"] = strings.TrimSpace(desc + " (" + strings.Join(notes, "; ") + ")")
	}
	// Gemini needs a type on every schema but a union's.
	if out["type"] == nil && out["anyOf"] == nil {
		switch {
		case out["properties"] != nil:
			out["type"] = "object"
		case out["items"] != nil:
			out["type"] = "array"
		case out["enum"] != nil: // kept only when its values are strings
			out["type"] = "string"
		default:
			out["type"] = "string"
			c.untyped++
		}
	}
	// Gemini refuses the request for a format it has not for the type
	// ("only 'enum' and 'date-time' are supported for STRING type"): the
	// rest (uri, email, uuid) is told in the description.
	if f, ok := out["format"]; ok {
		if s, _ := f.(string); !slices.Contains(geminiFormats[fmt.Sprint(out["type"])], s) {
			delete(out, "format")
			desc, _ := out["description"].(string)
			out["description"] = strings.TrimSpace(desc + " (format: " + clipJSON([]byte(fmt.Sprint(f))) + ")")
		}
	}
	// Gemini rejects a required name with no matching property.
	if req, ok := out["required"].([]any); ok {
		props, _ := out["properties"].(map[string]any)
		kept := req[:0:0]
		for _, r := range req {
			if s, ok := r.(string); ok && props[s] != nil {
				kept = append(kept, s)
			}
		}
		if len(kept) == 0 {
			delete(out, "required")
		} else {
			out["required"] = kept
		}
	}
	return out
}
