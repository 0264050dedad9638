package search

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/toolsearch/toolsearch/pkg/catalog"
)

// Setup is everything a build reads: the catalog and the policy over it.
// Every tool and server it names is checked against the catalog when it is
// built into a snapshot.
type Setup struct {
	Catalog *catalog.Catalog
	// Core tools are appended to every search answer (source "core").
	Core []string
	// Templates are named tool sets returned whole, without retrieval.
	Templates map[string]Template
	// Keys, when any, are required on every search.
	Keys []Key
}

// Template is a named workflow's tool set, in the order a caller needs it.
type Template struct {
	Description string   `json:"description"`
	Tools       []string `json:"tools"`
}

// Key is one accepted API key, stored only as its SHA-256.
type Key struct {
	Name       string
	Hash       [sha256.Size]byte
	Visibility Visibility // zero: sees every tool
}

// Visibility limits what a caller sees: the listed tools plus every tool of
// the listed servers. The zero value sees everything.
type Visibility struct {
	Tools   []string `json:"visible_tools,omitempty"`
	Servers []string `json:"visible_servers,omitempty"`
}

// IsZero reports whether v places no limit.
func (v Visibility) IsZero() bool { return len(v.Tools) == 0 && len(v.Servers) == 0 }

// visSet is a Visibility resolved against one catalog.
type visSet struct {
	all  bool
	rows []bool
}

func (v visSet) has(row int) bool { return v.all || v.rows[row] }

func (v visSet) and(o visSet) visSet {
	switch {
	case v.all:
		return o
	case o.all:
		return v
	}
	rows := make([]bool, len(v.rows))
	for i := range rows {
		rows[i] = v.rows[i] && o.rows[i]
	}
	return visSet{rows: rows}
}

// resolve returns the rows v allows, and the names it gives that the
// catalog does not have ("tool x", "server y").
func (v Visibility) resolve(cat *catalog.Catalog) (visSet, []string) {
	if v.IsZero() {
		return visSet{all: true}, nil
	}
	rows := make([]bool, cat.Len())
	var unknown []string
	for _, ref := range v.Tools {
		i, err := cat.Resolve(ref)
		if err != nil {
			unknown = append(unknown, "tool "+ref)
			continue
		}
		rows[i] = true
	}
	servers := map[string]bool{}
	for _, s := range v.Servers {
		servers[s] = true
	}
	found := map[string]bool{}
	for i, t := range cat.Tools() {
		if servers[t.Server] {
			rows[i] = true
			found[t.Server] = true
		}
	}
	for _, s := range v.Servers {
		if !found[s] {
			unknown = append(unknown, "server "+s)
		}
	}
	return visSet{rows: rows}, unknown
}

// Check reports every tool, server or template name in the setup that the
// catalog does not resolve, so that a bad config stops start-up instead of
// failing later in a background build.
func (s *Setup) Check() error {
	if s == nil || s.Catalog == nil {
		return errors.New("no catalog")
	}
	_, err := s.resolve()
	return err
}

// policy is a Setup resolved against its catalog.
type policy struct {
	core          []int
	templates     map[string]resolvedTemplate
	templateNames []string
	keys          []Key
	keyVis        []visSet
}

type resolvedTemplate struct {
	Template
	rows []int
}

// resolve checks every name the setup mentions and returns them as rows.
// The error names each unknown or ambiguous reference and where it is.
func (s *Setup) resolve() (*policy, error) {
	cat := s.Catalog
	p := &policy{templates: map[string]resolvedTemplate{}}
	var errs []error
	rows := func(where string, refs []string) []int {
		out := make([]int, 0, len(refs))
		seen := map[int]bool{}
		for _, ref := range refs {
			i, err := cat.Resolve(ref)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", where, err))
				continue
			}
			if !seen[i] {
				seen[i] = true
				out = append(out, i)
			}
		}
		return out
	}
	p.core = rows("core", s.Core)
	for name, t := range s.Templates {
		p.templates[name] = resolvedTemplate{Template: t, rows: rows("templates."+name, t.Tools)}
		p.templateNames = append(p.templateNames, name)
	}
	sort.Strings(p.templateNames)
	for _, k := range s.Keys {
		vis, unknown := k.Visibility.resolve(cat)
		if len(unknown) > 0 {
			errs = append(errs, fmt.Errorf("auth key %q: unknown %s", k.Name, strings.Join(unknown, ", ")))
		}
		p.keys = append(p.keys, k)
		p.keyVis = append(p.keyVis, vis)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return p, nil
}

// Caller is an authenticated client. The zero Caller is anonymous and sees
// everything (used when no keys are configured).
type Caller struct {
	Key string // the key's name; empty for anonymous
}

type callerKey struct{}

// WithCaller returns ctx carrying c, the caller the HTTP layer
// authenticated, so that what runs under the request (the MCP handler)
// need not authenticate it again.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom is the caller WithCaller put in ctx; the zero Caller
// (anonymous) when there is none.
func CallerFrom(ctx context.Context) Caller {
	c, _ := ctx.Value(callerKey{}).(Caller)
	return c
}

// ErrUnauthorized is returned for a missing or unknown API key.
var ErrUnauthorized = errors.New("missing or unknown API key")

// AuthRequired reports whether the current setup has API keys.
func (s *Service) AuthRequired() bool {
	snap := s.cur.Load()
	return snap != nil && len(snap.policy.keys) > 0
}

// Authenticate finds the key whose hash matches token. Every key is
// compared, in constant time, so the answer's timing says nothing about
// which key came close.
func (s *Service) Authenticate(token string) (Caller, error) {
	snap := s.cur.Load()
	if snap == nil {
		return Caller{}, ErrNotReady
	}
	if len(snap.policy.keys) == 0 {
		return Caller{}, nil
	}
	h := sha256.Sum256([]byte(token))
	match := -1
	for i, k := range snap.policy.keys {
		if subtle.ConstantTimeCompare(h[:], k.Hash[:]) == 1 {
			match = i
		}
	}
	if match < 0 || token == "" {
		return Caller{}, ErrUnauthorized
	}
	return Caller{Key: snap.policy.keys[match].Name}, nil
}

// viewFor is the snapshot caller searches: snap itself for a key that
// sees everything (or when no keys are configured), else the key's view.
func (snap *Snapshot) viewFor(c Caller) (*Snapshot, error) {
	if c.Key == "" {
		if len(snap.policy.keys) > 0 {
			return nil, ErrUnauthorized
		}
		return snap, nil
	}
	for _, k := range snap.policy.keys {
		if k.Name == c.Key {
			if v := snap.views[c.Key]; v != nil {
				return v, nil
			}
			return snap, nil
		}
	}
	return nil, ErrUnauthorized // the key was removed by a rebuild
}

// restrict is the policy as a view sees it: rows renumbered by sub (-1 for
// a row outside the view), core and template tools outside it dropped, and
// templates with no tool left gone, so that a key cannot tell them from
// templates that were never configured.
func (p *policy) restrict(sub func(int) int) *policy {
	rows := func(in []int) []int {
		out := make([]int, 0, len(in))
		for _, r := range in {
			if j := sub(r); j >= 0 {
				out = append(out, j)
			}
		}
		return out
	}
	v := &policy{core: rows(p.core), templates: map[string]resolvedTemplate{}}
	for _, name := range p.templateNames {
		t := p.templates[name]
		if r := rows(t.rows); len(r) > 0 {
			v.templates[name] = resolvedTemplate{Template: t.Template, rows: r}
			v.templateNames = append(v.templateNames, name)
		}
	}
	return v
}
