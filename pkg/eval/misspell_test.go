package eval

import (
	"errors"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/pkg/internal/edit"
	"github.com/toolsearch/toolsearch/pkg/search"
)

func TestMisspell(t *testing.T) {
	cases := []Case{
		{ID: "a", Query: "Send a message to the engineering channel, café façade"},
		{ID: "b", Query: "Schedule meeting tomorrow", Request: &search.Request{Query: "Schedule meeting tomorrow"}},
		{ID: "c", Query: "a to be or not"},
	}
	tests := []struct {
		name    string
		rate    float64
		wantErr bool
	}{
		{"none", 0, false},
		{"some", 0.5, false},
		{"every long word", 1, false},
		{"below zero", -0.1, true},
		{"over one", 1.5, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Misspell(cases, tt.rate)
			if tt.wantErr {
				if !errors.Is(err, ErrBadInput) {
					t.Fatalf("err = %v, want ErrBadInput", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			again, _ := Misspell(cases, tt.rate)
			for i, c := range got {
				if c.Query != again[i].Query {
					t.Errorf("case %s: %q, then %q: not the same each run", c.ID, c.Query, again[i].Query)
				}
				if c.ID != cases[i].ID || c.Category != cases[i].Category {
					t.Errorf("case %s: id or category changed", c.ID)
				}
				was, now := strings.Fields(cases[i].Query), strings.Fields(c.Query)
				if len(was) != len(now) {
					t.Fatalf("case %s: %q has %d words, want %d", c.ID, c.Query, len(now), len(was))
				}
				for j := range was {
					w, n := strings.Trim(was[j], ","), strings.Trim(now[j], ",")
					long := len(w) >= 5 && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") == ""
					switch {
					case !long && w != n:
						t.Errorf("case %s: %q became %q; only ASCII words of five letters or more slip", c.ID, w, n)
					case long && tt.rate == 1 && !oneSlip(w, n):
						t.Errorf("case %s: %q became %q, want one slip inside it", c.ID, w, n)
					case long && tt.rate == 0 && w != n:
						t.Errorf("case %s: %q became %q at rate 0", c.ID, w, n)
					case long && w != n && !oneSlip(w, n):
						t.Errorf("case %s: %q became %q, not one slip", c.ID, w, n)
					}
				}
			}
			if r := got[1].Request; r == nil || r.Query != got[1].Query {
				t.Errorf("case b's request: %+v, want its query misspelt as well", r)
			}
			if cases[1].Request.Query != "Schedule meeting tomorrow" {
				t.Errorf("the caller's case was changed: %q", cases[1].Request.Query)
			}
		})
	}
}

// oneSlip reports whether n is w with one letter inside it (not the
// first or last) dropped, doubled, swapped with the next inside one, or
// changed.
func oneSlip(w, n string) bool {
	return w[0] == n[0] && w[len(w)-1] == n[len(n)-1] && edit.One(w, n)
}
