// Package sizing is the memory rule of docs/operations.md ("Memory"):
// what the process needs for a catalog of a given count of tools, bytes
// of text and vector width. The deploy tests check the example overlays'
// limits by it, and the service compares it with its own container's
// limit for the catalog it serves, since a catalog read from live
// upstreams has no size an operator could have known beforehand.
//
// The constants are measured (BENCHMARKS.md, step 27; cmd/scale: 73 to
// 100,000 generated tools of 440 bytes, and 4,000 and 10,000 of 1,900 and
// 4,500, local at 1,024 dimensions and through a provider at 1,536) and
// rounded up.
package sizing

import "github.com/toolsearch/toolsearch/pkg/index"

// Catalog is what the rule reads of a catalog and its index.
type Catalog struct {
	Tools int
	// TextBytes is the tools' names, titles, descriptions, schemas and
	// annotations as given (catalog.Catalog.Bytes, status' catalog.bytes).
	TextBytes int64
	// Dim is the vectors' width; Local, whether the local embedder makes
	// them (its small indexes keep their vectors twice).
	Dim   int
	Local bool
	// VectorBytes, when not 0, is what the index's vectors hold as built
	// (index.Matrix.Bytes), counted in place of the rule's N×D×4: the
	// service's figure for the index it serves. The local embedder's
	// vectors are mostly zeros, which an index kept by column does not
	// hold, so the dense count was several times what they took
	// (BENCHMARKS.md, "The memory rule reads the index built"); a rule
	// for a catalog not yet built (an overlay's) has no such figure and
	// counts them dense, as a catalog of long texts may fill them.
	VectorBytes int64
	// Views are the catalogs of API keys that see only some tools, one
	// for each distinct visibility: each is indexed as a catalog of its
	// own beside the whole one: its keyword index and, for the local
	// embedder, vectors fitted to it (a provider's views read the whole
	// index's rows, 4 bytes a row). Their own Views are not read.
	Views []Catalog
}

// processBytes is the process's own memory, whatever the catalog.
const processBytes = 40 << 20

// Per-connection cost while a slow client's body is read
// (limits.max_connections).
const connectionBytes = 28 << 10

// tlsConnectionBytes is connectionBytes when the API serves TLS: each
// connection also holds its TLS state and record buffers, and its
// handshake leaves garbage behind. 2,048 connections each sending 10
// bytes of a body over TLS took the default catalog's process from 24 to
// 129 and 138 MiB (52 and 57 KiB each, where plain HTTP took 23), and
// 2,048 that sent one header line 46 KiB each, where plain HTTP took 11
// (2026-12-07, BENCHMARKS.md, "What a TLS connection holds").
const tlsConnectionBytes = 64 << 10

// Built is what the process holds once the catalog is built: the vectors;
// per tool, the fixed part of its catalog entry, postings and hints; per
// byte of text, the catalog's copy and the keyword index made of it; the
// same of each view; and the process's own 40 MiB. The local embedder's
// index keeps its vectors a second time, by column, while the index is
// kept by row and small enough for that (index.ByColumn,
// index.Matrix.WithColumns: at most 16 MiB).
func (c Catalog) Built() int64 {
	b := c.indexed(true) + processBytes
	for _, v := range c.Views {
		b += v.indexed(v.Local)
	}
	return b
}

// indexed is what c's catalog and index hold, without views, and
// without vectors of its own unless vectors (a provider's view).
func (c Catalog) indexed(vectors bool) int64 {
	b := int64(c.Tools)<<9 + 3*c.TextBytes
	if !vectors {
		return b + int64(c.Tools)*4
	}
	if c.VectorBytes > 0 {
		return b + c.VectorBytes
	}
	v := int64(c.Tools) * int64(c.Dim) * 4
	b += v
	if c.Local && !index.ByColumn(c.Tools, c.Dim) {
		b += v
	}
	return b
}

// Rebuild is the most a rebuild holds: two snapshots (the one serving
// until the new one is published), views included, and the new one's
// analysis and its views', which grow with the text.
func (c Catalog) Rebuild() int64 {
	b := 2*c.Built() + c.analysis()
	for _, v := range c.Views {
		b += v.analysis()
	}
	return b
}

// analysis is what a build of c's catalog analyses it into.
func (c Catalog) analysis() int64 { return int64(c.Tools)<<10 + 2*c.TextBytes }

// Report is what a whole-catalog report (the console's catalog view, one
// at a time) adds while it is made: its tables, its JSON and their
// garbage, and a few MiB whatever the catalog.
func (c Catalog) Report() int64 {
	return int64(c.Tools)<<11 + 3*c.TextBytes + 4<<20
}

// Limit is the smallest memory limit that holds the catalog at its peak:
// a rebuild with a report beside it, conns connections each reading a
// slow body (over TLS when tls: serve's -tls-cert-file), bodies bytes of
// request bodies read and decoded at once
// (limits.request_body_budget_bytes), and MCP's event store full. A pod's
// limit should be at least this.
func (c Catalog) Limit(conns int, tls bool, bodies int64) int64 {
	per := int64(connectionBytes)
	if tls {
		per = tlsConnectionBytes
	}
	return c.Rebuild() + c.Report() + int64(max(conns, 0))*per + bodyFactor*max(bodies, 0) + ResumeBytes
}

// ResumeBytes is the most MCP's event store holds: what streamed calls
// sent, for clients that reconnect mid-call (mcpserver).
const ResumeBytes = 8 << 20

// bodyFactor is what a request body holds while it is decoded and
// answered, per byte: the body itself, and what it decodes into. A
// search of 1 MiB of tool names in visible_tools held 2.8 times its body
// once decoded (6 times before its garbage was collected), and 32 callers
// sending such bodies held the default catalog's process at 193 MiB
// resident with 16 MiB of bodies in the budget (2026-12-06), where the
// rule had counted the budget once.
const bodyFactor = 4
