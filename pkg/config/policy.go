package config

import (
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/catalog"
)

// Policy is what one build reads: the catalog, and from the config file
// the core whitelist, the templates and the API keys (hashed). Package
// search builds it (as search.Setup).
type Policy struct {
	Catalog *catalog.Catalog
	// Core tools are appended to every search answer (source "core").
	Core []string
	// Templates are named tool sets returned whole, without retrieval.
	Templates map[string]Template
	// Keys, when any, are required on every search.
	Keys []access.Key
	// StartupChanges names the config file's sections that a rebuild read
	// changed since start-up, which apply only at the next start
	// (File.StartupChanges).
	StartupChanges []string
}

// Source says where each build's catalog and policy come from. Load reads
// them afresh on every call, so a rebuild picks up an edited file; the
// file parsed at start-up (Parsed) serves the first call instead of being
// read again. Use a Source by pointer.
type Source struct {
	Catalogs []string // catalog files; none: the embedded default catalog
	Server   string   // the server of a file that is a bare tools/list
	Path     string   // config file; "" for none
	Parsed   *File    // Path as parsed at start-up, if it was
	Getenv   func(string) string
	// Upstreams returns the tools live upstreams offer now; nil: none.
	Upstreams func() []catalog.Part

	used atomic.Bool // Parsed has served its one build
}

// Where names the config file for error messages.
func (s *Source) Where() string {
	if s.Path == "" {
		return "the embedded default config"
	}
	return s.Path
}

// Load reads the catalog files (or the embedded default), joins what the
// upstreams offer, and reads the config file's policy over them.
func (s *Source) Load() (*Policy, error) {
	// The embedded demo catalog serves only when nothing else is configured.
	useDefault := len(s.Catalogs) == 0 && s.Upstreams == nil
	var parts []catalog.Part
	var err error
	if useDefault {
		var p catalog.Part
		p, err = catalog.DefaultPart()
		parts = []catalog.Part{p}
	} else {
		parts, err = catalog.ReadParts(s.Catalogs, s.Server)
	}
	if err != nil {
		return nil, err
	}
	if s.Upstreams != nil {
		parts = append(parts, s.Upstreams()...)
	}
	cat, err := catalog.New(parts)
	if err != nil {
		return nil, err
	}
	var f *File
	var changed []string
	switch {
	case s.Parsed != nil && !s.used.Swap(true):
		f = s.Parsed
	case s.Path != "":
		if f, err = Load(s.Path); err == nil && s.Parsed != nil {
			changed = f.StartupChanges(s.Parsed)
		}
	case useDefault:
		f, err = Default() // the default config names the default catalog's tools
	default:
		f = &File{}
	}
	if err != nil {
		return nil, err
	}
	p := f.Policy(cat)
	p.StartupChanges = changed
	if p.Keys, err = f.HashedKeys(s.Getenv); err != nil {
		return nil, fmt.Errorf("config %s: %w", s.Where(), err)
	}
	// Keys from the environment see every tool.
	secrets, err := List(s.Getenv, "TOOLSEARCH_API_KEYS", "keys")
	if err != nil {
		return nil, err
	}
	for i, secret := range secrets {
		p.Keys = append(p.Keys, access.Key{Name: fmt.Sprintf("env-%d", i+1), Hash: access.HashSecret(secret)})
	}
	return p, nil
}

// Policy is the file's core whitelist and templates over cat, without
// keys (see HashedKeys).
func (f *File) Policy(cat *catalog.Catalog) *Policy {
	return &Policy{Catalog: cat, Core: f.Core, Templates: f.Templates}
}

// HashedKeys are the file's API keys as the service keeps them: hashes,
// read from the environment (key_env) or given (key_sha256).
func (f *File) HashedKeys(getenv func(string) string) ([]access.Key, error) {
	var keys []access.Key
	for _, k := range f.Auth.Keys {
		key := access.Key{Name: k.Name, Visibility: access.Visibility{Tools: k.VisibleTools, Servers: k.VisibleServers}, Confirm: k.ConfirmDestructive}
		if k.KeyEnv != "" {
			secret, _ := Secret(getenv, k.KeyEnv)
			if secret == "" {
				return nil, fmt.Errorf("auth key %q: environment variable %s is empty", k.Name, k.KeyEnv)
			}
			key.Hash = access.HashSecret(secret)
		} else {
			var err error
			if key.Hash, err = access.ParseHash(k.KeySHA256); err != nil {
				return nil, fmt.Errorf("auth key %q: %w", k.Name, err)
			}
		}
		keys = append(keys, key)
	}
	return keys, nil
}

// DefaultPolicy is the embedded default catalog under the embedded
// default config, as `toolsearch serve` runs with nothing configured.
func DefaultPolicy() (*Policy, error) {
	cat, err := catalog.Default()
	if err != nil {
		return nil, err
	}
	f, err := Default()
	if err != nil {
		return nil, err
	}
	return f.Policy(cat), nil
}

// Secret is the secret in environment variable name without the
// whitespace around it: a bearer token is compared as clients send it,
// trimmed, so a secret file's trailing newline (kubectl create secret
// --from-file) made a key no client could ever present. Set but blank is
// an error: a secret was meant, and there is none.
// A newline or control character inside it is an error too: no header
// can carry it (a key file of two lines was a key nobody could present,
// and an upstream's header failed every request).
func Secret(getenv func(string) string, name string) (string, error) {
	raw := getenv(name)
	secret := strings.TrimSpace(raw)
	switch {
	case raw != "" && secret == "":
		return "", fmt.Errorf("environment variable %s is set but blank", name)
	case strings.ContainsFunc(secret, control):
		return "", fmt.Errorf("environment variable %s holds a newline or a control character (a file of more than one line?)", name)
	}
	return secret, nil
}

// control reports a control character other than a tab, which no header
// value, and no sensible file name, holds.
func control(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }

// List is the comma-separated entries (what: "keys", "files") of
// environment variable name, each trimmed. An empty entry is an error:
// "${A},${B}" with B unset read as one entry, and "," as none at all,
// which served without authentication (TOOLSEARCH_API_KEYS) or served
// the embedded demo catalog in place of the operator's
// (TOOLSEARCH_CATALOG).
func List(getenv func(string) string, name, what string) ([]string, error) {
	raw := getenv(name)
	if raw == "" {
		return nil, nil
	}
	entries := strings.Split(raw, ",")
	out := make([]string, 0, len(entries))
	for i, e := range entries {
		switch e = strings.TrimSpace(e); {
		case e == "":
			return nil, fmt.Errorf("environment variable %s: entry %d of %d is empty; it takes comma-separated %s (was a variable in its template unset?)", name, i+1, len(entries), what)
		case strings.ContainsFunc(e, control):
			return nil, fmt.Errorf("environment variable %s: entry %d of %d holds a newline or a control character (a file of more than one line?)", name, i+1, len(entries))
		}
		out = append(out, e)
	}
	return out, nil
}
