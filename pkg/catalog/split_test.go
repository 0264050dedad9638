package catalog

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/pkg/catgen"
)

// readWhole is decodeFile's reading of data on one core.
func readWhole(data []byte) (file, error) {
	d := newDecoder("f.json", data, nil, len(data))
	var f file
	if err := d.read(&f); err != nil {
		return file{}, err
	}
	d.code(&f)
	return f, nil
}

// manyTools is a catalog of n tools over servers of up to 40, with
// schemas and annotations: enough for every core to read a part.
func manyTools(n int) string {
	var b strings.Builder
	b.WriteString(`{"servers":[`)
	for i := range n {
		switch {
		case i%40 == 0 && i > 0:
			fmt.Fprintf(&b, `]},{"name":"s%d","tools":[`, i/40)
		case i == 0:
			b.WriteString(`{"name":"s0","tools":[`)
		default:
			b.WriteString(",\n  ")
		}
		fmt.Fprintf(&b, `{"name":"t%d","description":"Tool %d: \"quoted\" {braces} [brackets] \\ and more","inputSchema":{"type":"object","properties":{"q%d":{"type":"string","description":"the \u00e9 query"},"tools":{"type":"array"}},"required":["q%d"]}`, i, i, i, i)
		if i%3 == 0 {
			b.WriteString(`,"annotations":{"readOnlyHint":true,"title":"T"}`)
		}
		b.WriteString("}")
	}
	b.WriteString("]}]}")
	return b.String()
}

// TestSplit: a file read on every core reads as it does whole, and one
// laid out otherwise than the scan expects, or with any error, is read
// whole (so its error is the one it always was).
func TestSplit(t *testing.T) {
	deep := `{"tools":[{"name":"x","inputSchema":{"a":` + strings.Repeat("[", splitDepth) + strings.Repeat("]", splitDepth) + `}}]}`
	tests := []struct {
		name, doc string
		split     bool
	}{
		{"servers", `{"servers":[{"name":"a","tools":[{"name":"x","inputSchema":{"type":"object","properties":{"tools":{"type":"array","items":{"type":"string"}}}}},{"name":"y"}]},{"tools":[{"name":"z","description":"a \"}\" b\\\\"}],"name":"b"}]}`, true},
		{"a tools/list answer", `{"nextCursor":"c","tools":[ {"name":"x","annotations":{"readOnlyHint":true}} ],"_meta":{"servers":[{"tools":[{"name":"no"}]}]}}`, true},
		{"whitespace and escapes", "{ \"servers\" : [ { \"name\" : \"a\" , \"tools\" : [ { \"name\" : \"x\\\"y\" , \"description\" : \"\\\\\\\\\" } ] } ] }\n", true},
		{"an empty server and a null one", `{"servers":[{"name":"e","tools":[]},null,{"name":"a","tools":[{"name":"x"}]}]}`, true},
		{"many", manyTools(700), true},
		{"a key escaped", `{"servers":[{"name":"a","tool\u0073":[{"name":"x"}]}]}`, false},
		{"a null tool", `{"tools":[null,{"name":"x"}]}`, false},
		{"nested deeper than the scan follows", deep, false},
		{"no tools", `{"servers":[]}`, false},
		{"tools not an array", `{"servers":[{"name":"a","tools":{"name":"x"}}]}`, false},
		{"a syntax error in a tool", `{"tools":[{"name":"x",}]}`, false},
		{"brackets crossed", `{"tools":[{"name":"x"]}]}`, false},
		{"a key repeated in a tool", `{"tools":[{"name":"x","name":"y"}]}`, false},
		{"tools repeated", `{"servers":[{"name":"a","tools":[{"name":"x"}],"tools":[{"name":"y"}]}]}`, false},
		{"an unknown key in a tool", `{"tools":[{"name":"x","desc":"d"}]}`, false},
		{"a string that never ends", `{"tools":[{"name":"x}]}`, false},
		{"invalid UTF-8", "{\"tools\":[{\"name\":\"x\",\"description\":\"caf\xe9\"}]}", false},
		{"data after the object", `{"tools":[{"name":"x"}]} {}`, false},
		{"a bad hint", `{"tools":[{"name":"x","annotations":{"readOnlyHint":1}}]}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := decodeSplit("f.json", []byte(tt.doc))
			if ok != tt.split {
				t.Fatalf("read on every core: %v, want %v", ok, tt.split)
			}
			want, err := readWhole([]byte(tt.doc))
			if ok && (err != nil || !reflect.DeepEqual(got, want)) {
				t.Fatalf("read on every core as %+v; whole, %+v (%v)", got, want, err)
			}
			// Parse, as a large file is read, errs as it does read whole.
			defer func(from, procs int) { splitFrom = from; runtime.GOMAXPROCS(procs) }(splitFrom, runtime.GOMAXPROCS(2))
			splitFrom = 0
			p1, err1 := Parse("f.json", []byte(tt.doc), "")
			splitFrom = math.MaxInt
			p2, err2 := Parse("f.json", []byte(tt.doc), "")
			if fmt.Sprint(err1) != fmt.Sprint(err2) || !reflect.DeepEqual(p1, p2) {
				t.Errorf("Parse: %v, read whole: %v", err1, err2)
			}
		})
	}
}

// TestSplitTools: the scan finds exactly the tools' objects, and the
// skeleton is the file with each replaced by "{}".
func TestSplitTools(t *testing.T) {
	doc := `{"servers":[{"name":"a","tools":[{"name":"x","inputSchema":{"tools":[{"name":"no"}]}}, {"name":"y"}]}],"tools":[{"name":"\"}"}]}`
	skel, spans, ok := splitTools([]byte(doc))
	if !ok {
		t.Fatal("not split")
	}
	var tools []string
	for _, s := range spans {
		tools = append(tools, doc[s.lo:s.hi])
		if string(skel[s.end-2:s.end]) != "{}" {
			t.Errorf("span %q: skeleton %q at its end", doc[s.lo:s.hi], skel[:s.end])
		}
	}
	want := []string{`{"name":"x","inputSchema":{"tools":[{"name":"no"}]}}`, `{"name":"y"}`, `{"name":"\"}"}`}
	if !reflect.DeepEqual(tools, want) {
		t.Errorf("tools %q, want %q", tools, want)
	}
	if w := `{"servers":[{"name":"a","tools":[{}, {}]}],"tools":[{}]}`; string(skel) != w {
		t.Errorf("skeleton %s, want %s", skel, w)
	}
}

// BenchmarkParseSplit is Parse of a generated catalog read whole and on
// every core, in one run: what reading a large file on every core saves.
func BenchmarkParseSplit(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		var buf bytes.Buffer
		if err := (catgen.Spec{Tools: n, Seed: 1}).Write(&buf); err != nil {
			b.Fatal(err)
		}
		for _, c := range []struct {
			name string
			from int
		}{{"whole", math.MaxInt}, {"split", 0}} {
			b.Run(fmt.Sprintf("N=%d/%s", n, c.name), func(b *testing.B) {
				defer func(from int) { splitFrom = from }(splitFrom)
				splitFrom = c.from
				b.SetBytes(int64(buf.Len()))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := Parse("bench", buf.Bytes(), ""); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
