package search

import (
	"errors"
	"fmt"
	"slices"
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
	// gamma's are as long, in Cyrillic: read twice (as written and as
	// seen, matches), they pass the bound alone.
	descs := map[string]string{"alpha": desc, "beta": desc, "gamma": strings.Repeat("Читает одну запись книги. ", regexDescBytes/40)}
	var servers []catalog.Server
	for _, name := range []string{"alpha", "beta", "gamma"} {
		s := catalog.Server{Name: name}
		for i := range per {
			s.Tools = append(s.Tools, catalog.Tool{Name: fmt.Sprintf("read_%d", i), Description: descs[name]})
		}
		servers = append(servers, s)
	}
	svc := regexRig(t, servers)
	tests := []struct {
		name string
		req  Request
		want int // tools matched; -1: refused
	}{
		{"descriptions of every tool", Request{Regex: "ledger", RegexDescription: true}, -1},
		{"names of every tool", Request{Regex: "^read_1$"}, 3},
		{"descriptions of one server, not ASCII", Request{Regex: "книги", RegexDescription: true, Servers: []string{"gamma"}}, -1},
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

// TestInNameOrder: rows come back sorted by name, then server, whether
// few (sorted as they are) or many (picked out of the catalog's order),
// with names shared across servers.
func TestInNameOrder(t *testing.T) {
	var servers []catalog.Server
	for _, s := range []string{"zeta", "alpha", "mid"} {
		srv := catalog.Server{Name: s}
		for i := range 40 {
			// Every server has tools of the same names, in no order.
			srv.Tools = append(srv.Tools, catalog.Tool{Name: fmt.Sprintf("t%02d", (i*7)%40), Description: "A tool of the order test."})
		}
		servers = append(servers, srv)
	}
	cat, err := catalog.New([]catalog.Part{{Source: "t", Servers: servers}})
	if err != nil {
		t.Fatal(err)
	}
	key := func(r int) string { tl := cat.Tool(r); return tl.Name + "\x00" + tl.Server }
	for _, n := range []int{0, 1, 3, cat.Len() / 16, cat.Len()/2 + 1, cat.Len()} {
		var rows []int
		for r := cat.Len() - 1; r >= 0 && len(rows) < n; r -= 1 + r%2 {
			rows = append(rows, r)
		}
		want := slices.Clone(rows)
		slices.SortFunc(want, func(x, y int) int { return strings.Compare(key(x), key(y)) })
		if got := inNameOrder(cat, rows); !slices.Equal(got, want) {
			t.Errorf("%d rows: %v, want %v", n, got, want)
		}
	}
}

// TestRegexReadsTextAsSeen: a pattern matches a name or description as
// written or as its reader sees it (analysis.Fold), so "delete" finds the
// tools whose names look like delete_rows however they are spelt, and a
// word wholly of another script is left as it is.
func TestRegexReadsTextAsSeen(t *testing.T) {
	tools := []catalog.Tool{
		{Name: "delete_rows", Description: "Deletes rows."},
		{Name: "de\u00adlete_rows", Description: "A soft hyphen in its name."},
		{Name: "d\u0435lete_rows", Description: "A Cyrillic e in its name."},
		{Name: "\uff44elete_rows", Description: "A fullwidth d in its name."},
		{Name: "prune_rows", Description: "R\u0435moves old rows."},
		{Name: "\u0441\u043e\u0440", Description: "A Russian word alone."},
	}
	svc := regexRig(t, []catalog.Server{{Name: "db", Tools: tools}})
	tests := []struct {
		name string
		req  Request
		want []string
	}{
		{"every spelling of a name", Request{Regex: "^delete_"}, []string{"db/delete_rows", "db/de\u00adlete_rows", "db/d\u0435lete_rows", "db/\uff44elete_rows"}},
		{"a name as written", Request{Regex: "^d\u0435lete_"}, []string{"db/d\u0435lete_rows"}},
		{"a description as seen", Request{Regex: "(?i)removes", RegexDescription: true}, []string{"db/prune_rows"}},
		{"a word of another script as written", Request{Regex: "^\u0441\u043e\u0440$"}, []string{"db/\u0441\u043e\u0440"}},
		{"not read as Latin", Request{Regex: "^cop$"}, nil},
	}
	for _, tt := range tests {
		res, err := svc.Search(t.Context(), tt.req, access.Caller{})
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		var got []string
		for _, h := range res.Tools {
			got = append(got, h.Server+"/"+h.Name)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

// regexRig is a service built on servers with a small local embedder.
func regexRig(tb testing.TB, servers []catalog.Server) *Service {
	tb.Helper()
	cat, err := catalog.New([]catalog.Part{{Source: "t", Servers: servers}})
	if err != nil {
		tb.Fatal(err)
	}
	svc := New(Config{Embedder: embedding.NewLocal(64)})
	if _, err := svc.Build(tb.Context(), &Setup{Catalog: cat}); err != nil {
		tb.Fatal(err)
	}
	return svc
}
