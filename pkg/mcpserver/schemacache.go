package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/toolsearch/toolsearch/pkg/internal/schemare"
)

// maxSchemaCacheBytes bounds the schemas a schemaCache keeps, by the bytes
// of their JSON, each counted schemaOverhead more: decoded and resolved, a
// schema holds about 31 times its JSON (BenchmarkValidate), so the cache
// holds at most about 8 MiB whatever upstreams send: the last hundred or
// so tools called, with schemas of a few properties.
const (
	maxSchemaCacheBytes = 256 << 10
	schemaOverhead      = 1 << 10
)

// schemaCache keeps the input schemas of the tools called lately decoded
// and resolved, so that checking a call's arguments does not decode and
// resolve its tool's schema again: for a schema of seven properties that
// was 106 µs and 1,355 allocations a call, against 4.3 µs and 64 kept.
// Entries are kept apart per API key: a kept schema is checked faster,
// so a shared entry would tell one key that another called a tool of the
// same schema, which may be one it cannot see. The zero value is ready to
// use.
type schemaCache struct {
	mu    sync.Mutex
	seed  maphash.Seed
	lru   *simplelru.LRU[uint64, *compiledSchema] // by the hash of its key and JSON
	bytes int                                     // the cost of those kept
}

// compiledSchema is a schema decoded for boundedValidation and resolved
// for validation; resolved is nil for one that cannot be read or
// resolved, which is the upstream's to enforce.
type compiledSchema struct {
	tenant   string
	src      []byte // its own copy: a slice of a catalog would keep the catalog
	tree     any
	resolved *jsonschema.Resolved
}

// validate checks args against a tool's JSON Schema for the caller of
// API key tenant ("" without keys); the error names the offending field.
func (c *schemaCache) validate(tenant string, schema, args json.RawMessage) error {
	var instance any
	if err := json.Unmarshal(args, &instance); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if _, ok := instance.(map[string]any); !ok {
		return errors.New("arguments must be a JSON object")
	}
	if len(schema) == 0 {
		return nil
	}
	s := c.get(tenant, schema)
	if s.resolved == nil || !boundedValidation(s.tree, instance) {
		// An unreadable upstream schema, or one too costly to check, is
		// the upstream's to enforce.
		return nil
	}
	if err := s.resolved.Validate(instance); err != nil {
		if p := argWords(s.resolved.Schema(), args); p != "" {
			return errors.New(p) // in words a model can act on
		}
		return err
	}
	return nil
}

// get is schema compiled for tenant, from the cache or compiled now and
// kept.
func (c *schemaCache) get(tenant string, schema []byte) *compiledSchema {
	c.mu.Lock()
	if c.lru == nil {
		c.seed = maphash.MakeSeed()
		c.lru, _ = simplelru.NewLRU(maxSchemaCacheBytes/schemaOverhead, func(_ uint64, s *compiledSchema) { c.bytes -= s.cost() }) // its size is positive
	}
	var h maphash.Hash
	h.SetSeed(c.seed)
	h.WriteString(tenant)
	h.WriteByte(0)
	h.Write(schema)
	key := h.Sum64()
	s, ok := c.lru.Get(key)
	c.mu.Unlock()
	if ok && s.tenant == tenant && bytes.Equal(s.src, schema) {
		return s
	}
	s = compileSchema(schema) // outside the lock: calls to other tools go on
	s.tenant = tenant
	if len(schema) > maxSchemaCacheBytes/8 {
		return s // too large to keep eight of
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.lru.Peek(key); ok {
		c.bytes -= old.cost() // replaced by Add, which tells no one
	}
	c.lru.Add(key, s)
	c.bytes += s.cost()
	for c.bytes > maxSchemaCacheBytes && c.lru.Len() > 1 {
		c.lru.RemoveOldest()
	}
	return s
}

func (s *compiledSchema) cost() int { return len(s.src) + schemaOverhead }

func compileSchema(schema []byte) *compiledSchema {
	s := &compiledSchema{src: bytes.Clone(schema)}
	if json.Unmarshal(schema, &s.tree) != nil {
		return s
	}
	if schemare.Check(s.tree) != nil {
		// Resolving compiles every pattern first: one regexp refuses
		// leaves the schema unresolvable anyway, and past the budget an
		// upstream's patterns took seconds of CPU a call.
		return s
	}
	var sch jsonschema.Schema
	if json.Unmarshal(schema, &sch) != nil {
		return s
	}
	s.resolved, _ = sch.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: false})
	return s
}
