package jsontree

import "testing"

func TestRoundTrip(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"b":12345678901234567890,"a":1.50}`, `{"a":1.50,"b":12345678901234567890}`},
		{`{"x":"<b>&</b>","y":[true,null]}`, `{"x":"<b>&</b>","y":[true,null]}`},
		{` "s" `, `"s"`},
	}
	for _, tt := range tests {
		v, err := Decode([]byte(tt.in))
		if err != nil {
			t.Fatal(err)
		}
		got, err := Encode(v)
		if err != nil || string(got) != tt.want {
			t.Errorf("%s: %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
	if _, err := Decode([]byte(`{"a":`)); err == nil {
		t.Error("Decode of a cut document: no error")
	}
}

func TestMarshal(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"b":1234567890123456789,"a":1.0,"a":2}`, `{"a":2,"b":1234567890123456789}`},
		{`{"x":"<b>"}`, `{"x":"\u003cb\u003e"}`},
		{`null`, ``},
	}
	for _, tt := range tests {
		got, err := Marshal([]byte(tt.in))
		if err != nil || string(got) != tt.want {
			t.Errorf("%s: %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
}

func TestObject(t *testing.T) {
	tests := []struct {
		in, want string // want "" for an error
	}{
		{`{"n":9007199254740993}`, `{"n":9007199254740993}`},
		{`{}`, `{}`},
		{`null`, ``},
		{`[1]`, ``},
		{`"s"`, ``},
		{``, ``},
		{`{"a":`, ``},
	}
	for _, tt := range tests {
		m, err := Object([]byte(tt.in))
		got := ""
		if err == nil {
			b, _ := Encode(m)
			got = string(b)
		}
		if got != tt.want || (err == nil) != (tt.want != "") {
			t.Errorf("Object(%s) = %s, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}
