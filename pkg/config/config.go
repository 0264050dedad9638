// Package config reads the service's YAML configuration file: the core
// whitelist, template manifests, API keys with their visibility, and
// embedding and search settings.
package config

import (
	"bytes"
	"cmp"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/internal/jsonerr"
	"github.com/toolsearch/toolsearch/pkg/internal/readfile"
	"github.com/toolsearch/toolsearch/pkg/jsonkeys"
	"github.com/toolsearch/toolsearch/pkg/redact"
	"github.com/toolsearch/toolsearch/pkg/yamljson"
)

// File is the configuration file. Every section is optional.
type File struct {
	// Core tools are added to every search answer so that a caller can
	// orient itself when retrieval misses.
	Core []string `json:"core"`
	// Templates are named tool sets returned whole, without retrieval.
	Templates map[string]Template `json:"templates"`
	Auth      Auth                `json:"auth"`
	Embedding Embedding           `json:"embedding"`
	Search    Search              `json:"search"`
	// Upstreams are live MCP servers whose tools join the catalog.
	Upstreams []Upstream `json:"upstreams"`
	Limits    Limits     `json:"limits"`
	MCP       MCP        `json:"mcp"`
	Learning  Learning   `json:"learning"`
}

// Learning configures learning from use (package learn). It is on by
// default, with its evidence in a file beside the process.
type Learning struct {
	// Enabled turns learning off when false; on when absent.
	Enabled *bool `json:"enabled"`
	// Store is "file" (the default: a bbolt file at Path, no set-up) or
	// "postgres" (shared by replicas; the connection string comes from the
	// environment variable DSNEnv, TOOLSEARCH_LEARNING_DSN by default, so
	// no password sits in a file).
	Store  string `json:"store"`
	Path   string `json:"path"`
	DSNEnv string `json:"dsn_env"`
	// Refresh is how often the merged tally is read (1m when 0); a change
	// rebuilds the index.
	Refresh Duration `json:"refresh"`
	// HalfLife and Retention: evidence halves every HalfLife (30 days when
	// 0) and is deleted when not renewed for Retention (90 days when 0).
	HalfLife  Duration `json:"half_life"`
	Retention Duration `json:"retention"`
	// MinCallers, MinSessions and CallerCap: a term counts for a tool once
	// MinCallers distinct callers (2) have taught it over MinSessions
	// sessions (3), each caller counting for at most CallerCap sessions
	// (3). A deployment whose every user shares one API key sets
	// min_callers to 1, knowing that one caller can then teach alone.
	MinCallers  int     `json:"min_callers"`
	MinSessions float64 `json:"min_sessions"`
	CallerCap   float64 `json:"caller_cap"`
}

// SearchIDLifetime is how long a search answer's search_id can be
// reported on (feedback). The process that answered the search holds
// it, so a deployment of several replicas sends a caller to the same
// one for longer (deploy/base/service.yaml's affinity).
const SearchIDLifetime = 15 * time.Minute

// DefaultLearningPath is where the file store is kept when the config
// names none: beside the process; DefaultLearningDSNEnv, the variable the
// PostgreSQL store's connection string is read from.
const (
	DefaultLearningPath   = "toolsearch-learned.db"
	DefaultLearningDSNEnv = "TOOLSEARCH_LEARNING_DSN"
)

// On reports whether learning is on.
func (l Learning) On() bool { return l.Enabled == nil || *l.Enabled }

// MCP configures the MCP endpoint.
type MCP struct {
	// Expose is what tools/list offers: "meta" (the search meta-tools;
	// the default) or "core_and_meta" (the core whitelist's tools as
	// themselves too, callable directly).
	Expose string `json:"expose"`
	// ConfirmDestructive is the policy for call_tool calls to destructive
	// tools: elicit (the default), require_confirm_argument or off. A key's
	// own confirm_destructive wins.
	ConfirmDestructive string `json:"confirm_destructive"`
	// ConfirmTimeout bounds the wait for a user's answer; 2m when 0. It
	// must be shorter than limits.mcp_session_idle.
	ConfirmTimeout Duration `json:"confirm_timeout"`
}

// The exposure modes of the MCP endpoint.
const (
	ExposeMeta        = "meta"
	ExposeCoreAndMeta = "core_and_meta"
)

// Limits bound what callers can make the service hold or do. Zero values
// take the defaults documented in docs/configuration.md.
type Limits struct {
	// MCP sessions: closed after this long without a request, and at most
	// this many in all and per API key (the idlest is closed for a new one).
	MCPSessionIdle       Duration `json:"mcp_session_idle"`
	MCPMaxSessions       int      `json:"mcp_max_sessions"`
	MCPMaxSessionsPerKey int      `json:"mcp_max_sessions_per_key"`
	// Search requests (HTTP and MCP) per second per API key, with bursts
	// of SearchBurst; anonymous callers share a budget per client address.
	// -1 turns the limit off.
	SearchRate  float64 `json:"search_rate"`
	SearchBurst int     `json:"search_burst"`
	// What live upstreams may send back: one answer (a call's result, a
	// page of tools) at most UpstreamMaxResultBytes (4 MiB when 0), and
	// all answers being read at once at most UpstreamResultBudgetBytes (32
	// MiB when 0). A call over either gets an isError naming the limit.
	UpstreamMaxResultBytes    int64 `json:"upstream_max_result_bytes"`
	UpstreamResultBudgetBytes int64 `json:"upstream_result_budget_bytes"`
	// MaxConnections bounds the API listener's open connections
	// (DefaultMaxConnections when 0, none when -1); past it, new ones wait
	// to be accepted. Each costs up to about 28 KiB (a slow body being
	// read), so the bound is also one on memory.
	MaxConnections int `json:"max_connections"`
	// RequestBodyBudgetBytes bounds the request bodies being read and
	// handled at once, over every route (16 MiB when 0, none when -1),
	// and a quarter of it a caller's; past either a request is answered
	// 503 busy. Each route bounds its own
	// body, but a body is held while it arrives, so without this many
	// slow clients held as many bodies as they liked.
	RequestBodyBudgetBytes int64 `json:"request_body_budget_bytes"`
	// MaxConnectionsPerAddress bounds the API connections one client
	// address (an IPv6 one's /64) holds open at once: a quarter of
	// MaxConnections (of its default when that is -1) when 0, none when
	// -1. Past it, new ones from that address are reset as accepted.
	MaxConnectionsPerAddress int `json:"max_connections_per_address"`
	// TLS connections per second per client address (an IPv6 one's /64,
	// its /48 sixteen times that), with bursts of TLSHandshakeBurst, when
	// the API serves TLS; 50 and 100 when 0, -1 turns the limit off. A
	// handshake costs the server a signature, a refused connection an
	// accept and a close.
	TLSHandshakeRate  float64 `json:"tls_handshake_rate"`
	TLSHandshakeBurst int     `json:"tls_handshake_burst"`
}

// MinRequestBodyBudgetBytes is the largest body a route takes (/mcp's):
// a smaller budget would refuse such a body forever.
// DefaultRequestBodyBudgetBytes is limits.request_body_budget_bytes when
// unset (httpapi.DefaultBodyBudgetBytes).
const (
	MinRequestBodyBudgetBytes     = 1 << 20
	DefaultRequestBodyBudgetBytes = 16 << 20
)

// DefaultMaxConnections is limits.max_connections when unset: room for
// the MCP sessions' event streams (1,000 at most by default) and as many
// more requests, at most about 56 MiB.
const DefaultMaxConnections = 2048

// ConnectionBound is limits.max_connections with its default: -1 for
// none.
func (l Limits) ConnectionBound() int { return cmp.Or(l.MaxConnections, DefaultMaxConnections) }

// Upstream is a live MCP server (Streamable HTTP). Header values may name
// environment variables as ${VAR}, so tokens stay out of the file.
type Upstream struct {
	Name            string            `json:"name"`
	URL             string            `json:"url"`
	Headers         map[string]string `json:"headers"`
	Refresh         Duration          `json:"refresh"`
	Timeout         Duration          `json:"timeout"`
	BreakerFailures int               `json:"breaker_failures"`
	BreakerCooldown Duration          `json:"breaker_cooldown"`
	HealthInterval  Duration          `json:"health_interval"`
	TLS             *TLS              `json:"tls"`
}

// TLS is the TLS of a server toolsearch is a client of, an upstream or
// the embedding provider (tlsfiles.Config): the CAs that check its
// certificate, the client certificate it asks for, the name its
// certificate carries. Paths are read as given, from the working
// directory when relative, as learning.path is.
type TLS struct {
	CAFile     string `json:"ca_file"`
	CertFile   string `json:"cert_file"`
	KeyFile    string `json:"key_file"`
	ServerName string `json:"server_name"`
}

// Template is a named workflow's tool set.
type Template struct {
	Description string   `json:"description"`
	Tools       []string `json:"tools"`
}

// Auth lists the API keys accepted by the search endpoints.
type Auth struct {
	Keys []Key `json:"keys"`
	// TrustedProxies are the addresses (CIDR prefixes) of the proxies in
	// front of the service, an ingress say: for a request from one of
	// them, the anonymous caller is the address X-Forwarded-For names
	// last that is not a trusted proxy. Without them every caller behind
	// an ingress is the ingress: one throttle budget, and one caller to
	// learning, which then never hears from two.
	TrustedProxies []string `json:"trusted_proxies"`
	// ForwardedHeader is the header in which the trusted proxies name
	// whom they heard from: x-forwarded-for (the default) or forwarded
	// (RFC 7239's for=). Only one can be believed: a proxy that writes
	// one passes the other on as the client sent it.
	ForwardedHeader string `json:"forwarded_header"`
	// AssignedNetworks are IPv6 networks (CIDR prefixes) whose addresses
	// are given out one to a client, such as a Kubernetes cluster's pod
	// range: each address in them is a client of its own. Any other IPv6
	// address is counted by its /64, which one client is routed and picks
	// addresses in freely, and its /64s by their /48, a site's; a
	// cluster routes each node's pods a /64, so without this every pod of
	// a node is one client to the per-address limits, and a cluster in
	// one /48 one site.
	AssignedNetworks []string `json:"assigned_networks"`
}

// The values of Auth.ForwardedHeader.
const (
	HeaderXForwardedFor = "x-forwarded-for"
	HeaderForwarded     = "forwarded"
)

// Proxies parses TrustedProxies (checked by Parse).
func (a Auth) Proxies() []netip.Prefix {
	out := make([]netip.Prefix, 0, len(a.TrustedProxies))
	for _, s := range a.TrustedProxies {
		if p, err := parsePrefix(s); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// uniqueLocal is fc00::/7, IPv6's private addresses (RFC 4193).
var uniqueLocal = netip.MustParsePrefix("fc00::/7")

// Assigned parses AssignedNetworks (checked by Parse).
func (a Auth) Assigned() []netip.Prefix {
	out := make([]netip.Prefix, 0, len(a.AssignedNetworks))
	for _, s := range a.AssignedNetworks {
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
		}
	}
	return out
}

// parsePrefix reads a CIDR prefix, or a bare address as its own /32 or
// /128.
func parsePrefix(s string) (netip.Prefix, error) {
	if a, err := netip.ParseAddr(s); err == nil {
		return netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	if p.Addr().Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	return p.Masked(), nil
}

// Key is one API key and what it may see. The key itself never appears in
// the file: it is read from an environment variable (KeyEnv) or given as
// its SHA-256 (KeySHA256), so the file can live in a ConfigMap.
type Key struct {
	Name           string   `json:"name"`
	KeyEnv         string   `json:"key_env"`
	KeySHA256      string   `json:"key_sha256"`
	VisibleTools   []string `json:"visible_tools"`
	VisibleServers []string `json:"visible_servers"`
	// ConfirmDestructive overrides mcp.confirm_destructive for this key.
	ConfirmDestructive string `json:"confirm_destructive"`
}

// Embedding holds embedder settings; flags and environment variables win
// over them.
type Embedding struct {
	Provider   string   `json:"provider"`
	BaseURL    string   `json:"base_url"`
	Model      string   `json:"model"`
	Dimensions int      `json:"dimensions"`
	BatchSize  int      `json:"batch_size"`
	APIType    string   `json:"api_type"`
	APIVersion string   `json:"api_version"`
	Timeout    Duration `json:"timeout"`
	// TLS is the provider's (openai only): set in the file alone, as
	// upstreams' is.
	TLS *TLS `json:"tls"`
}

// Search holds ranking settings.
type Search struct {
	QueryTimeout Duration `json:"query_timeout"`
}

// Duration is a time.Duration written as "2s" or "500ms".
type Duration time.Duration

// UnmarshalJSON reads a Go duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	_ = json.Unmarshal(b, &s)
	v, err := time.ParseDuration(s)
	if err != nil || v < 0 {
		// A type error, so that encoding/json adds the key's path.
		return &json.UnmarshalTypeError{Value: redact.Clip(string(b), redact.MaxEcho, "…"), Type: durationType}
	}
	*d = Duration(v)
	return nil
}

var durationType = reflect.TypeFor[Duration]()

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

//go:embed default.yaml
var defaultYAML []byte

// Default is the configuration used with the embedded default catalog when
// no file is given.
func Default() (*File, error) { return Parse("embedded:default-config", defaultYAML) }

// maxFileBytes bounds a config file: keys, templates and upstreams take
// kilobytes.
const maxFileBytes = 4 << 20

// Load reads and checks the file at path.
func Load(path string) (*File, error) {
	data, err := readfile.Read(path, maxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return Parse(path, data)
}

// fileRules are the keys a config file may hold, where.
var fileRules = jsonkeys.Typed[File]()

// Parse decodes a configuration strictly: an unknown key is an error that
// names it, so a typo ("cores:") cannot silently disable a setting.
func Parse(source string, data []byte) (*File, error) {
	j, err := yamljson.ToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", source, err)
	}
	f := &File{}
	if len(bytes.TrimSpace(j)) == 0 || string(bytes.TrimSpace(j)) == "null" {
		return f, nil
	}
	// encoding/json names an unknown key without saying where it is,
	// and matches keys in any case: Typed says where, exactly.
	if err := jsonkeys.Scan(j, fileRules); err != nil {
		return nil, fmt.Errorf("config %s: %w", source, err)
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	if err := dec.Decode(f); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			m, _ := jsonerr.Type(te, j)
			if te.Type == durationType {
				m.Want = `a duration such as "2s"`
			}
			if m.Field == "" {
				return nil, fmt.Errorf("config %s: want a mapping of sections (core, templates, auth, ...), got %s", source, m.Got)
			}
			return nil, fmt.Errorf("config %s: key %q: want %s, got %s", source, m.Field, m.Want, m.Got)
		}
		return nil, fmt.Errorf("config %s: %w", source, err)
	}
	if err := f.check(); err != nil {
		return nil, fmt.Errorf("config %s: %w", source, err)
	}
	return f, nil
}

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// check validates what can be checked without the catalog.
func (f *File) check() error {
	names := make([]string, 0, len(f.Templates))
	for name := range f.Templates {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		switch {
		case strings.TrimSpace(name) == "":
			return errors.New("templates: a template has an empty name")
		case len(f.Templates[name].Tools) == 0:
			return fmt.Errorf("templates.%s: no tools", name)
		}
	}
	if f.Auth.Keys != nil && len(f.Auth.Keys) == 0 {
		// As for a key's visibility lists: an empty list reads as none, and
		// without TOOLSEARCH_API_KEYS the service then serves anyone.
		return errors.New("auth.keys is empty, which would read as no keys (anyone served, unless TOOLSEARCH_API_KEYS has some): name keys, or leave it out")
	}
	seen := map[string]bool{}
	for i, k := range f.Auth.Keys {
		where := fmt.Sprintf("auth.keys[%d] (%q)", i, k.Name)
		switch {
		case k.Name == "":
			return fmt.Errorf("auth.keys[%d]: name is required", i)
		case seen[k.Name]:
			return fmt.Errorf("%s: name repeated", where)
		case (k.KeyEnv == "") == (k.KeySHA256 == ""):
			return fmt.Errorf("%s: set exactly one of key_env and key_sha256", where)
		case k.KeySHA256 != "" && !sha256Hex.MatchString(k.KeySHA256):
			return fmt.Errorf("%s: key_sha256 must be 64 lower-case hex digits", where)
		case k.ConfirmDestructive != "" && !slices.Contains(access.ConfirmPolicies, k.ConfirmDestructive):
			return fmt.Errorf("%s: confirm_destructive must be one of %s, got %q", where, strings.Join(access.ConfirmPolicies, ", "), k.ConfirmDestructive)
		// An empty list reads as no list, a key that sees every tool:
		// "visible_servers: []" (a template's list that came out empty)
		// granted all where none was meant.
		case k.VisibleServers != nil && len(k.VisibleServers) == 0:
			return fmt.Errorf("%s: visible_servers is empty, which would let the key see every tool: name servers, or leave it out", where)
		case k.VisibleTools != nil && len(k.VisibleTools) == 0:
			return fmt.Errorf("%s: visible_tools is empty, which would let the key see every tool: name tools, or leave it out", where)
		}
		seen[k.Name] = true
	}
	if p := f.Embedding.Provider; p != "" && p != "local" && p != "openai" {
		return fmt.Errorf("embedding.provider must be local or openai, got %q", p)
	}
	// Upstreams are checked by upstream.New, the one place that knows
	// what an upstream needs; serve names this file in its errors. Their
	// paces are the file's: a test of the package may list every 20ms.
	for i, u := range f.Upstreams {
		if err := cmp.Or(pace(fmt.Sprintf("upstreams[%d].refresh", i), u.Refresh),
			pace(fmt.Sprintf("upstreams[%d].health_interval", i), u.HealthInterval)); err != nil {
			return err
		}
	}
	if d := f.Embedding.Dimensions; d < 0 || d > 8192 { // embedding.MaxDimensions
		return fmt.Errorf("embedding.dimensions must be 0-8192, got %d", d)
	}
	if b := f.Embedding.BatchSize; b < 0 || b > 2048 {
		return fmt.Errorf("embedding.batch_size must be 1-2048, got %d", b)
	}
	for i, s := range f.Auth.TrustedProxies {
		p, err := parsePrefix(s)
		switch {
		case err != nil:
			return fmt.Errorf("auth.trusted_proxies[%d]: want an address or CIDR prefix such as 10.0.0.0/8, got %s", i, redact.Echo(s))
		case p.Bits() == 0:
			// Every address a proxy: any caller names its own address in
			// X-Forwarded-For, and each per-address limit is its to reset.
			return fmt.Errorf("auth.trusted_proxies[%d]: %s trusts every address, so any caller could choose the address it is limited by; name the proxies' own addresses", i, redact.Echo(s))
		}
	}
	for i, s := range f.Auth.AssignedNetworks {
		p, err := netip.ParsePrefix(s)
		switch {
		case err != nil:
			return fmt.Errorf("auth.assigned_networks[%d]: want an IPv6 CIDR prefix such as fd00:10:244::/56, got %s", i, redact.Echo(s))
		case !p.Addr().Is6() || p.Addr().Is4In6():
			return fmt.Errorf("auth.assigned_networks[%d]: %s is not IPv6; an IPv4 address is a client of its own already", i, redact.Echo(s))
		case p.Bits() < 32 && !uniqueLocal.Contains(p.Masked().Addr()) || p.Bits() < uniqueLocal.Bits():
			// Wider than a registry gives one organisation: it takes in
			// others' networks, whose holders pick any address in their
			// /64s, each then a client with a budget of its own.
			return fmt.Errorf("auth.assigned_networks[%d]: %s is wider than one organisation's allocation (a /32) outside fc00::/7, so it takes in clients that choose their own addresses; name the cluster's own ranges", i, redact.Echo(s))
		}
	}
	switch h := f.Auth.ForwardedHeader; h {
	case "", HeaderXForwardedFor, HeaderForwarded:
	default:
		return fmt.Errorf("auth.forwarded_header: want %s or %s, got %s", HeaderXForwardedFor, HeaderForwarded, redact.Echo(h))
	}
	if err := f.Limits.check(); err != nil {
		return err
	}
	if err := f.Learning.check(); err != nil {
		return err
	}
	return f.MCP.check(time.Duration(f.Limits.MCPSessionIdle))
}

// check refuses a negative limit, which would otherwise take the default
// as 0 does: mcp_max_sessions: -5 served 1,000 sessions. Only
// search_rate, tls_handshake_rate, max_connections,
// max_connections_per_address and request_body_budget_bytes take -1, for
// none.
func (l Limits) check() error {
	for _, c := range []struct {
		key string
		v   int64
	}{
		{"mcp_max_sessions", int64(l.MCPMaxSessions)},
		{"mcp_max_sessions_per_key", int64(l.MCPMaxSessionsPerKey)},
		{"search_burst", int64(l.SearchBurst)},
		{"tls_handshake_burst", int64(l.TLSHandshakeBurst)},
		{"upstream_max_result_bytes", l.UpstreamMaxResultBytes},
		{"upstream_result_budget_bytes", l.UpstreamResultBudgetBytes},
	} {
		if c.v < 0 {
			return fmt.Errorf("limits.%s must not be negative (0 takes the default), got %d", c.key, c.v)
		}
	}
	if b, m := l.UpstreamResultBudgetBytes, l.UpstreamMaxResultBytes; b > 0 && b < m {
		// It was raised to one answer's bound without a word.
		return fmt.Errorf("limits.upstream_result_budget_bytes (%d) must be at least limits.upstream_max_result_bytes (%d): it holds every answer being read at once", b, m)
	}
	for _, c := range []struct {
		key string
		v   float64
	}{{"search_rate", l.SearchRate}, {"tls_handshake_rate", l.TLSHandshakeRate}} {
		if c.v < 0 && c.v != -1 {
			return fmt.Errorf("limits.%s must be -1 (no limit) or more, got %g", c.key, c.v)
		}
	}
	for _, c := range []struct {
		key string
		v   int
	}{{"max_connections", l.MaxConnections}, {"max_connections_per_address", l.MaxConnectionsPerAddress}} {
		if c.v < -1 {
			return fmt.Errorf("limits.%s must be -1 (no bound) or more, got %d", c.key, c.v)
		}
	}
	if b := l.RequestBodyBudgetBytes; b != 0 && b != -1 && b < MinRequestBodyBudgetBytes {
		return fmt.Errorf("limits.request_body_budget_bytes must be -1 (no bound), 0 (the default) or at least %d, the largest body a route takes, got %d", MinRequestBodyBudgetBytes, b)
	}
	return l.checkMost()
}

// Upper bounds of the limits: far past any pod's, and low enough that
// what the service works out from them (the memory rule's connections
// times 64 KiB, four times the body budget, a site's sixteen bursts)
// cannot overflow. max_connections: 9e18 made status' memory_needed_bytes
// negative.
const (
	maxLimitCount = 1_000_000 // connections, sessions, rates and bursts
	maxLimitBytes = 1 << 36   // 64 GiB: bodies and upstream answers
)

// checkMost refuses a limit past its upper bound.
func (l Limits) checkMost() error {
	for _, c := range []struct {
		key  string
		v    any // as the file gave it, an int, int64 or float64
		most int64
	}{
		{"mcp_max_sessions", l.MCPMaxSessions, maxLimitCount},
		{"mcp_max_sessions_per_key", l.MCPMaxSessionsPerKey, maxLimitCount},
		{"search_rate", l.SearchRate, maxLimitCount},
		{"search_burst", l.SearchBurst, maxLimitCount},
		{"tls_handshake_rate", l.TLSHandshakeRate, maxLimitCount},
		{"tls_handshake_burst", l.TLSHandshakeBurst, maxLimitCount},
		{"max_connections", l.MaxConnections, maxLimitCount},
		{"max_connections_per_address", l.MaxConnectionsPerAddress, maxLimitCount},
		{"request_body_budget_bytes", l.RequestBodyBudgetBytes, maxLimitBytes},
		{"upstream_max_result_bytes", l.UpstreamMaxResultBytes, maxLimitBytes},
		{"upstream_result_budget_bytes", l.UpstreamResultBudgetBytes, maxLimitBytes},
	} {
		var over bool
		switch v := c.v.(type) {
		case int:
			over = int64(v) > c.most
		case int64:
			over = v > c.most
		case float64:
			over = v > float64(c.most)
		}
		if over {
			return fmt.Errorf("limits.%s must be at most %d, got %v", c.key, c.most, c.v)
		}
	}
	return nil
}

func (l Learning) check() error {
	switch {
	case l.Store != "" && l.Store != "file" && l.Store != "postgres":
		return fmt.Errorf("learning.store must be file or postgres, got %q", l.Store)
	case l.Store != "postgres" && l.DSNEnv != "":
		return errors.New("learning.dsn_env is for store: postgres")
	case l.Store == "postgres" && l.Path != "":
		return errors.New("learning.path is for store: file")
	case l.MinCallers < 0 || l.MinSessions < 0 || l.CallerCap < 0:
		return errors.New("learning.min_callers, min_sessions and caller_cap must not be negative")
	case l.Refresh < 0 || l.HalfLife < 0 || l.Retention < 0:
		return errors.New("learning.refresh, half_life and retention must not be negative")
	}
	return pace("learning.refresh", l.Refresh)
}

// MinInterval is the shortest pace the file may set for work repeated for
// as long as the process runs: an upstream's listing and its pings, and
// reading learning's store. "5ms" written for "5m" listed an upstream
// back to back at a core's worth of CPU, and would have every replica
// query a shared database as fast as it answers.
const MinInterval = time.Second

// pace refuses a pace under MinInterval; 0 takes the default.
func pace(key string, d Duration) error {
	if d > 0 && time.Duration(d) < MinInterval {
		return fmt.Errorf("%s must be at least %s (0 takes the default), got %s", key, MinInterval, time.Duration(d))
	}
	return nil
}

// DefaultConfirmTimeout and DefaultSessionIdle are the MCP endpoint's
// defaults, here so that one can be checked against the other.
const (
	DefaultConfirmTimeout = 2 * time.Minute
	DefaultSessionIdle    = 10 * time.Minute
)

func (m MCP) check(idle time.Duration) error {
	if m.Expose != "" && m.Expose != ExposeMeta && m.Expose != ExposeCoreAndMeta {
		return fmt.Errorf("mcp.expose must be %s or %s, got %q", ExposeMeta, ExposeCoreAndMeta, m.Expose)
	}
	if p := m.ConfirmDestructive; p != "" && !slices.Contains(access.ConfirmPolicies, p) {
		return fmt.Errorf("mcp.confirm_destructive must be one of %s, got %q", strings.Join(access.ConfirmPolicies, ", "), p)
	}
	timeout := time.Duration(m.ConfirmTimeout)
	if timeout == 0 {
		timeout = DefaultConfirmTimeout
	}
	if idle == 0 {
		idle = DefaultSessionIdle
	}
	// The question travels on the session: a session that idled out while
	// its user was reading the question would lose the answer.
	if timeout >= idle {
		return fmt.Errorf("mcp.confirm_timeout (%s) must be shorter than limits.mcp_session_idle (%s)", timeout, idle)
	}
	return nil
}

// StartupChanges names the sections of f, the config file read again,
// that differ from was, the file the process started with, and that the
// process reads only at start-up (everything but core, templates and
// auth.keys): an operator who edits upstreams and sends SIGHUP is told,
// not left believing the edit took.
func (f *File) StartupChanges(was *File) []string {
	var out []string
	for _, s := range startupSections {
		if !reflect.DeepEqual(s.of(f), s.of(was)) {
			out = append(out, s.name)
		}
	}
	return out
}

// startupSections are the parts of File read only at start-up, by their
// keys in the file (TestStartupSectionsCoverFile).
var startupSections = []struct {
	name string
	of   func(*File) any
}{
	{"auth.trusted_proxies", func(f *File) any { return f.Auth.TrustedProxies }},
	{"auth.forwarded_header", func(f *File) any { return f.Auth.ForwardedHeader }},
	{"auth.assigned_networks", func(f *File) any { return f.Auth.AssignedNetworks }},
	{"embedding", func(f *File) any { return f.Embedding }},
	{"search", func(f *File) any { return f.Search }},
	{"upstreams", func(f *File) any { return f.Upstreams }},
	{"limits", func(f *File) any { return f.Limits }},
	{"mcp", func(f *File) any { return f.MCP }},
	{"learning", func(f *File) any { return f.Learning }},
}
