package lint

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/embedding"
	"github.com/toolsearch/toolsearch/pkg/index"
)

func TestCheck(t *testing.T) {
	doc := `{"servers":[{"name":"s","tools":[
		{"name":"good_tool","description":"Send a message to a chat channel, optionally in a thread.","inputSchema":{"type":"object","properties":{"channel":{"type":"string","description":"Channel ID."}}}},
		{"name":"empty"},
		{"name":"short","description":"Does stuff"},
		{"name":"Has Spaces","description":"A perfectly reasonable description of this tool."},
		{"name":"params","description":"Create a ticket in the tracker for a bug.","inputSchema":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string","description":"B."}}}},
		{"name":"long","description":"` + strings.Repeat("word ", 600) + `"},
		{"name":"copy_a","description":"Remove a file from the shared drive permanently."},
		{"name":"copy_b","description":"Remove a file from the shared drive permanently."},
		{"name":"bad_required","description":"Fit a curve to points and report the residuals.","inputSchema":{"type":"object","properties":{"x":{"type":"number","description":"X."},"true":{"type":"number","description":"Y."}},"required":["x",true]}},
		{"name":"undefined_required","description":"Plot the points of a data set as a chart.","inputSchema":{"type":"object","properties":{"x":{"type":"number","description":"X."}},"required":["x","y"]}},
		{"name":"array_input","description":"Sum a list of numbers given as the whole input.","inputSchema":{"type":"array","items":{"type":"number"}}},
		{"name":"nullable_input","description":"Look up a user account by its login name.","inputSchema":{"type":["object","null"],"properties":{}}},
		{"name":"untyped_input","description":"Archive a project and all of its boards.","inputSchema":{"properties":{}}},
		{"name":"python_types","description":"Resize every image in an album to one width.","inputSchema":{"type":"object","properties":{"width":{"type":"int","description":"Pixels."}}}},
		{"name":"bare_array","description":"Delete the messages with these ids at once.","inputSchema":{"type":"object","properties":{"ids":{"type":"array","description":"Ids."}}}},
		{"name":"smuggled","description":"Add a note to the shared notebook.\udb40\udc41\udb40\udc42"},
		{"name":"dangling","description":"Resize every image in a folder at once.","inputSchema":{"type":"object","properties":{"w":{"$ref":"#/$defs/none"}}}},
		{"name":"brackets","description":"List the builds of an app in the store.","inputSchema":{"type":"object","properties":{"filter[app]":{"type":"string","description":"App."}}}},
		{"name":"bad_output","description":"Report the weather conditions in a city now.","outputSchema":{"type":"object","properties":{"t":{"type":"strin"},"sky":{"type":"string"}},"required":"t"}},
		{"name":"lookahead","description":"Set the password of an account to a new one.","inputSchema":{"type":"object","properties":{"p":{"type":"string","description":"Password.","pattern":"^(?=.*\\d).{8,}$"}}}}
	]}]}`
	p, err := catalog.Parse("t.json", []byte(doc), "")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.New([]catalog.Part{p})
	if err != nil {
		t.Fatal(err)
	}
	texts := make([]string, cat.Len())
	for i, tl := range cat.Tools() {
		// Compare descriptions, as the names differ on purpose here.
		texts[i] = tl.Description
	}
	l := embedding.NewLocal(512).Fit(texts)
	vecs, _ := l.Embed(t.Context(), texts)
	for _, v := range vecs {
		index.Normalize(v)
	}
	got := map[string]Severity{}
	for _, f := range Check(cat, vecs, Config{}) {
		got[f.Rule+" "+f.Tool] = f.Severity
	}
	want := map[string]Severity{
		"empty-description s/empty":      Error,
		"short-description s/short":      Warning,
		"name s/Has Spaces":              Warning,
		"param-description s/params":     Warning,
		"long-description s/long":        Warning,
		"duplicate s/copy_a":             Error,
		"param-description s/good_tool":  "",
		"near-duplicate s/good_tool":     "",
		"required s/bad_required":        Error,
		"required s/undefined_required":  Warning,
		"required s/good_tool":           "",
		"input-schema s/array_input":     Error,
		"input-schema s/nullable_input":  Error,
		"input-schema s/untyped_input":   Warning,
		"input-schema s/good_tool":       "",
		"input-schema s/empty":           "", // no inputSchema: no parameters
		"provider-schema s/python_types": Warning,
		"provider-schema s/bare_array":   Warning,
		"provider-schema s/good_tool":    "",
		// Named by their own rules, not again.
		"provider-schema s/untyped_input": "",
		"provider-schema s/array_input":   "",
		"provider-schema s/bad_required":  "",
		// What loading found and the tool served no longer shows.
		"hidden-text s/smuggled":         Warning,
		"schema-ref s/dangling":          Warning,
		"schema-pattern s/lookahead":     Warning,
		"schema-pattern s/good_tool":     "",
		"hidden-text s/good_tool":        "",
		"provider-names s/brackets":      Warning,
		"provider-names s/good_tool":     "",
		"openai-description s/long":      Warning, // 3,000 characters
		"openai-description s/good_tool": "",
		"output-schema s/bad_output":     Warning,
		"output-schema s/good_tool":      "",
	}
	for k, sev := range want {
		if got[k] != sev {
			t.Errorf("finding %q: severity %q, want %q (all: %v)", k, got[k], sev, got)
		}
	}
}

func TestDefaultCatalogHasNoErrors(t *testing.T) {
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range Check(cat, nil, Config{}) {
		if f.Severity == Error {
			t.Errorf("default catalog: %+v", f)
		}
	}
}

// TestAmbiguousIDs: ids that read the same, or only look the same, are
// found on each side; ids that differ as a reader sees them, or are out of
// the rows asked about, are not.
func TestAmbiguousIDs(t *testing.T) {
	cyrillicE := []catalog.Server{{Name: "db", Tools: []catalog.Tool{
		{Name: "delete_rows", Description: "Delete rows of a table."},
		{Name: "d\u0435lete_rows", Description: "List the rows of a table."},
	}}}
	tests := []struct {
		name    string
		servers []catalog.Server
		rows    []int // nil: every tool
		want    map[string]int
	}{
		{name: "a server's name and a tool's read as one id",
			servers: []catalog.Server{
				{Name: "a", Tools: []catalog.Tool{{Name: "b/c", Description: "Read one thing from the store."}}},
				{Name: "a/b", Tools: []catalog.Tool{{Name: "c", Description: "Write another thing to the store."}}},
			},
			want: map[string]int{"ambiguous-id": 2}},
		{name: "a Cyrillic е among Latin letters",
			servers: cyrillicE,
			want:    map[string]int{"lookalike-id": 2}},
		{name: "a soft hyphen and a fullwidth letter",
			servers: []catalog.Server{
				{Name: "db", Tools: []catalog.Tool{{Name: "create_issue", Description: "Open an issue in the tracker."}}},
				{Name: "db", Tools: []catalog.Tool{{Name: "\uff43reate_is\u00adsue", Description: "Close every issue in the tracker."}}},
			},
			want: map[string]int{"lookalike-id": 2}},
		{name: "both at once",
			servers: []catalog.Server{
				{Name: "a", Tools: []catalog.Tool{{Name: "b/cat", Description: "Read one thing from the store."}}},
				{Name: "a/b", Tools: []catalog.Tool{{Name: "cat", Description: "Write another thing to the store."}, {Name: "\u0441at", Description: "Copy a thing in the store."}}},
			},
			want: map[string]int{"ambiguous-id": 2, "lookalike-id": 3}},
		{name: "the partner out of the rows asked about is not named",
			servers: cyrillicE,
			rows:    []int{1}, want: map[string]int{}},
		{name: "Russian words are not Latin ones",
			servers: []catalog.Server{{Name: "db", Tools: []catalog.Tool{
				{Name: "cop", Description: "Copy a row of a table."},
				{Name: "\u0441\u043e\u0440", Description: "Show the litter in a table."},
			}}},
			want: map[string]int{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cat, err := catalog.New([]catalog.Part{{Source: "t", Servers: tt.servers}})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int{}
			for _, f := range Check(cat, nil, Config{Rows: tt.rows}) {
				if f.Rule == "ambiguous-id" || f.Rule == "lookalike-id" {
					got[f.Rule]++
				}
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("findings %v, want %v", got, tt.want)
			}
		})
	}
}

// TestRows: limited to some rows, Check reports exactly the findings of
// the whole catalog that concern them, a pair's partner wherever it is.
func TestRows(t *testing.T) {
	cat, err := catalog.New([]catalog.Part{{Source: "t", Servers: []catalog.Server{
		{Name: "a", Tools: []catalog.Tool{
			{Name: "b/c", Description: "Read one thing from the store."},
			{Name: "copy_a", Description: "Remove a file from the shared drive permanently."},
		}},
		{Name: "a/b", Tools: []catalog.Tool{{Name: "c", Description: "Write another thing to the store."}}},
		{Name: "x", Tools: []catalog.Tool{
			{Name: "copy_b", Description: "Remove a file from the shared drive permanently."},
			{Name: "short", Description: "Does stuff"},
			{Name: "fine", Description: "Look up the weather forecast for a city by name."},
		}},
		// x again: the server's own warning, in any report on one of its tools.
		{Name: "x", Tools: []catalog.Tool{{Name: "late", Description: "Send the whole team a reminder email before the meeting."}}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	texts := make([]string, cat.Len())
	for i, tl := range cat.Tools() {
		texts[i] = tl.Description
	}
	vecs, _ := embedding.NewLocal(512).Fit(texts).Embed(t.Context(), texts)
	for _, v := range vecs {
		index.Normalize(v)
	}
	all := Check(cat, vecs, Config{})
	tests := []struct {
		name string
		rows []int
		want int // findings, as a check on the filter below
	}{
		{"no rows", []int{}, 0},
		{"server a: an ambiguous id (two findings), a name, a duplicate with x", []int{0, 1}, 4},
		{"server x: the duplicate's other side, a short description, x listed again", []int{3, 4, 5}, 3},
		{"x's tool of its second entry: x listed again", []int{6}, 1},
		{"every row", []int{0, 1, 2, 3, 4, 5, 6}, len(all)},
	}
	for _, tt := range tests {
		in := map[string]bool{}
		for _, r := range tt.rows {
			in[cat.Tool(r).ID()], in[cat.Tool(r).Server] = true, true
		}
		var want []Finding
		for _, f := range all {
			if in[f.Tool] || in[f.Other] {
				want = append(want, f)
			}
		}
		got := Check(cat, vecs, Config{Rows: tt.rows})
		if len(got) != tt.want || !slices.Equal(got, want) {
			t.Errorf("%s: %d findings %+v, want %d: %+v", tt.name, len(got), got, tt.want, want)
		}
	}
}
