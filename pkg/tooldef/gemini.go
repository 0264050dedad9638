package tooldef

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
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

const maxRefDepth = 8

// GeminiSchema reduces a JSON Schema to what Gemini accepts: local $refs
// inlined (to a bounded depth), oneOf read as anyOf, const as a one-value
// enum, ["string","null"] as nullable, non-string enums moved into the
// description, and unsupported keywords dropped. A tool with no parameters
// gets no schema (Gemini wants "parameters" left unset then).
func GeminiSchema(raw json.RawMessage) (map[string]any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var root map[string]any
	if err := json.Unmarshal(raw, &root); err != nil {
		return nil, fmt.Errorf("inputSchema: %w", err)
	}
	out := convert(root, root, 0)
	if props, _ := out["properties"].(map[string]any); len(props) == 0 && out["type"] == "object" {
		return nil, nil
	}
	return out, nil
}

func convert(node, root map[string]any, depth int) map[string]any {
	if depth > maxRefDepth {
		return map[string]any{"type": "object", "description": "(nested too deeply to describe)"}
	}
	if ref, ok := node["$ref"].(string); ok {
		if target := resolveRef(root, ref); target != nil {
			merged := map[string]any{}
			for k, v := range target {
				merged[k] = v
			}
			if d, ok := node["description"]; ok {
				merged["description"] = d
			}
			return convert(merged, root, depth+1)
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
					conv[name] = convert(pm, root, depth+1)
				}
			}
			out["properties"] = conv
		case "items":
			if im, ok := v.(map[string]any); ok {
				out["items"] = convert(im, root, depth+1)
			}
		case "anyOf", "oneOf":
			list, _ := v.([]any)
			var conv []any
			for _, x := range list {
				if xm, ok := x.(map[string]any); ok {
					conv = append(conv, convert(xm, root, depth+1))
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

// resolveRef follows a local JSON pointer such as "#/$defs/Address".
func resolveRef(root map[string]any, ref string) map[string]any {
	if !strings.HasPrefix(ref, "#/") {
		return nil
	}
	var cur any = root
	for _, part := range strings.Split(ref[2:], "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[part]
	}
	m, _ := cur.(map[string]any)
	return m
}
