package config

import (
	"strings"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/pkg/catalog"
)

func TestParse(t *testing.T) {
	good := `
core: [get_platform_info]
templates:
  release: {description: Ship it, tools: [create_release]}
auth:
  keys:
    - {name: team-a, key_env: TEAM_A_KEY, visible_servers: [github]}
    - {name: ci, key_sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08}
embedding: {provider: openai, model: m, dimensions: 256, timeout: 5s}
search: {query_timeout: 750ms}
`
	f, err := Parse("c.yaml", []byte(good))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if len(f.Core) != 1 || f.Templates["release"].Tools[0] != "create_release" || len(f.Auth.Keys) != 2 ||
		time.Duration(f.Search.QueryTimeout) != 750*time.Millisecond || time.Duration(f.Embedding.Timeout) != 5*time.Second {
		t.Errorf("Parse = %+v", f)
	}
	tests := []struct {
		name, doc, want string
	}{
		{"unknown top key", "cores: [a]", `unknown key "cores"`},
		{"unknown nested key", "templates: {a: {tools: [x], descripton: y}}", `unknown key "descripton"`},
		{"wrong type", "core: 5", "core"},
		{"bad duration", "search: {query_timeout: soon}", "duration"},
		{"empty template", "templates: {a: {tools: []}}", "templates.a: no tools"},
		{"key without secret", "auth: {keys: [{name: a}]}", "exactly one of key_env and key_sha256"},
		{"key with both", "auth: {keys: [{name: a, key_env: X, key_sha256: " + strings.Repeat("a", 64) + "}]}", "exactly one"},
		{"bad hash", "auth: {keys: [{name: a, key_sha256: xyz}]}", "64 lower-case hex"},
		{"duplicate key name", "auth: {keys: [{name: a, key_env: KA}, {name: a, key_env: KB}]}", "repeated"},
		{"bad provider", "embedding: {provider: magic}", "local or openai"},
		{"bad yaml", "core: [", "c.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("c.yaml", []byte(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "c.yaml") {
				t.Errorf("Parse(%q) error = %v, want one naming c.yaml and containing %q", tt.doc, err, tt.want)
			}
		})
	}
	if f, err := Parse("empty.yaml", []byte("# nothing\n")); err != nil || f == nil {
		t.Errorf("empty file: %v", err)
	}
}

func TestDefault(t *testing.T) {
	f, err := Default()
	if err != nil || len(f.Core) == 0 || len(f.Templates) == 0 {
		t.Errorf("Default() = %+v, %v", f, err)
	}
}

func TestSetup(t *testing.T) {
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	f, _ := Default()
	s := f.Setup(cat)
	if err := s.Check(); err != nil {
		t.Fatalf("the default config does not fit the default catalog: %v", err)
	}
	if len(s.Core) != len(f.Core) || len(s.Templates) != len(f.Templates) || s.Templates["release"].Tools[0] != f.Templates["release"].Tools[0] {
		t.Errorf("Setup = %+v", s)
	}
}
