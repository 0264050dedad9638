package mcpserver

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/toolsearch/toolsearch/pkg/internal/schemare"
)

// bomb is a schema of n definitions, each two branches to the next: the
// validator visits 2^n of them for one value that fails the last.
func bomb(n int) string {
	var defs []string
	for i := range n {
		next := fmt.Sprintf(`{"$ref":"#/$defs/a%d"}`, i+1)
		defs = append(defs, fmt.Sprintf(`"a%d":{"anyOf":[%s,{"allOf":[%s]}]}`, i, next, next))
	}
	defs = append(defs, fmt.Sprintf(`"a%d":{"type":"string"}`, n))
	return `{"type":"object","$defs":{` + strings.Join(defs, ",") + `},"properties":{"x":{"$ref":"#/$defs/a0"}}}`
}

// patterns is a schema of n string parameters p0, p1, ..., each with
// pattern p (written as JSON).
func patterns(n int, p string) string {
	props := make([]string, n)
	for i := range props {
		props[i] = fmt.Sprintf(`"p%d":{"type":"string","pattern":"%s"}`, i, p)
	}
	return `{"type":"object","properties":{` + strings.Join(props, ",") + `}}`
}

// TestValidateBounded: arguments are checked against an upstream's schema
// when checking it costs what a real schema does, and passed to the
// upstream unchecked when the schema would make checking them explode.
func TestValidateBounded(t *testing.T) {
	tree := `{"type":"object","$defs":{"node":{"type":"object","properties":{"name":{"type":"string"},"children":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["name"]}},"properties":{"root":{"$ref":"#/$defs/node"}}}`
	tests := []struct {
		name, schema, args string
		wantErr            bool
	}{
		{"plain, valid", `{"type":"object","properties":{"n":{"type":"number"}}}`, `{"n":1}`, false},
		{"plain, invalid", `{"type":"object","properties":{"n":{"type":"number"}}}`, `{"n":"one"}`, true},
		{"nullable anyOf, invalid", `{"type":"object","properties":{"n":{"anyOf":[{"type":"number"},{"type":"null"}]}}}`, `{"n":"one"}`, true},
		{"recursive tree, valid", tree, `{"root":{"name":"a","children":[{"name":"b","children":[{"name":"c"}]}]}}`, false},
		{"recursive tree, invalid deep down", tree, `{"root":{"name":"a","children":[{"name":"b","children":[{"children":[]}]}]}}`, true},
		{"a few branches to the next, invalid", bomb(6), `{"x":1}`, true},
		{"branches doubling past the bound: unchecked", bomb(24), `{"x":1}`, false},
		{"a $ref to an anchor: unchecked", `{"type":"object","$defs":{"s":{"$anchor":"s","type":"string"}},"properties":{"x":{"$ref":"#s"}}}`, `{"x":1}`, false},
		{"a $ref into itself on one value: unchecked", `{"type":"object","$defs":{"a":{"anyOf":[{"$ref":"#/$defs/a"}]}},"properties":{"x":{"$ref":"#/$defs/a"}}}`, `{"x":1}`, false},
		// Resolving compiles every pattern first: past the budget
		// (package schemare) the patterns are not compiled at all.
		{"a pattern, invalid", patterns(1, `^[a-z]{2,8}$`), `{"p0":"X"}`, true},
		{"patterns within the budget, invalid", patterns(schemare.MaxPatterns, `^[a-z]{2,8}$`), `{"p0":"X"}`, true},
		{"more patterns than the budget: unchecked", patterns(schemare.MaxPatterns+1, `^[a-z]{2,8}$`), `{"p0":"X"}`, false},
		{"a pattern of 5,000 instructions twice: unchecked", patterns(2, `(\\w+\\s*){1,1000}`), `{"p0":"?"}`, false},
		{"a lookahead: unchecked", patterns(1, `^(?=a)b$`), `{"p0":"X"}`, false},
	}
	for _, tt := range tests {
		err := new(schemaCache).validate("", json.RawMessage(tt.schema), json.RawMessage(tt.args))
		if (err != nil) != tt.wantErr {
			t.Errorf("%s: validate = %v, want an error: %v", tt.name, err, tt.wantErr)
		}
	}
}

// TestValidateInWords: an upstream tool's argument whose own value its
// schema refuses is told what it must be, as a meta-tool's is; where the
// schema names no one type, or the problem is inside the value, the
// validator's own words stand.
func TestValidateInWords(t *testing.T) {
	for _, tt := range []struct {
		name, schema, args, want string
	}{
		{"a type", `{"type":"object","properties":{"n":{"type":"number"}}}`, `{"n":"one"}`, `argument "n" must be a number, got "one"`},
		{"a range", `{"type":"object","properties":{"n":{"type":"integer","minimum":1,"maximum":9}}}`, `{"n":12}`, `argument "n" must be an integer from 1 to 9, got 12`},
		{"an enum", `{"type":"object","properties":{"state":{"type":"string","enum":["open","closed"]}}}`, `{"state":"done"}`, `argument "state" must be one of "open", "closed", got "done"`},
		{"an array's items", `{"type":"object","properties":{"labels":{"type":"array","items":{"type":"string"}}}}`, `{"labels":"bug"}`, `argument "labels" must be an array of strings, got "bug"`},
		{"a union", `{"type":"object","properties":{"n":{"type":["string","number"]}}}`, `{"n":true}`, `validating /properties/n`},
		{"nullable anyOf", `{"type":"object","properties":{"n":{"anyOf":[{"type":"number"},{"type":"null"}]}}}`, `{"n":"one"}`, `validating /properties/n`},
		{"a $ref", `{"type":"object","$defs":{"s":{"type":"string"}},"properties":{"x":{"$ref":"#/$defs/s"}}}`, `{"x":1}`, `validating /properties/x`},
		{"inside the value", `{"type":"object","properties":{"o":{"type":"object","properties":{"k":{"type":"string"}}}}}`, `{"o":{"k":1}}`, `argument "o.k" must be a string, got 1`},
		{"two faults, one message", `{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`, `{"a":"two"}`, `argument "a" must be a number, got "two"; argument "b" is required`},
		{"at most three", `{"type":"object","properties":{"a":{"type":"array","items":{"type":"string"}}}}`, `{"a":[1,2,3,4]}`, `argument "a[0]" must be a string, got 1; argument "a[1]" must be a string, got 2; argument "a[2]" must be a string, got 3`},
		{"an array's item", githubIssue, `{"owner":"a","repo":"b","title":"c","labels":["x",5]}`, `argument "labels[1]" must be a string, got 5`},
		{"an item", `{"type":"object","properties":{"ids":{"type":"array","items":{"type":"integer","minimum":1}}}}`, `{"ids":[3,1,0]}`, `argument "ids[2]" must be an integer of at least 1, got 0`},
		{"an item's property", `{"type":"object","properties":{"rows":{"type":"array","items":{"type":"object","properties":{"state":{"enum":["open","closed"]}}}}}}`, `{"rows":[{"state":"open"},{"state":"done"}]}`, `argument "rows[1].state" must be one of "open", "closed", got "done"`},
		{"required", `{"type":"object","properties":{"owner":{"type":"string"}},"required":["owner"]}`, `{}`, `argument "owner" is required`},
		{"required inside", `{"type":"object","properties":{"o":{"type":"object","required":["k"]}}}`, `{"o":{}}`, `argument "o.k" is required`},
		{"a closed object", `{"type":"object","properties":{"o":{"type":"object","properties":{"name":{},"size":{}},"additionalProperties":false}}}`, `{"o":{"nmae":"x"}}`, `argument key "nmae" in o is unknown (did you mean "name"?)`},
		{"a closed object, no near key", `{"type":"object","properties":{"o":{"type":"object","properties":{"name":{},"size":{}},"additionalProperties":false}}}`, `{"o":{"colour":"x"}}`, `argument key "colour" in o is unknown; it takes name, size`},
		{"several unknown keys, one fault", `{"type":"object","properties":{"o":{"type":"object","properties":{"a":{}},"additionalProperties":false}}}`, `{"o":{"a":1,"x":1,"y":2,"z":3,"w":4}}`, `argument keys "w", "x", "y" and 1 more in o are unknown; it takes a`},
		{"a minimum length", `{"type":"object","properties":{"s":{"type":"string","minLength":1}}}`, `{"s":""}`, `argument "s" must be a string of at least 1 character, got ""`},
		{"an item count", `{"type":"object","properties":{"a":{"type":"array","minItems":2,"maxItems":3}}}`, `{"a":[1]}`, `argument "a" must be an array of 2 to 3 items, got [1]`},
		{"nullable", `{"type":"object","properties":{"n":{"type":["integer","null"]}}}`, `{"n":"x"}`, `argument "n" must be an integer, got "x"`},
		{"a union inside", `{"type":"object","properties":{"o":{"type":"object","properties":{"k":{"type":["string","number"]}}}}}`, `{"o":{"k":true}}`, `validating /properties/o/properties/k`},
		{"a pattern", `{"type":"object","properties":{"s":{"type":"string","pattern":"^[a-z]+$"}}}`, `{"s":"ABC"}`, `validating /properties/s`},
		{"a tuple", `{"type":"object","properties":{"t":{"type":"array","prefixItems":[{"type":"string"}],"items":{"type":"number"}}}}`, `{"t":["a","b"]}`, `validating /properties/t`},
		{"open to other keys", `{"type":"object","properties":{"o":{"type":"object","properties":{"a":{}},"patternProperties":{"^x":{}},"additionalProperties":false}}}`, `{"o":{"b":1}}`, `validating /properties/o`},
	} {
		err := new(schemaCache).validate("", json.RawMessage(tt.schema), json.RawMessage(tt.args))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: validate = %v, want an error with %q", tt.name, err, tt.want)
		}
	}
	err := new(schemaCache).validate("", json.RawMessage(`{"type":"object","properties":{"a":{"type":"array","items":{"type":"string"}}}}`), json.RawMessage(`{"a":[1,2,3,4,5]}`))
	if err == nil || strings.Count(err.Error(), "must be") != maxFaults {
		t.Errorf("five faults: %v, want %d named", err, maxFaults)
	}
}

// FuzzArgWords: what argWords reports is a real fault (the validator
// refuses the same arguments), it never panics, and its message is
// bounded whatever the schema and arguments hold.
func FuzzArgWords(f *testing.F) {
	f.Add(`{"type":"object","properties":{"o":{"type":"object","properties":{"k":{"type":"string"}}}}}`, `{"o":{"k":1}}`)
	f.Add(`{"type":"object","properties":{"rows":{"type":"array","items":{"type":"object","required":["id"],"properties":{"state":{"enum":["open",null,1]}},"additionalProperties":false}}}}`, `{"rows":[{"id":1,"state":null},{"state":"done","x":1}]}`)
	f.Add(`{"type":"object","properties":{"n":{"type":["integer","null"],"minimum":1,"maximum":9}}}`, `{"n":1.0}`)
	f.Add(`{"type":"object","properties":{"s":{"type":"string","minLength":2,"maxLength":3},"a":{"type":"array","maxItems":1,"items":{"$ref":"#"}}}}`, `{"s":"é","a":[{},{}]}`)
	f.Add(`{"type":"object","properties":{"t":{"prefixItems":[{"type":"string"}],"items":{"type":"number"}}},"patternProperties":{"^x":{}},"additionalProperties":false}`, `{"t":["a",1],"xa":2,"b":3}`)
	f.Fuzz(func(t *testing.T, schema, args string) {
		var sch jsonschema.Schema
		var instance any
		if json.Unmarshal([]byte(schema), &sch) != nil || json.Unmarshal([]byte(args), &instance) != nil {
			return
		}
		resolved, err := sch.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: false})
		if err != nil {
			return
		}
		msg := argWords(resolved.Schema(), json.RawMessage(args))
		if msg == "" {
			return
		}
		if len(msg) > 4096 {
			t.Errorf("a message of %d bytes", len(msg))
		}
		if resolved.Validate(instance) == nil {
			t.Errorf("argWords reports %q of arguments the schema accepts", msg)
		}
	})
}

// FuzzBoundedValidation: the walk ends, within its bound, on any schema
// and arguments.
func FuzzBoundedValidation(f *testing.F) {
	f.Add(bomb(8), `{"x":1}`)
	f.Add(`{"type":"object","properties":{"n":{"type":"number"}},"patternProperties":{"^a":{"type":"string"}},"additionalProperties":false}`, `{"n":1,"ab":"x","z":[1,2]}`)
	f.Add(`{"items":[{"type":"string"}],"prefixItems":[true],"contains":{"$ref":"#"}}`, `[1,[2,[3]]]`)
	f.Add(`{"$defs":{"a":{"not":{"$ref":"#/$defs/a"}}},"$ref":"#/$defs/a"}`, `{}`)
	f.Fuzz(func(t *testing.T, schema, args string) {
		var s, v any
		if json.Unmarshal([]byte(schema), &s) != nil || json.Unmarshal([]byte(args), &v) != nil {
			return
		}
		w := walker{root: s, left: maxValidationVisits}
		w.visit(s, v, 0)
		if w.left < -1 {
			t.Fatalf("the walk went on past its bound: %d left", w.left)
		}
	})
}

// githubIssue is a schema like the GitHub server's create_issue's.
const githubIssue = `{"type":"object","properties":{"owner":{"type":"string","description":"Repository owner"},"repo":{"type":"string","description":"Repository name"},"title":{"type":"string","description":"Issue title"},"body":{"type":"string","description":"Issue body content"},"assignees":{"type":"array","items":{"type":"string"},"description":"Usernames to assign to this issue"},"labels":{"type":"array","items":{"type":"string"},"description":"Labels to apply to this issue"},"milestone":{"type":"number","description":"Milestone number"}},"required":["owner","repo","title"]}`

// BenchmarkValidate checks a call's arguments against a schema of seven
// properties: compiled for each call (the schema's first call, and each
// call before the cache), and kept; and reports what a kept schema holds
// per byte of its JSON (retained/byte), which maxSchemaCacheBytes assumes.
func BenchmarkValidate(b *testing.B) {
	schema, args := json.RawMessage(githubIssue), json.RawMessage(`{"owner":"a","repo":"b","title":"c","labels":["x","y"]}`)
	b.Run("compiled", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := new(schemaCache).validate("", schema, args); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("kept", func(b *testing.B) {
		var c schemaCache
		b.ReportAllocs()
		for b.Loop() {
			if err := c.validate("", schema, args); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("retained", func(b *testing.B) {
		const n = 200
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		kept := make([]*compiledSchema, n)
		for i := range kept {
			kept[i] = compileSchema(schema)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(kept)
		for b.Loop() {
		}
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(n*len(schema)), "retained/byte")
	})
}

// TestSchemaCache: a kept schema answers as a fresh one, for each of
// many schemas called at once (run under -race), the cache keeps its
// bound, however many schemas pass through it, and each API key its own
// entries.
func TestSchemaCache(t *testing.T) {
	var c schemaCache
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 400 {
				// Distinct schemas, each rejecting what the others allow.
				schema := json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{"n%d":{"type":"number","maximum":%d}},"required":["n%d"]}`, i%300, i, i%300))
				ok := json.RawMessage(fmt.Sprintf(`{"n%d":%d}`, i%300, i))
				bad := json.RawMessage(fmt.Sprintf(`{"n%d":%d}`, i%300, i+1+g))
				tenant := fmt.Sprint("key", g%2)
				if err := c.validate(tenant, schema, ok); err != nil {
					t.Errorf("schema %d: %v", i, err)
				}
				if c.validate(tenant, schema, bad) == nil {
					t.Errorf("schema %d: %s allowed", i, bad)
				}
			}
		})
	}
	wg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bytes > maxSchemaCacheBytes || c.lru.Len() == 0 {
		t.Errorf("cache holds %d schemas costing %d, over %d", c.lru.Len(), c.bytes, maxSchemaCacheBytes)
	}
	sum := 0
	for _, s := range c.lru.Values() {
		sum += s.cost()
	}
	if sum != c.bytes {
		t.Errorf("cache counts %d bytes, holds %d", c.bytes, sum)
	}
	// Two keys calling tools of one schema each keep their own.
	var apart schemaCache
	for _, tenant := range []string{"key-a", "key-b", "key-a"} {
		if err := apart.validate(tenant, json.RawMessage(githubIssue), json.RawMessage(`{"owner":"a","repo":"b","title":"c"}`)); err != nil {
			t.Fatal(err)
		}
	}
	if n := apart.lru.Len(); n != 2 {
		t.Errorf("two keys, one schema: %d kept, want one each", n)
	}
}
