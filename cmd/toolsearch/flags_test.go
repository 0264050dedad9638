package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/pkg/config"
	"github.com/toolsearch/toolsearch/pkg/jsonkeys"
)

// TestFileKeyOf: every config file key a misplaced flag name is pointed
// to is one the file takes, for a flag the file may set.
func TestFileKeyOf(t *testing.T) {
	rules := jsonkeys.Typed[config.File]()
	for flagName, key := range fileKeyOf {
		if _, ok := envOf[flagName]; !ok {
			t.Errorf("%s: not a flag a config file may set (envOf)", flagName)
		}
		path := strings.Split(key, ".")
		if !slices.Contains(rules(path[:len(path)-1]), path[len(path)-1]) {
			t.Errorf("%s: %s is not a key of the config file", flagName, key)
		}
	}
}
