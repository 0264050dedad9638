// Package yamljson turns a YAML document into JSON under YAML 1.2's core
// schema, where only true and false are booleans. Under YAML 1.1, which
// most Go YAML-to-JSON converters follow, y, n, yes, no, on and off are
// booleans too: a tool parameter named "y" became "true", and an enum of
// [on, off] became [true, false], silently. Catalogs, configs and eval
// cases are decoded through here, then strictly as JSON.
package yamljson

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
	"go.yaml.in/yaml/v3"
)

// ToJSON converts the first YAML document in data to JSON. Duplicate keys
// are an error, as the YAML specification says. A timestamp-like scalar
// (2024-01-31) stays the string it was written as.
func ToJSON(data []byte) ([]byte, error) {
	var n yaml.Node
	if err := yaml.Unmarshal(data, &n); err != nil {
		return nil, err
	}
	keepTimestamps(&n)
	var doc any
	if err := n.Decode(&doc); err != nil {
		return nil, err
	}
	v, err := jsonable(doc)
	if err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// keepTimestamps retags plain timestamp-like scalars as strings, which
// would otherwise decode to time.Time and come out reformatted.
func keepTimestamps(n *yaml.Node) {
	if n.Kind == yaml.ScalarNode && n.Style == 0 && n.ShortTag() == "!!timestamp" {
		n.Tag = "!!str"
	}
	for _, c := range n.Content {
		keepTimestamps(c)
	}
}

// jsonable replaces what JSON cannot hold: maps with non-string keys get
// their keys spelled as YAML wrote them, and non-finite numbers are an
// error.
func jsonable(v any) (any, error) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			y, err := jsonable(x)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			v[k] = y
		}
		return v, nil
	case map[any]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			key, err := keyString(k)
			if err != nil {
				return nil, err
			}
			out[key] = x
		}
		return jsonable(out)
	case []any:
		for i, x := range v {
			y, err := jsonable(x)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			v[i] = y
		}
		return v, nil
	case float64:
		if math.IsInf(v, 0) || math.IsNaN(v) {
			return nil, fmt.Errorf("%v is not a JSON number", v)
		}
	}
	return v, nil
}

func keyString(k any) (string, error) {
	switch k := k.(type) {
	case string:
		return k, nil
	case int:
		return strconv.Itoa(k), nil
	case int64:
		return strconv.FormatInt(k, 10), nil
	case uint64:
		return strconv.FormatUint(k, 10), nil
	case float64:
		return strconv.FormatFloat(k, 'g', -1, 64), nil
	case bool:
		return strconv.FormatBool(k), nil
	}
	return "", fmt.Errorf("map key %v (%T) cannot be a JSON object key", k, k)
}

// Locate is the line and column in data, a YAML document, of the value
// that ptr (a JSON Pointer into ToJSON's output) names; of its key, for an
// object member, since that is where the member starts. ToJSON sorts
// keys, so its JSON's own positions say nothing of the YAML's. ok is
// false when ptr names nothing there: a key that came from a merge
// (<<), or data that does not parse.
func Locate(data []byte, ptr jsontext.Pointer) (line, col int, ok bool) {
	var n yaml.Node
	if !ptr.IsValid() || yaml.Unmarshal(data, &n) != nil {
		return 0, 0, false
	}
	keepTimestamps(&n) // keys decode as ToJSON decoded them
	at := &n
	if at.Kind == yaml.DocumentNode {
		if len(at.Content) == 0 {
			return 0, 0, false
		}
		at = at.Content[0]
	}
	line, col = at.Line, at.Column
	for tok := range ptr.Tokens() {
		for at.Kind == yaml.AliasNode {
			at = at.Alias
		}
		var found *yaml.Node
		switch at.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(at.Content) && found == nil; i += 2 {
				var k any
				if at.Content[i].Decode(&k) != nil {
					continue
				}
				if s, err := keyString(k); err == nil && s == tok {
					found, line, col = at.Content[i+1], at.Content[i].Line, at.Content[i].Column
				}
			}
		case yaml.SequenceNode:
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(at.Content) {
				found = at.Content[i]
				line, col = found.Line, found.Column
			}
		}
		if found == nil {
			return 0, 0, false
		}
		at = found
	}
	return line, col, true
}
