package tooldef

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolsearch/toolsearch/pkg/catalog"
)

func TestSafeKeys(t *testing.T) {
	long := strings.Repeat("x", 70)
	tests := []struct {
		name, schema, want string // want "": unchanged
		names              map[string]string
	}{
		{name: "valid names", schema: `{"type":"object","properties":{"a.b":{},"c-d_9":{}},"required":["a.b"]}`},
		{name: "nested names are not checked", schema: `{"type":"object","properties":{"p":{"type":"object","properties":{"x[]":{}}}}}`},
		{name: "brackets, accents, spaces",
			schema: `{"type":"object","properties":{"filter[id]":{"type":"string"},"año":{},"Account Number":{}},"required":["filter[id]","other"]}`,
			want:   `{"type":"object","properties":{"filter_id_":{"type":"string"},"a_o":{},"Account_Number":{}},"required":["filter_id_","other"]}`,
			names:  map[string]string{"filter_id_": "filter[id]", "a_o": "año", "Account_Number": "Account Number"}},
		{name: "a new name that is taken is numbered",
			schema: `{"type":"object","properties":{"a b":{},"a_b":{},"a;b":{}}}`,
			want:   `{"type":"object","properties":{"a_b":{},"a_b_2":{},"a_b_3":{}}}`,
			names:  map[string]string{"a_b_2": "a b", "a_b_3": "a;b"}},
		{name: "too long, and empty",
			schema: `{"type":"object","properties":{"` + long + `":{},"":{}}}`,
			want:   `{"type":"object","properties":{"` + long[:64] + `":{},"_":{}}}`,
			names:  map[string]string{long[:64]: long, "_": ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, names := SafeKeys(json.RawMessage(tt.schema))
			if tt.want == "" {
				if string(got) != tt.schema || names != nil {
					t.Errorf("changed: %s %v", got, names)
				}
				return
			}
			if diff := cmp.Diff(jsonValue(t, tt.want), jsonValue(t, string(got))); diff != "" {
				t.Errorf("schema mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.names, names); diff != "" {
				t.Errorf("names mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRenderRenamesForAnthropic: only Anthropic's definitions rename
// parameters, and they say how to name them back.
func TestRenderRenamesForAnthropic(t *testing.T) {
	tl := catalog.Tool{Server: "s", Name: "t", Description: "d", Schemas: catalog.MakeSchemas(json.RawMessage(`{"type":"object","properties":{"q[]":{"type":"string"}}}`), nil, nil)}
	for _, format := range Formats {
		d, err := Render(format, tl, nil, "t")
		if err != nil {
			t.Fatal(err)
		}
		renamed := strings.Contains(string(d.JSON), `"q__"`)
		if want := format == "anthropic"; renamed != want || (d.ArgumentNames != nil) != want || strings.Contains(d.Warning, `"q[]" as "q__"`) != want {
			t.Errorf("%s: %s, names %v, warning %q", format, d.JSON, d.ArgumentNames, d.Warning)
		}
	}
}
