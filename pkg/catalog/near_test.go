package catalog

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/pkg/internal/edit"
)

func TestNearName(t *testing.T) {
	cat, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, want string }{
		{"create_issue", "create_issue"},
		{"Create_Issue", "create_issue"},
		{"create_isue", "create_issue"},
		{"craete_issue", "create_issue"},
		{"create_issues", "create_issue"},
		{"xreate_issue", "create_issue"}, // the first letter
		{"create_issux", "create_issue"}, // the last
		{"post_mesage", "post_message"},
		{"create_tissue", "create_issue"}, // one added
		{"make_issue", ""},
		{"iss", ""}, // under four bytes
		{"", ""},
		{strings.Repeat("a", 300), ""},
	} {
		got := ""
		if row, ok := cat.NearName(tt.name); ok {
			got = cat.Tool(row).Name
		}
		if got != tt.want {
			t.Errorf("NearName(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}

// TestNearNameFindsWhatAScanFinds: whatever one typing error a name
// has, the index finds a tool when a scan of every name would, in a
// catalog of generated names that share their ends.
func TestNearNameFindsWhatAScanFinds(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	words := []string{"get", "list", "create", "update", "delete", "issue", "issues", "event", "file", "user", "a", "b", "ab", "x"}
	seen := map[string]bool{}
	var yaml strings.Builder
	yaml.WriteString("servers:\n  - name: s\n    tools:\n")
	var names []string
	for len(names) < 150 { // of the 196 pairs
		n := words[r.IntN(len(words))] + "_" + words[r.IntN(len(words))]
		if r.IntN(3) == 0 {
			n = strings.ToUpper(n[:1]) + n[1:]
		}
		if seen[strings.ToLower(n)] {
			continue
		}
		seen[strings.ToLower(n)] = true
		names = append(names, n)
		fmt.Fprintf(&yaml, "      - {name: %s, description: A tool.}\n", n)
	}
	part, err := Parse("gen.yaml", []byte(yaml.String()), "")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := New([]Part{part})
	if err != nil {
		t.Fatal(err)
	}
	for range 3000 {
		q := typo(r, names[r.IntN(len(names))])
		scan := false
		for _, n := range names {
			if strings.EqualFold(n, q) || edit.One(strings.ToLower(q), strings.ToLower(n)) {
				scan = true
			}
		}
		row, ok := cat.NearName(q)
		if len(q) >= 4 && ok != scan {
			t.Fatalf("NearName(%q) = %v, a scan %v", q, ok, scan)
		}
		if ok && !strings.EqualFold(cat.Tool(row).Name, q) && !edit.One(strings.ToLower(q), strings.ToLower(cat.Tool(row).Name)) {
			t.Fatalf("NearName(%q) = %q, not near", q, cat.Tool(row).Name)
		}
	}
}

// typo is s with one random typing error: a byte dropped, added, changed
// or two swapped.
func typo(r *rand.Rand, s string) string {
	i := r.IntN(len(s))
	c := string(rune('a' + r.IntN(26)))
	switch r.IntN(4) {
	case 0:
		return s[:i] + s[i+1:]
	case 1:
		return s[:i] + c + s[i:]
	case 2:
		return s[:i] + c + s[i+1:]
	default:
		if i+1 < len(s) {
			return s[:i] + s[i+1:i+2] + s[i:i+1] + s[i+2:]
		}
		return s
	}
}
