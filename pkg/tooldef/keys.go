package tooldef

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/toolsearch/toolsearch/pkg/internal/jsontree"

	"github.com/toolsearch/toolsearch/pkg/redact"
)

// maxKeyLen and validKey are Anthropic's rule for the names of a tool's
// parameters (Bedrock's too): a request with one outside it is refused
// whole ("Property keys should match pattern '^[a-zA-Z0-9_.-]{1,64}$'"),
// and APIs described in OpenAPI name theirs "filter[id]" or "año". Only
// the top level is checked.
const maxKeyLen = 64

func validKey[T string | []byte](k T) bool {
	if len(k) == 0 || len(k) > maxKeyLen {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

// SafeKeys renames the top-level parameters of schema whose names
// Anthropic refuses: each other character becomes "_", the name is cut to
// 64 and, where that meets a name taken, numbered; "required" follows.
// names maps each new name to the parameter's own, which a call's
// arguments must be given back under; nil when nothing was renamed.
func SafeKeys(schema json.RawMessage) (json.RawMessage, map[string]string) {
	if !hasBadKey(schema) {
		return schema, nil
	}
	root, err := jsontree.Object(schema)
	if err != nil {
		return schema, nil
	}
	props, _ := root["properties"].(map[string]any)
	keys := slices.Sorted(maps.Keys(props)) // renames in one order, whatever the map's
	taken := map[string]bool{}
	for _, k := range keys {
		if validKey(k) {
			taken[k] = true
		}
	}
	names := map[string]string{}
	renamed := map[string]string{} // own name -> new
	for _, k := range keys {
		if validKey(k) {
			continue
		}
		safe := safeKey(k, taken)
		taken[safe] = true
		names[safe], renamed[k] = k, safe
		props[safe] = props[k]
		delete(props, k)
	}
	if req, ok := root["required"].([]any); ok {
		for i, r := range req {
			if s, ok := r.(string); ok && renamed[s] != "" {
				req[i] = renamed[s]
			}
		}
	}
	out, err := jsontree.Encode(root)
	if err != nil {
		return schema, nil
	}
	return out, names
}

// hasBadKey reports whether schema's top-level properties name one that
// Anthropic refuses, reading names only (every definition rendered for
// Anthropic asks, and decoding the properties took 2 us and 13
// allocations a definition).
func hasBadKey(schema []byte) bool {
	c := checkers.Get().(*checker)
	defer checkers.Put(c)
	c.src.Reset(schema)
	// Whatever this cannot read, the full decoding in SafeKeys decides.
	c.dec.Reset(&c.src, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if _, err := c.dec.ReadToken(); err != nil || c.dec.PeekKind() == 0 {
		return true
	}
	for c.dec.PeekKind() == '"' {
		k, err := c.dec.ReadValue()
		if err != nil {
			return true
		}
		if name, ok := plainString(k); !ok || string(name) != "properties" || c.dec.PeekKind() != '{' {
			if !ok && bytes.Contains(k, []byte(`\`)) {
				return true // an escaped keyword: let the decoder read it
			}
			if c.dec.SkipValue() != nil {
				return true
			}
			continue
		}
		if _, err := c.dec.ReadToken(); err != nil {
			return true
		}
		for c.dec.PeekKind() == '"' {
			p, err := c.dec.ReadValue()
			if err != nil {
				return true
			}
			if name, ok := plainString(p); !ok || !validKey(name) {
				return true
			}
			if c.dec.SkipValue() != nil {
				return true
			}
		}
		return false
	}
	return false
}

// safeKey is k with each character outside [A-Za-z0-9_.-] as "_", cut to
// 64 bytes, numbered past the names taken.
func safeKey(k string, taken map[string]bool) string {
	var b strings.Builder
	for _, r := range k {
		if r < 0x80 && validKey(string(r)) {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	base := b.String()
	if base == "" {
		base = "_"
	}
	base = base[:min(len(base), maxKeyLen)]
	safe := base
	for n := 2; taken[safe]; n++ {
		suffix := "_" + strconv.Itoa(n)
		safe = base[:min(len(base), maxKeyLen-len(suffix))] + suffix
	}
	return safe
}

// Renamed is the warning of the parameters of schema that SafeKeys would
// name anew, or "".
func Renamed(schema json.RawMessage) string {
	if _, names := SafeKeys(schema); names != nil {
		return renameWarning(names)
	}
	return ""
}

// renameWarning says which parameters a definition names anew.
func renameWarning(names map[string]string) string {
	safe := slices.Sorted(maps.Keys(names))
	parts := make([]string, len(safe))
	for i, s := range safe {
		parts[i] = fmt.Sprintf("%s as %q", redact.Echo(redact.Clip(names[s], maxNoteAt, "…")), s)
	}
	return "parameters Anthropic refuses the names of are named anew (argument_names maps them back; a call must use the tool's own): " + firstOf(parts, ", ")
}
