package hints

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/pkg/catalog"
)

func TestOf(t *testing.T) {
	tests := []struct {
		name, desc, schema, ann string
		readOnly, destructive   bool
		inferred                []string
		annotations             string
	}{
		{name: "list_issues", readOnly: true, inferred: []string{ReadOnly}, annotations: `{"readOnlyHint":true}`},
		{name: "deleteRepository", destructive: true, inferred: []string{ReadOnly, Destructive, Idempotent},
			annotations: `{"destructiveHint":true,"idempotentHint":true,"readOnlyHint":false}`},
		{name: "create_issue", inferred: []string{ReadOnly, Destructive, Idempotent}},
		{name: "update-page", destructive: true, inferred: []string{ReadOnly, Destructive}},
		// A destructive verb anywhere in the name wins over a leading read verb.
		{name: "get_and_delete_message", destructive: true, inferred: []string{ReadOnly, Destructive, Idempotent}},
		// A read verb is not trusted when the description names a change.
		{name: "fetch_queue", desc: "Fetch the next job and remove it from the queue."},
		// No verb in the name: the description's lead decides.
		{name: "API-user", desc: "Notion | Retrieve a user", readOnly: true, inferred: []string{ReadOnly}},
		{name: "widget", desc: "A widget."},
		// A character no reader sees hides no verb: a soft hyphen, a
		// zero-width space or a ligature in a name or a description's
		// lead had made "delete" two words and the tool not destructive,
		// so called without the confirmation destructive calls need.
		{name: "de\u00adlete_rows", destructive: true, inferred: []string{ReadOnly, Destructive, Idempotent},
			annotations: `{"destructiveHint":true,"idempotentHint":true,"readOnlyHint":false}`},
		{name: "rows", desc: "Re\u200bmoves every row of a table.", destructive: true, inferred: []string{ReadOnly, Destructive, Idempotent}},
		{name: "rows_\ufb01le", desc: "Over\u2060writes a \ufb01le.", destructive: true, inferred: []string{ReadOnly, Destructive}},
		// Nor does a letter of another script drawn as the Latin one
		// (Cyrillic е and о).
		{name: "d\u0435lete_rows", destructive: true, inferred: []string{ReadOnly, Destructive, Idempotent},
			annotations: `{"destructiveHint":true,"idempotentHint":true,"readOnlyHint":false}`},
		{name: "rows", desc: "Rem\u043eves every row of a table.", destructive: true, inferred: []string{ReadOnly, Destructive, Idempotent}},
		// A force switch says the tool destroys.
		{name: "push_branch", schema: `{"properties":{"force":{"type":"boolean"}}}`, destructive: true,
			inferred: []string{ReadOnly, Destructive, Idempotent}},
		{name: "fetch_page", schema: `{"properties":{"url":{"type":"string"}}}`, readOnly: true, inferred: []string{ReadOnly, OpenWorld}},
		// Declared hints are never overridden, and the declared bytes are
		// kept when nothing is inferred.
		{name: "delete_file", ann: `{"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false}`,
			readOnly: true, annotations: `{"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false}`},
		{name: "list_things", ann: `{"title":"Things","readOnlyHint":false}`, annotations: `{"title":"Things","readOnlyHint":false}`},
		{name: "remove_thing", ann: `{"title":"T"}`, destructive: true, inferred: []string{ReadOnly, Destructive, Idempotent},
			annotations: `{"destructiveHint":true,"idempotentHint":true,"readOnlyHint":false,"title":"T"}`},
		// An unreadable declared hint is still declared: not replaced.
		{name: "delete_x", ann: `{"destructiveHint":"yes"}`, inferred: []string{ReadOnly, Idempotent}},
		{name: "broken", ann: `not json`, annotations: `not json`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := Of(tc.name, tc.desc, paramsOf(tc.schema), json.RawMessage(tc.ann))
			if h.IsReadOnly() != tc.readOnly || h.IsDestructive() != tc.destructive {
				t.Errorf("read-only %v destructive %v, want %v %v", h.IsReadOnly(), h.IsDestructive(), tc.readOnly, tc.destructive)
			}
			if !slices.Equal(h.Inferred, tc.inferred) {
				t.Errorf("inferred %v, want %v", h.Inferred, tc.inferred)
			}
			if tc.annotations != "" && string(h.Annotations) != tc.annotations {
				t.Errorf("annotations %s, want %s", h.Annotations, tc.annotations)
			}
		})
	}
}

// A Table gives back, for every row and for a subset's rows, the hints Of
// made: the declared bytes, the shared ones, and those of a tool with
// hints inferred beside declared ones.
func TestHintsTable(t *testing.T) {
	tools := []struct{ name, desc, schema, ann string }{
		{name: "list_issues"},                                     // all inferred: shared annotations
		{name: "widget", desc: "A widget."},                       // nothing either way
		{name: "widget", ann: `{"title":"W"}`},                    // declared, nothing inferred
		{name: "remove_thing", ann: `{"title":"T"}`},              // declared beside inferred: its own
		{name: "delete_x", ann: `{"destructiveHint":"yes"}`},      // an unreadable one declared
		{name: "delete_y", ann: `{"readOnlyHint":false}`},         // bytes as the shared ones'
		{name: "fetch_page", schema: `{"properties":{"url":{}}}`}, // open world
		{name: "delete_file", ann: `{"readOnlyHint": true, "destructiveHint": false, "idempotentHint": true, "openWorldHint": false}`},
		{name: "broken", ann: `not json`},
		{name: "update_z", ann: `{}`},
	}
	hs := make([]Hints, len(tools))
	for i, tc := range tools {
		hs[i] = Of(tc.name, tc.desc, paramsOf(tc.schema), json.RawMessage(tc.ann))
	}
	same := func(t *testing.T, got, want Hints) {
		t.Helper()
		if got.values != want.values || !slices.Equal(got.Inferred, want.Inferred) || string(got.Annotations) != string(want.Annotations) {
			t.Errorf("got %v %v %s, want %v %v %s", got.values, got.Inferred, got.Annotations, want.values, want.Inferred, want.Annotations)
		}
	}
	tab := NewTable(hs)
	if len(tab.rows) != len(tools) {
		t.Fatalf("%d rows, want %d", len(tab.rows), len(tools))
	}
	if len(tab.merged) != 2 {
		t.Errorf("%d rows hold annotations of their own, want 2 (remove_thing, delete_x)", len(tab.merged))
	}
	for i, tc := range tools {
		t.Run(tc.name+tc.ann, func(t *testing.T) { same(t, tab.At(i, json.RawMessage(tc.ann)), hs[i]) })
	}
	rows := []int{3, 0, 9, 3}
	sub := tab.Subset(rows)
	for j, r := range rows {
		same(t, sub.At(j, json.RawMessage(tools[r].ann)), hs[r])
	}
}

func TestTableHasEachVerbOnce(t *testing.T) {
	seen := map[string]class{}
	for c, words := range table {
		for _, w := range words {
			if strings.ContainsAny(w, " _-") {
				t.Errorf("%q is not one word", w)
			}
			if prev, dup := seen[w]; dup {
				t.Errorf("%q is in classes %d and %d", w, prev, c)
			}
			seen[w] = c
		}
	}
}

// TestAgainstDeclared measures the inference against servers that declare
// every hint (evals/annotations/servers.json, from npm by fetch.sh): the
// declared annotations are hidden, inferred afresh, and compared. It fails
// on the costly mistake, a destructive tool inferred read-only; -v prints
// the per-hint table that evals/README.md quotes.
func TestAgainstDeclared(t *testing.T) {
	raw, err := os.ReadFile("../../evals/annotations/servers.json")
	if err != nil {
		t.Fatal(err)
	}
	var truth struct {
		Servers []struct {
			Name  string
			Tools []struct {
				Name, Description string
				InputSchema       json.RawMessage
				Annotations       map[string]any
			}
		}
	}
	if err := json.Unmarshal(raw, &truth); err != nil {
		t.Fatal(err)
	}
	type counts struct{ tp, fp, fn, n int }
	score := map[string]*counts{}
	for _, k := range Keys {
		score[k] = &counts{}
	}
	tally := func(k string, want, wantKnown, got bool) {
		if !wantKnown {
			return
		}
		c := score[k]
		c.n++
		switch {
		case want && got:
			c.tp++
		case got:
			c.fp++
		case want:
			c.fn++
		}
	}
	tools, costly := 0, 0
	for _, s := range truth.Servers {
		for _, tool := range s.Tools {
			tools++
			decl := func(k string) (bool, bool) { v, ok := tool.Annotations[k].(bool); return v, ok }
			ro, _ := decl(ReadOnly) // MCP's default: false
			de, ok := decl(Destructive)
			if !ok {
				de = true // MCP's default, when not read-only
			}
			de = de && !ro
			h := Of(tool.Name, tool.Description, paramsOf(string(tool.InputSchema)), nil)
			tally(ReadOnly, ro, true, h.IsReadOnly())
			tally(Destructive, de, true, h.IsDestructive())
			if id, ok := decl(Idempotent); ok && !ro {
				tally(Idempotent, id, true, h.is(2))
			}
			if ow, ok := decl(OpenWorld); ok {
				tally(OpenWorld, ow, true, h.is(3))
			}
			if testing.Verbose() && (ro != h.IsReadOnly() || de != h.IsDestructive()) {
				t.Logf("miss %s/%s: declared read-only %v destructive %v, inferred %v %v", s.Name, tool.Name, ro, de, h.IsReadOnly(), h.IsDestructive())
			}
			if de && h.IsReadOnly() {
				costly++
				t.Errorf("%s/%s is destructive and was inferred read-only", s.Name, tool.Name)
			}
		}
	}
	ratio := func(a, b int) string {
		if b == 0 {
			return "–"
		}
		return fmt.Sprintf("%.2f (%d/%d)", float64(a)/float64(b), a, b)
	}
	t.Logf("%d tools from %d servers; destructive inferred read-only: %d", tools, len(truth.Servers), costly)
	t.Logf("| hint (true) | tools judged | precision | recall |")
	for _, k := range Keys {
		c := score[k]
		t.Logf("| %s | %d | %s | %s |", k, c.n, ratio(c.tp, c.tp+c.fp), ratio(c.tp, c.tp+c.fn))
	}
}

// FuzzOf: any name, description, schema and annotations give hints
// without panicking, never override a declared boolean, name as inferred
// only hints the declared annotations lack, and write the annotations as
// encoding/json writes the declared map with the inferred hints added.
func FuzzOf(f *testing.F) {
	f.Add("delete_repo", "Delete a repository.", `{"properties":{"force":{"type":"boolean"}}}`, `{"readOnlyHint":true}`)
	f.Add("list_files", "List the files in a folder.", `{}`, ``)
	f.Add("get_page", "Fetch a web page.", `{}`, `{"title":"<Fetch>","openWorldHint":1.5}`)
	f.Fuzz(func(t *testing.T, name, desc, schema, ann string) {
		h := Of(name, desc, paramsOf(schema), json.RawMessage(ann))
		var declared map[string]any
		if json.Unmarshal([]byte(ann), &declared) != nil {
			return
		}
		for _, k := range h.Inferred {
			if _, ok := declared[k]; ok {
				t.Errorf("%s is declared in %s and was inferred", k, ann)
			}
		}
		if v, ok := declared[ReadOnly].(bool); ok && h.IsReadOnly() != v {
			t.Errorf("declared readOnlyHint %v overridden", v)
		}
		if len(h.Inferred) == 0 {
			return
		}
		merged := map[string]any{}
		for k, v := range declared {
			merged[k] = v
		}
		for _, k := range h.Inferred {
			merged[k] = h.is(slices.Index(Keys, k))
		}
		if want, _ := json.Marshal(merged); string(h.Annotations) != string(want) {
			t.Errorf("annotations %s, want %s", h.Annotations, want)
		}
	})
}

// paramsOf is a schema's top-level parameter names as the index reads them.
func paramsOf(schema string) []string {
	return catalog.Tool{Schemas: catalog.MakeSchemas(json.RawMessage(schema), nil, nil)}.Fields().ParamNames
}

// BenchmarkOf is the hints of every tool of the default catalog, as a
// build works them out for each tool it indexes.
func BenchmarkOf(b *testing.B) {
	cat, err := catalog.Default()
	if err != nil {
		b.Fatal(err)
	}
	type tool struct {
		name, description string
		params            []string
		annotations       json.RawMessage
	}
	var tools []tool
	for _, t := range cat.Tools() {
		tools = append(tools, tool{t.Name, t.Description, t.Fields().ParamNames, t.Schemas.Annotations()})
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, t := range tools {
			Of(t.name, t.description, t.params, t.annotations)
		}
	}
}
