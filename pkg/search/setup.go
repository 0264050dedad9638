package search

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/config"
)

// Setup is everything a build reads: the catalog and the policy over it
// (core tools, templates, API keys), as config loads it. Every tool and
// server it names is checked against the catalog when it is built into a
// snapshot.
type Setup = config.Policy

// Check reports every tool, server or template name in s that its catalog
// does not resolve, so that a bad config stops start-up instead of failing
// later in a background build.
func Check(s *Setup) error {
	if s == nil || s.Catalog == nil {
		return errors.New("no catalog")
	}
	_, err := resolve(s)
	return err
}

// policy is a Setup resolved against its catalog.
type policy struct {
	core          []int
	templates     map[string]resolvedTemplate
	templateNames []string
	keys          []access.Key
	keyVis        []access.Set
}

// limited reports whether some key sees only some tools, and so has a
// view.
func (p *policy) limited() bool {
	return slices.ContainsFunc(p.keyVis, func(v access.Set) bool { return !v.IsAll() })
}

type resolvedTemplate struct {
	config.Template
	rows []int
}

// resolve checks every name the setup mentions and returns them as rows.
// The error names each unknown or ambiguous reference and where it is.
func resolve(s *Setup) (*policy, error) {
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
		vis, unknown := k.Visibility.Resolve(cat)
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

// AuthRequired reports whether the current setup has API keys.
func (s *Service) AuthRequired() bool {
	snap := s.cur.Load()
	return snap != nil && len(snap.policy.keys) > 0
}

// Authenticate resolves token against the current setup's keys (see
// access.Authenticate): once per request, by the HTTP layer, which
// carries the Caller in the context from there.
func (s *Service) Authenticate(token string) (access.Caller, error) {
	snap := s.cur.Load()
	if snap == nil {
		return access.Caller{}, ErrNotReady
	}
	return access.Authenticate(snap.policy.keys, token)
}

// CoreTools are the core whitelist's tools, in the whitelist's order.
func (snap *Snapshot) CoreTools() []Found {
	out := make([]Found, len(snap.policy.core))
	for i, r := range snap.policy.core {
		out[i] = snap.Found(r)
	}
	return out
}

// KeyConfirm is the caller's key's own policy for calls to destructive
// tools (see access.ConfirmPolicies); "" for the deployment's.
func (s *Service) KeyConfirm(c access.Caller) string {
	snap := s.cur.Load()
	if snap == nil || c.Key == "" {
		return ""
	}
	for _, k := range snap.policy.keys {
		if k.Name == c.Key {
			return k.Confirm
		}
	}
	return ""
}

// viewFor is the snapshot caller searches: snap itself for a key that
// sees everything (or when no keys are configured), else the key's view.
// The caller was authenticated against an earlier snapshot, perhaps: a key
// a rebuild removed is refused here, by name, without hashing again.
func (snap *Snapshot) viewFor(c access.Caller) (*Snapshot, error) {
	if c.Key == "" {
		if len(snap.policy.keys) > 0 && !snap.operator {
			return nil, access.ErrUnauthorized
		}
		return snap, nil
	}
	for i, k := range snap.policy.keys {
		if k.Name == c.Key {
			if v := snap.views[c.Key]; v != nil {
				return v, nil
			}
			if snap.viewless && !snap.policy.keyVis[i].IsAll() {
				// Built without views: the whole catalog would answer a
				// key that must not see all of it.
				return nil, access.ErrUnauthorized
			}
			return snap, nil
		}
	}
	return nil, access.ErrUnauthorized // the key was removed by a rebuild
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
