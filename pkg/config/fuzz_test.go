package config

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// FuzzParse reads arbitrary config files: never a panic, every error
// naming the file, and a file that parses encodes as JSON (YAML's own
// subset) that parses to the same configuration.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		string(defaultYAML),
		"core: [get_platform_info]\ntemplates:\n  release: {description: Ship it, tools: [create_release]}\n",
		"auth:\n  keys:\n    - {name: a, key_env: A_KEY, visible_servers: [github], confirm_destructive: require_confirm_argument}\n  trusted_proxies: [10.0.0.0/8]\n",
		"auth: {assigned_networks: ['fd00:10:244::/56', 'fc00::/7', '2001:db8::1/128']}\n",
		"embedding: {provider: openai, base_url: 'http://ollama:11434/v1', model: m, dimensions: 256, timeout: 5s}\nsearch: {query_timeout: 750ms}\n",
		"limits: {search_rate: -1, search_burst: 100, mcp_session_idle: 10m, max_connections: 2048}\nmcp: {expose: core_and_meta, confirm_timeout: 2m}\n",
		"learning: {enabled: true, store: file, path: l.db, refresh: 1m, half_life: 720h, min_callers: 2}\n",
		"upstreams:\n  - {name: gh, url: 'http://gh:8080/mcp', refresh: 1m, headers: {X-Tenant: a}}\n",
		"[1]", "null", "", "core: [\"\"]", "learning: {refresh: 1e9h}", "limits: {search_rate: 1e400}",
		"a: &a [x, x]\nb: [*a, *a]\n", "core: !!binary aGVsbG8=", "? [a]\n: b\n", "core: [a]\ncore: [b]\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse("fuzz.yaml", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "config fuzz.yaml") {
				t.Fatalf("the error does not name the file: %v", err)
			}
			return
		}
		j, err := json.Marshal(cfg)
		if err != nil {
			t.Fatalf("a parsed config does not encode: %v", err)
		}
		again, err := Parse("again.json", j)
		if err != nil {
			t.Fatalf("%s parses, its encoding %s does not: %v", data, j, err)
		}
		if j2, _ := json.Marshal(again); !bytes.Equal(j, j2) {
			t.Fatalf("%s parses to %s, and that to %s", data, j, j2)
		}
	})
}
