// Package access decides who may see what: the API keys a service accepts
// (stored only as hashes), the tools and servers each key may see, the
// caller a request authenticated as, and the signed cursors that page a
// listing. It knows nothing of ranking; package search applies it.
package access

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"

	"github.com/toolsearch/toolsearch/pkg/catalog"
)

// Key is one accepted API key, stored only as its SHA-256.
type Key struct {
	Name       string
	Hash       [sha256.Size]byte
	Visibility Visibility // zero: sees every tool
	// Confirm is the key's policy for calls to destructive tools; empty
	// takes the deployment's.
	Confirm string
}

// The policies for a call to a destructive tool (declared or inferred
// destructiveHint), per deployment and per key.
const (
	// ConfirmElicit asks the user through MCP elicitation when the client
	// can be asked, and otherwise requires call_tool's confirm argument.
	ConfirmElicit = "elicit"
	// ConfirmArgument always requires call_tool's confirm argument: for
	// clients whose model is trusted to have asked.
	ConfirmArgument = "require_confirm_argument"
	// ConfirmOff forwards destructive calls like any other.
	ConfirmOff = "off"
)

// ConfirmPolicies are the valid policies, the default first.
var ConfirmPolicies = []string{ConfirmElicit, ConfirmArgument, ConfirmOff}

// HashSecret is the stored form of a key's secret.
func HashSecret(secret string) [sha256.Size]byte { return sha256.Sum256([]byte(secret)) }

// ParseHash reads a key's SHA-256 written in hex (a config file's
// key_sha256).
func ParseHash(s string) ([sha256.Size]byte, error) {
	var h [sha256.Size]byte
	_, err := hex.Decode(h[:], []byte(s))
	return h, err
}

// ErrUnauthorized is returned for a missing or unknown API key.
var ErrUnauthorized = errors.New("missing or unknown API key")

// Authenticate finds the key whose hash matches token. Every key is
// compared, in constant time, so the answer's timing says nothing about
// which key came close. With no keys, everyone is the anonymous Caller.
func Authenticate(keys []Key, token string) (Caller, error) {
	if len(keys) == 0 {
		return Caller{}, nil
	}
	h := HashSecret(token)
	match := -1
	for i, k := range keys {
		if subtle.ConstantTimeCompare(h[:], k.Hash[:]) == 1 {
			match = i
		}
	}
	if match < 0 || token == "" {
		return Caller{}, ErrUnauthorized
	}
	return Caller{Key: keys[match].Name}, nil
}

// Caller is an authenticated client. The zero Caller is anonymous and sees
// everything (used when no keys are configured).
type Caller struct {
	Key string // the key's name; empty for anonymous
	// Address is an anonymous caller's client address (the host; for IPv6
	// its /64 network): what learning counts its evidence under, in place
	// of a key. Empty for a caller with a key.
	Address string
}

type callerKey struct{}

// WithCaller returns ctx carrying c: the HTTP layer authenticates once, and
// everything under the request (the search, the MCP handler) reads it.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom is the caller WithCaller put in ctx; the zero Caller
// (anonymous) when there is none.
func CallerFrom(ctx context.Context) Caller {
	c, _ := ctx.Value(callerKey{}).(Caller)
	return c
}

// Visibility limits what a caller sees: the listed tools plus every tool of
// the listed servers. The zero value sees everything.
type Visibility struct {
	Tools   []string `json:"visible_tools,omitempty"`
	Servers []string `json:"visible_servers,omitempty"`
}

// IsZero reports whether v places no limit.
func (v Visibility) IsZero() bool { return len(v.Tools) == 0 && len(v.Servers) == 0 }

// Set is a Visibility resolved against one catalog: the rows it allows.
type Set struct {
	limited bool
	rows    []bool
}

// All is the Set that allows every row.
func All() Set { return Set{} }

// IsAll reports whether s allows every row.
func (s Set) IsAll() bool { return !s.limited }

// Has reports whether row is allowed.
func (s Set) Has(row int) bool { return !s.limited || s.rows[row] }

// Rows lists the allowed rows in order, and false when s allows every row.
func (s Set) Rows() ([]int, bool) {
	if !s.limited {
		return nil, false
	}
	var out []int
	for r, ok := range s.rows {
		if ok {
			out = append(out, r)
		}
	}
	return out, true
}

// And is the rows both s and o allow.
func (s Set) And(o Set) Set {
	switch {
	case !s.limited:
		return o
	case !o.limited:
		return s
	}
	rows := make([]bool, len(s.rows))
	for i := range rows {
		rows[i] = s.rows[i] && o.rows[i]
	}
	return Set{limited: true, rows: rows}
}

// Resolve returns the rows v allows in cat, and the names it gives that the
// catalog does not have ("tool x", "server y").
func (v Visibility) Resolve(cat *catalog.Catalog) (Set, []string) {
	if v.IsZero() {
		return All(), nil
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
	return Set{limited: true, rows: rows}, unknown
}
