package analysis

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWords(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"create_pull_request", []string{"create", "pull", "request"}},
		{"createPullRequest", []string{"create", "pull", "request"}},
		{"create-pull-request", []string{"create", "pull", "request"}},
		{"github.create.pull.request", []string{"github", "create", "pull", "request"}},
		{"HTTPServer", []string{"http", "server"}},
		{"getS3Object", []string{"get", "s3", "object"}},
		{"/v1/nutrition", []string{"v1", "nutrition"}},
		{"Transfermarkt search", []string{"transfermarkt", "search"}},
		{"Ünïcödé Wörds", []string{"ünïcödé", "wörds"}},
		{"", nil},
		{"  --  ", nil},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, Words(tt.in)); diff != "" {
			t.Errorf("Words(%q) mismatch (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestStem(t *testing.T) {
	tests := map[string]string{
		"files": "file", "issues": "issue", "repositories": "repository", "branches": "branch",
		"stopped": "stop", "running": "run", "filled": "fill", "created": "creat", "create": "create",
		"status": "status", "analysis": "analysis", "class": "class", "gas": "gas", "messages": "message",
	}
	for in, want := range tests {
		if got := Stem(in); got != want {
			t.Errorf("Stem(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestTerms(t *testing.T) {
	got := English.Terms("Can you list the open issues in my repository?")
	want := []string{"list", "open", "issue", "repository"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Terms mismatch (-want +got):\n%s", diff)
	}
}

// FuzzASCIIWords checks the ASCII fast path against the general one, which
// must give the same tokens for any ASCII text.
func FuzzASCIIWords(f *testing.F) {
	for _, s := range []string{"createPullRequest", "HTTPServer v2 getS3Object", "list_pull-requests.now", "ABC", "aB1cD", "x", "", "  --  ", "Re-run the FAILED jobs; e.g. CI"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !isASCII(s) {
			return
		}
		var fast, slow []string
		appendASCIIWords(s, func(w string) { fast = append(fast, w) })
		appendRuneWords(s, func(w string) { slow = append(slow, w) })
		if !slices.Equal(fast, slow) {
			t.Fatalf("%q: ASCII path %q, general path %q", s, fast, slow)
		}
	})
}
