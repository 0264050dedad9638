package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/toolsearch/toolsearch/pkg/jsonkeys"
	"github.com/toolsearch/toolsearch/pkg/redact"
)

// argSchemas are the meta-tools' input schemas, by name, as registered:
// what a bad argument is told it must be. Built on first use, once.
var argSchemas = sync.OnceValue(func() map[string]*jsonschema.Schema {
	return map[string]*jsonschema.Schema{"search_tools": searchSchema(), "search_tools_regex": regexSchema(),
		"get_tool_schema": strict[getSchemaIn](), "list_servers": listServersSchema()}
})

// badArg rewrites the SDK's schema error text for the meta-tool named
// in words (argWords), or is "" for any other error, or one argWords
// cannot say.
func badArg(name, text string, args json.RawMessage) string {
	if !strings.Contains(text, "validating ") { // the tool's own error, not the schema's
		return ""
	}
	if p := argWords(argSchemas()[name], args); p != "" {
		return name + ": " + p
	}
	return ""
}

// Bounds on argWords' walk: arguments are the caller's and schemas an
// upstream's, so neither may make an error message costly to find.
const (
	maxWordsDepth = 16
	maxWordsWork  = 4096 // values visited and enum members compared
	maxFaults     = 3    // named in one message: a model mends them in one call, not three
)

// argWords finds in args, which failed schema sch, the values that break
// a rule of sch that can be said in words (up to maxFaults), and says
// what each must be and what came, with its path: `argument
// "messages[0].role" must be one of "user", "assistant", "system", "tool", got
// "developer"; argument "messages[0].content" is required`. It reads
// only type, enum, numeric and length bounds, required and closed
// objects, and the properties and items beneath them, each of which
// holds whatever else the schema says, so what it reports is always a
// real fault, if not always the one the validator met first. "" when it
// finds none (the fault is in a $ref, a union, a pattern, a format...):
// then the validator's words stand.
func argWords(sch *jsonschema.Schema, args json.RawMessage) string {
	if sch == nil {
		return ""
	}
	w := wordsWalk{left: maxWordsWork}
	w.value(sch, args, "", 0)
	return strings.Join(w.faults, "; ")
}

type wordsWalk struct {
	left   int
	faults []string
}

// fault records one; it reports whether the walk has found enough.
func (w *wordsWalk) fault(format string, args ...any) bool {
	w.faults = append(w.faults, fmt.Sprintf(format, args...))
	return w.done()
}

func (w *wordsWalk) done() bool { return len(w.faults) >= maxFaults || w.left < 0 }

// value records the faults found in raw, at path, against sch; it
// reports whether the walk is done.
func (w *wordsWalk) value(sch *jsonschema.Schema, raw json.RawMessage, path string, depth int) bool {
	w.left--
	if sch == nil || w.done() || depth > maxWordsDepth {
		return w.done()
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return false
	}
	var items []json.RawMessage // an array's, read once for its count and its walk
	if raw[0] == '[' && json.Unmarshal(raw, &items) != nil {
		return false
	}
	if what := mustBe(sch); what != "" && !w.holds(sch, raw, len(items)) {
		got := redact.Clip(string(raw), redact.MaxEcho, "…")
		if path == "" {
			// The SDK's words were Go's: cannot unmarshal "[1]" into Go
			// value of type map[string]interface {}.
			return w.fault("\"arguments\" must be %s, got %s", what, got)
		}
		return w.fault("argument %q must be %s, got %s", path, what, got)
	}
	switch raw[0] {
	case '{':
		return w.object(sch, raw, path, depth)
	case '[':
		if sch.Items == nil || len(sch.PrefixItems) > 0 || len(sch.ItemsArray) > 0 {
			return false // a tuple: which schema an item meets is not items'
		}
		for i, it := range items {
			if w.value(sch.Items, it, fmt.Sprintf("%s[%d]", path, i), depth+1) {
				return true
			}
		}
	}
	return false
}

// object records the faults found in an object's keys and properties.
func (w *wordsWalk) object(sch *jsonschema.Schema, raw json.RawMessage, path string, depth int) bool {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return false
	}
	keys := slices.Sorted(maps.Keys(obj))
	if closed(sch) {
		var unknown []string
		for _, k := range keys {
			if _, ok := sch.Properties[k]; !ok {
				unknown = append(unknown, k)
			}
		}
		if len(unknown) > 0 && w.unknownKeys(unknown, sch, path) {
			return true
		}
	}
	for _, k := range keys {
		if w.value(sch.Properties[k], obj[k], member(path, k), depth+1) {
			return true
		}
	}
	for _, k := range sch.Required {
		if _, ok := obj[k]; !ok && w.fault("argument %q is required", member(path, k)) {
			return true
		}
	}
	return false
}

// maxKeysNamed bounds the unknown keys of one object a fault names.
const maxKeysNamed = 3

// unknownKeys records one fault for the keys of the object at path that
// sch does not take: the one it nearly spells for a single key, else the
// first few and how many more, then the keys it takes.
func (w *wordsWalk) unknownKeys(unknown []string, sch *jsonschema.Schema, path string) bool {
	if len(unknown) == 1 {
		e := jsonkeys.Unknown(unknown[0], propertyNames(sch))
		e.Path = path
		return w.fault("argument %s", e)
	}
	named := make([]string, 0, maxKeysNamed)
	for _, k := range unknown[:min(len(unknown), maxKeysNamed)] {
		named = append(named, redact.Echo(k))
	}
	more := ""
	if n := len(unknown) - len(named); n > 0 {
		more = fmt.Sprintf(" and %d more", n)
	}
	where := ""
	if path != "" {
		where = " in " + path
	}
	takes := (&jsonkeys.Error{Allowed: propertyNames(sch)}).Takes()
	return w.fault("argument keys %s%s%s are unknown%s", strings.Join(named, ", "), more, where, takes)
}

// propertyNames are sch's properties in the order it declares them, where
// it does (a schema inferred from a Go struct), else sorted.
func propertyNames(sch *jsonschema.Schema) []string {
	if len(sch.PropertyOrder) == len(sch.Properties) {
		return sch.PropertyOrder
	}
	return slices.Sorted(maps.Keys(sch.Properties))
}

// closed reports whether sch takes no key but its properties: its
// additionalProperties is false ({"not": {}}, read as the validator reads
// it), and nothing else admits a key.
func closed(sch *jsonschema.Schema) bool {
	ap := sch.AdditionalProperties
	return ap != nil && ap.Not != nil && reflect.ValueOf(*ap.Not).IsZero() && len(sch.PatternProperties) == 0 && sch.UnevaluatedProperties == nil
}

// member is the path of key k of the object at path: a.b, or k at the top.
func member(path, k string) string {
	k = redact.Clip(k, redact.MaxEcho, "…")
	if path == "" {
		return k
	}
	return path + "." + k
}

// holds reports whether raw (of n items, if an array) keeps what
// mustBe(sch) says of it: its type, its enum, its range and its lengths.
// An answer it cannot be sure of is true: argWords only reports what is
// certainly a fault.
func (w *wordsWalk) holds(sch *jsonschema.Schema, raw json.RawMessage, n int) bool {
	kind := jsonKind(raw)
	if typ, null := soleType(sch); typ != "" && !(null && kind == "null") && !isType(raw, kind, typ) {
		return false
	}
	if len(sch.Enum) > 0 && (kind == "string" || kind == "boolean" || kind == "null") {
		var v any
		if json.Unmarshal(raw, &v) != nil {
			return true
		}
		w.left -= len(sch.Enum)
		if !slices.Contains(sch.Enum, v) {
			return w.left < 0 // out of budget: not sure
		}
	}
	switch kind {
	case "number":
		f, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return true
		}
		if (sch.Minimum != nil && f < *sch.Minimum) || (sch.Maximum != nil && f > *sch.Maximum) {
			return false
		}
	case "string":
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return true
		}
		n := utf8.RuneCountInString(s)
		if (sch.MinLength != nil && n < *sch.MinLength) || (sch.MaxLength != nil && n > *sch.MaxLength) {
			return false
		}
	case "array":
		if (sch.MinItems != nil && n < *sch.MinItems) || (sch.MaxItems != nil && n > *sch.MaxItems) {
			return false
		}
	}
	return true
}

// soleType is the one type sch names, and whether it also admits null;
// "" for none or a union of two or more.
func soleType(sch *jsonschema.Schema) (typ string, null bool) {
	typ = sch.Type
	for _, t := range sch.Types {
		switch {
		case t == "null":
			null = true
		case typ != "":
			return "", false
		default:
			typ = t
		}
	}
	return typ, null
}

// jsonKind is the JSON type of raw, valid JSON without leading space.
func jsonKind(raw json.RawMessage) string {
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// isType reports whether raw, of JSON type kind, is of JSON Schema type
// typ; an integer is any number without a fraction, as the validator has it.
func isType(raw json.RawMessage, kind, typ string) bool {
	switch typ {
	case "integer":
		if kind != "number" {
			return false
		}
		f, err := strconv.ParseFloat(string(raw), 64)
		return err != nil || f == math.Trunc(f) // not sure: holds
	case "number":
		return kind == "number"
	}
	return kind == typ
}

// mustBe says in words what a value of schema sch is: its type, its
// allowed values or range, its bounds; "" for a schema that names no one
// type (a $ref, a union).
func mustBe(sch *jsonschema.Schema) string {
	if len(sch.Enum) > 0 {
		vals := make([]string, len(sch.Enum))
		for i, v := range sch.Enum {
			b, _ := json.Marshal(v)
			vals[i] = string(b)
		}
		return "one of " + strings.Join(vals, ", ")
	}
	typ, _ := soleType(sch)
	out := map[string]string{"integer": "an integer", "number": "a number", "string": "a string",
		"boolean": "true or false", "array": "an array", "object": "an object"}[typ]
	if out == "" {
		return ""
	}
	if typ == "array" && sch.Items != nil && sch.Items.Type != "" {
		out += " of " + sch.Items.Type + "s"
	}
	out += bounds(sch.Minimum, sch.Maximum, "")
	out += bounds(intf(sch.MinLength), intf(sch.MaxLength), "character")
	out += bounds(intf(sch.MinItems), intf(sch.MaxItems), "item")
	return out
}

// bounds is the phrase for the bounds set of lo and hi, in unit (none
// for a number's range), with a leading space; "" for none.
func bounds(lo, hi *float64, unit string) string {
	of := func(n float64) string {
		if unit == "" {
			return fmt.Sprintf("%g", n)
		}
		if n == 1 {
			return "1 " + unit
		}
		return fmt.Sprintf("%g %ss", n, unit)
	}
	switch {
	case lo != nil && hi != nil && unit == "":
		return fmt.Sprintf(" from %g to %g", *lo, *hi)
	case lo != nil && hi != nil:
		return fmt.Sprintf(" of %g to %s", *lo, of(*hi))
	case lo != nil:
		return " of at least " + of(*lo)
	case hi != nil:
		return " of at most " + of(*hi)
	}
	return ""
}

func intf(n *int) *float64 {
	if n == nil {
		return nil
	}
	f := float64(*n)
	return &f
}
