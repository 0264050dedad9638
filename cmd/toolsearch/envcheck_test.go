package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestEnvNamesMatchTheCode: envNames is every TOOLSEARCH_ variable the
// code outside tests names (and OPENAI_API_KEY), no more and no fewer, so
// a typo warning never fires for a variable some command reads.
func TestEnvNamesMatchTheCode(t *testing.T) {
	re := regexp.MustCompile(`"(TOOLSEARCH_[A-Z0-9_]+|OPENAI_API_KEY)"`)
	found := map[string]bool{}
	for _, root := range []string{".", "../../pkg"} {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || path == "envcheck.go" {
				return err
			}
			b, err := os.ReadFile(path)
			for _, m := range re.FindAllSubmatch(b, -1) {
				found[string(m[1])] = true
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for name := range found {
		if !slices.Contains(envNames, name) {
			t.Errorf("%s is read but not in envNames", name)
		}
	}
	for _, name := range envNames {
		if !found[name] {
			t.Errorf("%s is in envNames but no code names it", name)
		}
	}
}

// TestEnvTypos: a variable in toolsearch's namespace within two edits of
// one a command reads is reported with that name; the names commands
// read, other programs' and far ones are not.
func TestEnvTypos(t *testing.T) {
	tests := []struct {
		env  string
		want string // the name it is taken for; "" for no warning
	}{
		{"TOOLSEARCH_EMBEDER=openai", "TOOLSEARCH_EMBEDDER"},
		{"TOOLSEARCH_API_KEYSS=k", "TOOLSEARCH_API_KEYS"}, // one edit from it, two from TOOLSEARCH_API_KEY
		{"TOOLSEARCH_HYBRID_APLHA=0.5", "TOOLSEARCH_HYBRID_ALPHA"},
		{"TOOLSEARCH_EMBEDDER=openai", ""},
		{"TOOLSEARCH_API_KEY=k", ""},
		{"TOOLSEARCH_EVALDATA=/data", ""}, // a test harness's
		{"TOOLSEARCH_KEY_OPS=k", ""},      // a config's key_env
		{"EMBEDDER=openai", ""},
		{"TOOLSEARCH_EMBEDER", "TOOLSEARCH_EMBEDDER"},                               // no "=" at all
		{"TOOLSEARCH_BASE_URL=http://llm:8000/v1", "TOOLSEARCH_EMBEDDING_BASE_URL"}, // the section left out
		{"TOOLSEARCH_MODEL=bge-m3", "TOOLSEARCH_EMBEDDING_MODEL"},
		{"TOOLSEARCH_TIMEOUT=5s", ""}, // the embedding's, the query's or the shutdown's
		{"TOOLSEARCH_KEY=k", ""},      // the API's or the embedding's: and a config's key_env may be anything
	}
	for _, tt := range tests {
		got := envTypos([]string{tt.env})
		switch {
		case tt.want == "" && len(got) != 0:
			t.Errorf("%s: warned %+v, want nothing", tt.env, got)
		case tt.want != "" && (len(got) != 1 || got[0].known != tt.want):
			t.Errorf("%s: warned %+v, want one naming %s", tt.env, got, tt.want)
		}
	}
	environ = func() []string { return []string{"TOOLSEARCH_EMBEDER=openai"} }
	defer func() { environ = os.Environ }()
	var out bytes.Buffer
	warnEnv(&out, &indexFlags{})
	if want := "toolsearch: warning: TOOLSEARCH_EMBEDER is set but no command reads it; did you mean TOOLSEARCH_EMBEDDER?\n"; out.String() != want {
		t.Errorf("warnEnv wrote %q, want %q", out.String(), want)
	}
}
