package jsonread

import "testing"

func TestKindName(t *testing.T) {
	for _, tt := range []struct{ v, want string }{
		{`null`, "null"}, {`true`, "a boolean"}, {` false`, "a boolean"}, {`"x"`, "a string"},
		{`-1.5`, "a number"}, {`0`, "a number"}, {`{}`, "an object"}, {"\n[1]", "an array"}, {``, "nothing"}, {`  `, "nothing"},
	} {
		if got := KindName([]byte(tt.v)); got != tt.want {
			t.Errorf("KindName(%q) = %q, want %q", tt.v, got, tt.want)
		}
	}
}

// TestGetReadsInPlace: a lent decoder reads its bytes without writing
// them, and one given back and lent again reads only its new bytes.
func TestGetReadsInPlace(t *testing.T) {
	data := []byte(`{"title":"T","readOnlyHint":false}`)
	want := string(data)
	for range 3 {
		d := Get(data)
		if _, err := d.ReadToken(); err != nil {
			t.Fatal(err)
		}
		var names []string
		for d.PeekKind() != '}' {
			name, err := d.ReadValue()
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, string(name))
			if err := d.SkipValue(); err != nil {
				t.Fatal(err)
			}
		}
		d.Put()
		if len(names) != 2 || names[0] != `"title"` || names[1] != `"readOnlyHint"` {
			t.Errorf("names %q", names)
		}
	}
	if string(data) != want {
		t.Errorf("data written to: %q", data)
	}
	d := Get([]byte(`[1]`))
	defer d.Put()
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '[' {
		t.Errorf("a decoder lent again read %v, %v", tok, err)
	}
}
