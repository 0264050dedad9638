package search

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/embedding"
)

// TestRegexTextBound: a regex search reads at most MaxRegexText bytes of
// names and descriptions; past it the caller is asked to narrow the scope,
// and a narrower scope, or names alone, is answered.
func TestRegexTextBound(t *testing.T) {
	// Two servers whose descriptions' openings together pass the bound,
	// each alone under it.
	per := MaxRegexText/regexDescBytes/2 + 100
	desc := strings.Repeat("Reads one record of the ledger and reports it. ", regexDescBytes/40)
	var servers []catalog.Server
	for _, name := range []string{"alpha", "beta"} {
		s := catalog.Server{Name: name}
		for i := range per {
			s.Tools = append(s.Tools, catalog.Tool{Name: fmt.Sprintf("read_%d", i), Description: desc})
		}
		servers = append(servers, s)
	}
	cat, err := catalog.New([]catalog.Part{{Source: "t", Servers: servers}})
	if err != nil {
		t.Fatal(err)
	}
	svc := New(Config{Embedder: embedding.NewLocal(64)})
	if _, err := svc.Build(t.Context(), &Setup{Catalog: cat}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		req  Request
		want int // tools matched; -1: refused
	}{
		{"descriptions of every tool", Request{Regex: "ledger", RegexDescription: true}, -1},
		{"names of every tool", Request{Regex: "^read_1$"}, 2},
		{"descriptions of one server", Request{Regex: "ledger", RegexDescription: true, Servers: []string{"beta"}}, per},
		{"descriptions of servers matched by name", Request{Regex: "ledger", RegexDescription: true, ServerMatch: "alp"}, per},
	}
	for _, tt := range tests {
		res, err := svc.Search(t.Context(), tt.req, access.Caller{})
		var re *RequestError
		switch {
		case tt.want < 0:
			if !errors.As(err, &re) || re.Code != "regex_scope_too_large" || !strings.Contains(re.Message, "match names only") {
				t.Errorf("%s: %v, want regex_scope_too_large naming what to do", tt.name, err)
			}
		case err != nil:
			t.Errorf("%s: %v", tt.name, err)
		case res.Total == nil || *res.Total != tt.want:
			t.Errorf("%s: total %v, want %d", tt.name, res.Total, tt.want)
		}
	}
}
