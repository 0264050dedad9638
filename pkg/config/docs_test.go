package config

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocumentedConfigs: every config file the docs show parses, so that
// one copied from them starts. A YAML block is a config unless it is a
// Kubernetes object (apiVersion).
func TestDocumentedConfigs(t *testing.T) {
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil || len(docs) == 0 {
		t.Fatalf("no docs/*.md (%v)", err)
	}
	blocks := 0
	for _, doc := range append(docs, "../../README.md") {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile("(?s)```ya?ml\n(.*?)```").FindAllSubmatchIndex(data, -1) {
			block := data[m[2]:m[3]]
			if strings.Contains(string(block), "apiVersion:") {
				continue
			}
			blocks++
			line := 1 + strings.Count(string(data[:m[2]]), "\n")
			if _, err := Parse(filepath.Base(doc), block); err != nil {
				t.Errorf("%s:%d: the config shown does not parse: %v", doc, line, err)
			}
		}
	}
	if blocks < 3 {
		t.Errorf("%d config blocks found in the docs; configuration.md and mcp.md show three", blocks)
	}
}
