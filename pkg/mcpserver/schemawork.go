package mcpserver

import (
	"strings"

	"github.com/toolsearch/toolsearch/pkg/catalog"
)

// maxValidationVisits bounds the (schema, value) pairs checking a call's
// arguments may visit. The validator expands $refs and tries every branch
// of anyOf, oneOf and allOf without memory of what it tried, so an
// upstream's 1.7 KB schema of 22 definitions, each two branches to the
// next, took 66 s of CPU to check one argument: 2^22 visits. Real
// schemas and arguments visit a few hundred.
const maxValidationVisits = 20_000

// boundedValidation reports whether checking instance against schema
// stays within maxValidationVisits. It walks both as the validator would,
// counting every pair, every branch of a combinator and every subschema
// that could apply to a child (patternProperties included, unmatched), so
// the count is at least the validator's. A schema whose $refs it cannot
// follow as local JSON pointers (anchors, relative to a nested $id, or
// dynamic) is not bounded: its references are the upstream's to check.
func boundedValidation(schema, instance any) bool {
	w := walker{root: schema, left: maxValidationVisits}
	if hasUnboundedRefs(schema, 0) {
		return false
	}
	w.visit(schema, instance, 0)
	return w.left >= 0
}

// maxWalkDepth stops a walk that follows $refs without end on one value
// (a = {"anyOf":[{"$ref":"#/$defs/a"}]}) or an argument nested deeper
// than any tool needs.
const maxWalkDepth = 256

type walker struct {
	root any
	left int
}

func (w *walker) visit(s, v any, depth int) {
	if w.left < 0 {
		return
	}
	w.left--
	if depth > maxWalkDepth {
		w.left = -1
		return
	}
	m, ok := s.(map[string]any)
	if !ok {
		return // true, false, or not a schema
	}
	// Subschemas for the same value.
	if ref, ok := m["$ref"].(string); ok {
		w.visit(catalog.ResolvePointer(w.root, ref), v, depth+1)
	}
	for _, k := range [...]string{"anyOf", "oneOf", "allOf"} {
		subs, _ := m[k].([]any)
		for _, sub := range subs {
			w.visit(sub, v, depth+1)
		}
	}
	for _, k := range [...]string{"not", "if", "then", "else"} {
		if sub, ok := m[k]; ok {
			w.visit(sub, v, depth+1)
		}
	}
	deps, _ := m["dependentSchemas"].(map[string]any)
	for _, sub := range deps {
		w.visit(sub, v, depth+1)
	}
	// Subschemas for the value's children.
	switch x := v.(type) {
	case map[string]any:
		props, _ := m["properties"].(map[string]any)
		patterns, _ := m["patternProperties"].(map[string]any)
		for name, child := range x {
			if sub, ok := props[name]; ok {
				w.visit(sub, child, depth+1)
			}
			for _, sub := range patterns {
				w.visit(sub, child, depth+1)
			}
			for _, k := range [...]string{"additionalProperties", "unevaluatedProperties"} {
				if sub, ok := m[k]; ok {
					w.visit(sub, child, depth+1)
				}
			}
			if sub, ok := m["propertyNames"]; ok {
				w.visit(sub, name, depth+1)
			}
		}
	case []any:
		prefix, _ := m["prefixItems"].([]any)
		for i, child := range x {
			if i < len(prefix) {
				w.visit(prefix[i], child, depth+1)
			}
			switch items := m["items"].(type) {
			case []any: // draft 2019 and before: one schema a position
				if i < len(items) {
					w.visit(items[i], child, depth+1)
				}
			case nil:
			default:
				w.visit(items, child, depth+1)
			}
			for _, k := range [...]string{"additionalItems", "contains", "unevaluatedItems"} {
				if sub, ok := m[k]; ok {
					w.visit(sub, child, depth+1)
				}
			}
		}
	}
}

// hasUnboundedRefs reports whether s refers in a way the walk cannot
// follow: a $ref that is not a local JSON pointer, a $dynamicRef, or a
// nested $id (which moves where its own pointers lead).
func hasUnboundedRefs(s any, depth int) bool {
	switch x := s.(type) {
	case map[string]any:
		for k, v := range x {
			switch k {
			case "$dynamicRef", "$recursiveRef":
				return true
			case "$id":
				if depth > 0 {
					return true
				}
			case "$ref":
				if ref, _ := v.(string); ref != "#" && !strings.HasPrefix(ref, "#/") {
					return true
				}
			}
			if hasUnboundedRefs(v, depth+1) {
				return true
			}
		}
	case []any:
		for _, v := range x {
			if hasUnboundedRefs(v, depth+1) {
				return true
			}
		}
	}
	return false
}
