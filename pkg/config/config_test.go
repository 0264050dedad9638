package config

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/pkg/access"
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
		{"unknown top key", "cores: [a]", `key "cores" is unknown (did you mean "core"?)`},
		{"a list, not a mapping", "- core", `want a mapping of sections (core, templates, auth, ...), got array`},
		{"a budget under one answer", "limits: {upstream_max_result_bytes: 8000000, upstream_result_budget_bytes: 4000000}", "limits.upstream_result_budget_bytes (4000000) must be at least limits.upstream_max_result_bytes (8000000)"},
		{"a word, not a mapping", "core", `want a mapping of sections (core, templates, auth, ...), got string`},
		{"unknown nested key", "templates: {a: {tools: [x], descripton: y}}", `key "descripton" in .templates.a is unknown`},
		{"unknown upstream key", "upstreams: [{name: a, url: 'http://a/mcp'}, {name: b, url: 'http://b/mcp', health_intervl: 1s}]", `key "health_intervl" in .upstreams[1] is unknown (did you mean "health_interval"?)`},
		{"unknown upstream tls key", "upstreams: [{name: a, url: 'https://a/mcp', tls: {ca_file: ca.crt, cert: tls.crt}}]", `key "cert" in .upstreams[0].tls is unknown`},
		{"upstream tls not a mapping", "upstreams: [{name: a, url: 'https://a/mcp', tls: true}]", `key "upstreams[0].tls": want an object, got bool`},
		{"key in another case", "learning: {Enabled: false}", `key "Enabled" in .learning is unknown (did you mean "enabled"?)`},
		{"wrong type", "core: 5", "core"},
		{"bad duration", "search: {query_timeout: soon}", `key "search.query_timeout": want a duration such as "2s"`},
		// In JSON's words, never Go's ("want []config.Key").
		{"a word for a number", "limits: {max_connections: lots}", `key "limits.max_connections": want an integer, got string`},
		{"a map for a list", "auth: {keys: {a: 1}}", `key "auth.keys": want an array, got object`},
		{"an item's field", "auth:\n  keys:\n    - {name: a, key_env: A}\n    - {name: [b], key_env: B}\n", `key "auth.keys[1].name": want a string, got array`},
		{"a string for a list", "core: github/create_issue", `key "core": want an array, got string`},
		{"empty template", "templates: {a: {tools: []}}", "templates.a: no tools"},
		{"key without secret", "auth: {keys: [{name: a}]}", "exactly one of key_env and key_sha256"},
		{"key with both", "auth: {keys: [{name: a, key_env: X, key_sha256: " + strings.Repeat("a", 64) + "}]}", "exactly one"},
		{"bad hash", "auth: {keys: [{name: a, key_sha256: xyz}]}", "64 lower-case hex"},
		{"duplicate key name", "auth: {keys: [{name: a, key_env: KA}, {name: a, key_env: KB}]}", "repeated"},
		// Read as no list, they let the key see every tool.
		{"an empty key list", "auth: {keys: []}", "auth.keys is empty, which would read as no keys"},
		{"an empty server list", "auth: {keys: [{name: a, key_env: KA, visible_servers: []}]}", `auth.keys[0] ("a"): visible_servers is empty, which would let the key see every tool`},
		{"an empty tool list", "auth: {keys: [{name: a, key_env: KA, visible_servers: [s], visible_tools: []}]}", "visible_tools is empty"},
		{"bad provider", "embedding: {provider: magic}", "local or openai"},
		{"batch too large", "embedding: {batch_size: 4096}", "embedding.batch_size must be 1-2048"},
		{"dimensions too wide", "embedding: {dimensions: 10000}", "embedding.dimensions must be 0-8192, got 10000"},
		{"bad yaml", "core: [", "c.yaml"},
		{"bad expose", "mcp: {expose: everything}", `mcp.expose must be meta or core_and_meta, got "everything"`},
		{"bad confirm policy", "mcp: {confirm_destructive: ask}", `mcp.confirm_destructive must be one of elicit, require_confirm_argument, off, got "ask"`},
		{"bad key confirm policy", "auth: {keys: [{name: a, key_env: KA, confirm_destructive: never}]}", `auth.keys[0] ("a"): confirm_destructive must be one of`},
		{"confirm outlives the session", "mcp: {confirm_timeout: 5m}\nlimits: {mcp_session_idle: 5m}", "mcp.confirm_timeout (5m0s) must be shorter than limits.mcp_session_idle (5m0s)"},
		{"confirm outlives the default session", "mcp: {confirm_timeout: 11m}", "must be shorter than limits.mcp_session_idle (10m0s)"},
		{"unknown mcp key", "mcp: {expose_core: true}", `key "expose_core" in .mcp is unknown`},
		{"bad trusted proxy", "auth: {trusted_proxies: [10.0.0.0/8, 10.0.0.0/33]}", "auth.trusted_proxies[1]: want an address or CIDR prefix such as 10.0.0.0/8, got \"10.0.0.0/33\""},
		{"every address a proxy", "auth: {trusted_proxies: [10.0.0.0/8, 0.0.0.0/0]}", `auth.trusted_proxies[1]: "0.0.0.0/0" trusts every address`},
		{"every IPv6 address a proxy", "auth: {trusted_proxies: ['::/0']}", "trusts every address"},
		{"assigned network not a prefix", "auth: {assigned_networks: ['fd00::1']}", `auth.assigned_networks[0]: want an IPv6 CIDR prefix such as fd00:10:244::/56, got "fd00::1"`},
		{"assigned network IPv4", "auth: {assigned_networks: ['fd00::/56', 10.244.0.0/16]}", `auth.assigned_networks[1]: "10.244.0.0/16" is not IPv6`},
		{"assigned network IPv4-mapped", "auth: {assigned_networks: ['::ffff:10.0.0.0/104']}", "is not IPv6"},
		{"assigned network the internet", "auth: {assigned_networks: ['::/0']}", "wider than one organisation's allocation"},
		{"assigned network wider than a /32", "auth: {assigned_networks: ['2001:db8::/31']}", "wider than one organisation's allocation"},
		{"assigned network wider than fc00::/7", "auth: {assigned_networks: ['fc00::/6']}", "wider than one organisation's allocation"},
		{"unknown forwarding header", "auth: {forwarded_header: x-real-ip}", "auth.forwarded_header: want x-forwarded-for or forwarded, got \"x-real-ip\""},
		// A pace of milliseconds lists, pings or reads the store back to
		// back: "5ms" written for "5m".
		{"an upstream listed every 5ms", "upstreams: [{name: a, url: 'http://a/mcp'}, {name: b, url: 'http://b/mcp', refresh: 5ms}]", "upstreams[1].refresh must be at least 1s (0 takes the default), got 5ms"},
		{"an upstream pinged every 1ns", "upstreams: [{name: a, url: 'http://a/mcp', health_interval: 1ns}]", "upstreams[0].health_interval must be at least 1s (0 takes the default), got 1ns"},
		{"learning's store read every 999ms", "learning: {refresh: 999ms}", "learning.refresh must be at least 1s (0 takes the default), got 999ms"},
		{"negative sessions", "limits: {mcp_max_sessions: -5}", "limits.mcp_max_sessions must not be negative (0 takes the default), got -5"},
		{"negative sessions per key", "limits: {mcp_max_sessions_per_key: -1}", "limits.mcp_max_sessions_per_key must not be negative"},
		{"negative idle", "limits: {mcp_session_idle: -1m}", `key "limits.mcp_session_idle": want a duration such as "2s", got "-1m"`},
		{"duration as a number", "upstreams: [{name: a, url: 'http://a/mcp', timeout: 5}]", `key "upstreams.timeout": want a duration such as "2s", got 5`},
		{"negative burst", "limits: {search_burst: -3}", "limits.search_burst must not be negative"},
		{"negative result bytes", "limits: {upstream_max_result_bytes: -1}", "limits.upstream_max_result_bytes must not be negative"},
		{"negative budget", "limits: {upstream_result_budget_bytes: -1}", "limits.upstream_result_budget_bytes must not be negative"},
		{"search rate below -1", "limits: {search_rate: -0.5}", "limits.search_rate must be -1 (no limit) or more, got -0.5"},
		{"handshake rate below -1", "limits: {tls_handshake_rate: -2}", "limits.tls_handshake_rate must be -1 (no limit) or more, got -2"},
		{"negative handshake burst", "limits: {tls_handshake_burst: -1}", "limits.tls_handshake_burst must not be negative (0 takes the default), got -1"},
		{"connections below -1", "limits: {max_connections: -2}", "limits.max_connections must be -1 (no bound) or more, got -2"},
		{"connections per address below -1", "limits: {max_connections_per_address: -3}", "limits.max_connections_per_address must be -1 (no bound) or more, got -3"},
		// Past any pod's, and into overflow: memory_needed_bytes went negative.
		{"connections past the bound", "limits: {max_connections: 9000000000000000000}", "limits.max_connections must be at most 1000000, got 9000000000000000000"},
		{"a body budget past the bound", "limits: {request_body_budget_bytes: 68719476737}", "limits.request_body_budget_bytes must be at most 68719476736, got 68719476737"},
		{"a handshake rate past the bound", "limits: {tls_handshake_rate: 1e300}", "limits.tls_handshake_rate must be at most 1000000, got 1e+300"},
		{"a search burst past the bound", "limits: {search_burst: 1000001}", "limits.search_burst must be at most 1000000, got 1000001"},
		{"a body budget under /mcp's bodies", "limits: {request_body_budget_bytes: 65536}", "limits.request_body_budget_bytes must be -1 (no bound), 0 (the default) or at least 1048576, the largest body a route takes, got 65536"},
		{"a body budget below -1", "limits: {request_body_budget_bytes: -2}", "limits.request_body_budget_bytes must be -1"},
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

func TestHashedKeys(t *testing.T) {
	env := map[string]string{"OPS_KEY": "s3cret", "FILE_KEY": "s3cret\n", "BLANK_KEY": " \n"}
	getenv := func(k string) string { return env[k] }
	hex := strings.Repeat("ab", 32)
	tests := []struct {
		name    string
		keys    []Key
		wantErr string
	}{
		{"env", []Key{{Name: "ops", KeyEnv: "OPS_KEY", VisibleServers: []string{"gh"}}}, ""},
		{"hash", []Key{{Name: "ci", KeySHA256: hex}}, ""},
		{"empty env", []Key{{Name: "ops", KeyEnv: "NOPE"}}, `auth key "ops": environment variable NOPE is empty`},
		// A secret file's trailing newline: clients send the key trimmed.
		{"env with a newline", []Key{{Name: "ops", KeyEnv: "FILE_KEY", VisibleServers: []string{"gh"}}}, ""},
		{"blank env", []Key{{Name: "ops", KeyEnv: "BLANK_KEY"}}, `auth key "ops": environment variable BLANK_KEY is empty`},
	}
	for _, tt := range tests {
		f := &File{Auth: Auth{Keys: tt.keys}}
		keys, err := f.HashedKeys(getenv)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("%s: error = %v, want %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil || len(keys) != 1 || keys[0].Name != tt.keys[0].Name {
			t.Fatalf("%s: HashedKeys = %+v, %v", tt.name, keys, err)
		}
		if tt.keys[0].KeyEnv != "" && (keys[0].Hash != access.HashSecret("s3cret") || keys[0].Visibility.Servers[0] != "gh") {
			t.Errorf("%s: key = %+v", tt.name, keys[0])
		}
	}
}

// TestSecrets: secrets from the environment are trimmed, as bearer tokens
// are when presented; set but blank is an error, and so is a list with an
// empty entry, which read "," as no keys at all and served without
// authentication.
func TestSecrets(t *testing.T) {
	tests := []struct {
		name, value string
		secret      string
		list        []string
		err         string // of Secret
		listErr     string // of List
	}{
		{"unset", "", "", nil, "", ""},
		{"plain", "k1", "k1", []string{"k1"}, "", ""},
		{"a file's trailing newline", "k1\n", "k1", []string{"k1"}, "", ""},
		{"blank", " \n", "", nil, "is set but blank", "entry 1 of 1 is empty"},
		{"a list", " k1 , k2 ", "k1 , k2", []string{"k1", "k2"}, "", ""},
		{"a comma alone", ",", ",", nil, "", "entry 1 of 2 is empty"},
		{"an empty entry", "k1,,k2", "k1,,k2", nil, "", "entry 2 of 3 is empty"},
		{"a trailing comma", "k1,", "k1,", nil, "", "entry 2 of 2 is empty"},
		// No client could present it, and no header carry it.
		{"a file of two lines", "k1\nk2\n", "", nil, "holds a newline or a control character", "entry 1 of 1 holds a newline"},
		{"a tab inside", "k1\tk2", "k1\tk2", []string{"k1\tk2"}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv := func(string) string { return tt.value }
			secret, err := Secret(getenv, "V")
			if secret != tt.secret || (err == nil) != (tt.err == "") || err != nil && !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Secret = %q, %v; want %q, error %q", secret, err, tt.secret, tt.err)
			}
			list, err := List(getenv, "V", "keys")
			if !slices.Equal(list, tt.list) || (err == nil) != (tt.listErr == "") || err != nil && !strings.Contains(err.Error(), tt.listErr) {
				t.Errorf("List = %q, %v; want %q, error %q", list, err, tt.list, tt.listErr)
			}
			if err != nil && strings.Contains(err.Error(), "k1") {
				t.Errorf("the error quotes the secret: %v", err)
			}
		})
	}
}

// The first Load uses the file parsed at start-up; later ones read it
// afresh, so a rebuild sees an edit.
func TestSourceParsesOnce(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(path, []byte("core: [b]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cat := filepath.Join(dir, "t.json")
	if err := os.WriteFile(cat, []byte(`{"servers":[{"name":"s","tools":[{"name":"a","description":"Tool a."},{"name":"b","description":"Tool b."}]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	src := &Source{Catalogs: []string{cat}, Path: path, Parsed: &File{Core: []string{"a"}}, Getenv: func(string) string { return "" }}
	for i, want := range []string{"a", "b", "b"} {
		p, err := src.Load()
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Core) != 1 || p.Core[0] != want || p.Catalog.Len() != 2 {
			t.Errorf("load %d: core %v, %d tools; want [%s], 2", i, p.Core, p.Catalog.Len(), want)
		}
	}
	def, err := (&Source{Getenv: func(string) string { return "" }}).Load()
	if err != nil || len(def.Core) == 0 || def.Catalog.Len() == 0 {
		t.Errorf("default Load = %+v, %v", def, err)
	}
}

// sha is a key_sha256 of the right form.
const sha = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

// A rebuild that reads the config file again names the sections edited
// since start-up that only a start applies, and none for an edit of core,
// templates or keys, which it applies.
func TestStartupChanges(t *testing.T) {
	const started = "core: [a]\nupstreams:\n  - {name: u, url: 'http://127.0.0.1:1/mcp'}\nlimits: {search_rate: 10}\nauth:\n  keys: [{name: k, key_sha256: " + sha + "}]\n  trusted_proxies: [10.0.0.0/8]\n"
	for _, tt := range []struct {
		name, now string
		want      []string
	}{
		{"unchanged", started, nil},
		{"core, templates and keys", "core: [b]\ntemplates: {t: {description: T, tools: [a]}}\nupstreams:\n  - {name: u, url: 'http://127.0.0.1:1/mcp'}\nlimits: {search_rate: 10}\nauth:\n  keys: [{name: other, key_sha256: " + sha + "}]\n  trusted_proxies: [10.0.0.0/8]\n", nil},
		{"an upstream's token", "core: [a]\nupstreams:\n  - {name: u, url: 'http://127.0.0.1:1/mcp', headers: {Authorization: Bearer x}}\nlimits: {search_rate: 10}\nauth:\n  keys: [{name: k, key_sha256: " + sha + "}]\n  trusted_proxies: [10.0.0.0/8]\n", []string{"upstreams"}},
		{"every start-up section", "core: [a]\nlimits: {search_rate: 20}\nauth:\n  keys: [{name: k, key_sha256: " + sha + "}]\n  forwarded_header: forwarded\nembedding: {timeout: 5s}\nsearch: {query_timeout: 1s}\nmcp: {expose: core_and_meta}\nlearning: {enabled: false}\n",
			[]string{"auth.trusted_proxies", "auth.forwarded_header", "embedding", "search", "upstreams", "limits", "mcp", "learning"}},
		{"assigned networks", started + "  assigned_networks: ['fd00:10:244::/56']\n", []string{"auth.assigned_networks"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			was, err := Parse("c.yaml", []byte(started))
			if err != nil {
				t.Fatal(err)
			}
			now, err := Parse("c.yaml", []byte(tt.now))
			if err != nil {
				t.Fatal(err)
			}
			if got := now.StartupChanges(was); !slices.Equal(got, tt.want) {
				t.Errorf("StartupChanges = %q, want %q", got, tt.want)
			}
		})
	}
}

// Every key of the config file is either read again by a rebuild (core,
// templates, auth.keys) or a start-up section StartupChanges compares: a
// section added later cannot be edited, and ignored, without a word.
func TestStartupSectionsCoverFile(t *testing.T) {
	covered := map[string]bool{"core": true, "templates": true, "auth.keys": true}
	for _, s := range startupSections {
		covered[s.name] = true
	}
	keys := func(prefix string, typ reflect.Type) []string {
		var out []string
		for i := range typ.NumField() {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			out = append(out, prefix+name)
		}
		return out
	}
	for _, k := range keys("", reflect.TypeFor[File]()) {
		if k == "auth" {
			for _, a := range keys("auth.", reflect.TypeFor[Auth]()) {
				if !covered[a] {
					t.Errorf("config key %s is neither read again nor compared by StartupChanges", a)
				}
			}
			continue
		}
		if !covered[k] {
			t.Errorf("config key %s is neither read again nor compared by StartupChanges", k)
		}
	}
}

// The first Load reports no change; a later one, of the file edited,
// names what changed.
func TestSourceReportsStartupChanges(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	cat := filepath.Join(dir, "t.json")
	if err := os.WriteFile(cat, []byte(`{"servers":[{"name":"s","tools":[{"name":"a","description":"Tool a."}]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	write := func(text string) {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("limits: {search_rate: 10}\n")
	parsed, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	src := &Source{Catalogs: []string{cat}, Path: path, Parsed: parsed, Getenv: func(string) string { return "" }}
	for i, step := range []struct {
		file string
		want []string
	}{
		{"", nil}, // the start-up's parse
		{"limits: {search_rate: 10}\ncore: [a]\n", nil},
		{"limits: {search_rate: 20}\n", []string{"limits"}},
		{"limits: {search_rate: 10}\n", nil}, // edited back
	} {
		if step.file != "" {
			write(step.file)
		}
		p, err := src.Load()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(p.StartupChanges, step.want) {
			t.Errorf("load %d: StartupChanges %q, want %q", i, p.StartupChanges, step.want)
		}
	}
}

// TestPrefixLists: the address lists parse to their prefixes, a bare
// trusted address as its own /32 or /128, an assigned network masked.
func TestPrefixLists(t *testing.T) {
	f, err := Parse("c.yaml", []byte("auth:\n  trusted_proxies: [10.1.2.3/8, 192.0.2.1, '::ffff:10.0.0.0/104', '2001:db8::/32']\n"+
		"  assigned_networks: ['fd00:10:244::1/56', 'fc00::/7', '2001:db8::/32', '2001:db8:1:2::/64']\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		got  []netip.Prefix
		want string
	}{
		{"Proxies", f.Auth.Proxies(), "[10.0.0.0/8 192.0.2.1/32 10.0.0.0/8 2001:db8::/32]"},
		{"Assigned", f.Auth.Assigned(), "[fd00:10:244::/56 fc00::/7 2001:db8::/32 2001:db8:1:2::/64]"},
	} {
		if fmt.Sprint(tt.got) != tt.want {
			t.Errorf("%s() = %v, want %s", tt.name, tt.got, tt.want)
		}
	}
}
