package search

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/index"
	"github.com/toolsearch/toolsearch/pkg/internal/edit"
	"github.com/toolsearch/toolsearch/pkg/redact"
	"github.com/toolsearch/toolsearch/pkg/tooldef"
)

// answer is one search in progress, against one snapshot.
type answer struct {
	s      *Service
	snap   *Snapshot
	req    *Request
	caller access.Caller
	vis    access.Set
	// inServers says, by index into the catalog's servers, which are in
	// the request's servers and server_match; nil when it names none.
	inServers []bool
	resp      *Response
	seen      rowSet // rows already in the answer
	// What the answer points to, kept here rather than allocated apart:
	// the request, the response (which keeps the answer alive as long as
	// it is read), a small catalog's seen rows, a sparse query, the
	// confidence and its verdict, and the scores of a usual top k.
	request   Request
	response  Response
	seenRows  [4]uint64
	query     index.Query
	conf      float32
	confident bool
	scores    [16]float32
}

// Search answers req for caller from the current snapshot, through the
// caller's view of it: tools the caller's key cannot see are not in the
// view, so they answer exactly as tools that do not exist. Errors are
// ErrNotReady, ErrUnauthorized, *RequestError or *UnknownTemplateError; a
// failing embedding provider is not an error (the answer is keyword-ranked
// and says so).
func (s *Service) Search(ctx context.Context, req Request, caller access.Caller) (*Response, error) {
	start := time.Now()
	snap := s.cur.Load() // one load: the whole answer comes from this snapshot
	if snap == nil {
		return nil, ErrNotReady
	}
	if err := req.Validate(); err != nil {
		return nil, err
	}
	snap, err := snap.viewFor(caller)
	if err != nil {
		return nil, err
	}
	a := &answer{s: s, snap: snap, request: req, caller: caller, vis: access.All(),
		response: Response{Tools: []Hit{}, IndexVersion: snap.Version}}
	a.req, a.resp = &a.request, &a.response
	a.seen = newRowSet(snap.Catalog.Len(), a.seenRows[:])
	a.narrow()
	var q parsedQuery
	if len(a.req.Messages) > 0 {
		// A conversation is text, not operators: a user turn "Select: the
		// tool that ..." was a select: of one unknown name, answering
		// nothing.
		q.digest(a.req.Messages, snap.Keywords.IDF)
	} else {
		// Operators are read from the whole query before a long one is
		// digested: the digest keeps words, not "select:" lists or "+"
		// marks, so a 5 KB select: list was ranked as prose.
		q = parseQuery(a.req.Query)
		if !q.isSelect && len(q.text) > MaxQueryBytes {
			q.digest([]Message{{Role: "user", Content: a.req.Query}}, snap.Keywords.IDF)
		}
	}
	switch {
	case len(q.required) > MaxRequiredTerms:
		err = badRequest("too_many_required_terms", `"query" requires more than %d terms with "+term"; require fewer`, MaxRequiredTerms)
	case a.req.Template != "":
		err = a.template()
	case a.req.Operation == OperationList:
		err = a.list()
	case a.req.Regex != "":
		err = a.regex(ctx)
	case q.isSelect:
		a.selectTools(q.selected)
	default:
		if err = a.retrieve(ctx, q); err != nil {
			return nil, err
		}
		if a.req.includeCore() {
			a.addRows(a.snap.policy.core, SourceCore)
		}
	}
	if err != nil {
		return nil, err
	}
	if err := a.render(); err != nil {
		return nil, err
	}
	a.resp.TookMS = float64(time.Since(start).Microseconds()) / 1000
	s.metrics.count(a.resp)
	return a.resp, nil
}

// narrow applies the request's own visibility, which can only narrow the
// caller's view; names the view lacks are reported as unknown.
func (a *answer) narrow() {
	if !a.req.Visibility.IsZero() {
		reqVis, unknown := a.req.Visibility.Resolve(a.snap.Catalog)
		a.unknown(unknown...)
		a.vis = a.vis.And(reqVis)
	}
	if !a.req.filtersServers() {
		return
	}
	// Once per request, by server: asked per row, 9,500 names in servers
	// took 0.2-0.5 s a request at 100,000 tools, and server_match lowered
	// every row's server name.
	asked := make(map[string]bool, len(a.req.Servers))
	for _, name := range a.req.Servers {
		asked[name] = false
	}
	match := strings.ToLower(a.req.ServerMatch)
	servers := a.snap.Catalog.Servers()
	a.inServers = make([]bool, len(servers))
	matched, found := match == "", false
	for i, name := range servers {
		_, named := asked[name]
		if named {
			asked[name], found = true, true
		}
		matches := match == "" || strings.Contains(strings.ToLower(name), match)
		a.inServers[i] = (len(asked) == 0 || named) && matches
		matched = matched || a.inServers[i]
	}
	if !matched && (len(asked) == 0 || found) {
		// As for a name in servers: an empty answer says why. With
		// servers given, it is the servers it names that must match
		// (and when none of them exists, they are what is unknown).
		a.unknown("server_match " + a.req.ServerMatch)
	}
	suggested := 0
	for _, name := range a.req.Servers {
		if found := asked[name]; !found {
			a.unknown("server " + name)
			asked[name] = true // once, however often it was asked
			if suggested < maxSuggested {
				suggested++
				if s := edit.Nearest(name, servers); s != "" {
					a.suggest("server "+name, s)
				}
			}
		}
	}
}

// maxSuggested bounds the unknown servers, and select: names, a request
// gets a suggestion for: each reads every server name the caller sees,
// or up to Catalog.NearName's share of its tools' names.
const maxSuggested = 4

// suggest records, for the unknown name (as Diagnostic.Unknown has it),
// what the caller likely meant.
func (a *answer) suggest(unknown, meant string) {
	if a.resp.Diagnostic.DidYouMean == nil {
		a.resp.Diagnostic.DidYouMean = map[string]string{}
	}
	a.resp.Diagnostic.DidYouMean[echoed(unknown)] = meant
}

func (a *answer) unknown(names ...string) {
	if len(names) == 0 {
		return
	}
	if a.resp.Diagnostic == nil {
		a.resp.Diagnostic = &Diagnostic{}
	}
	for _, n := range names {
		if len(a.resp.Diagnostic.Unknown) == MaxUnknownListed {
			a.resp.Diagnostic.UnknownMore++
			continue
		}
		a.resp.Diagnostic.Unknown = append(a.resp.Diagnostic.Unknown, echoed(n))
	}
}

// MaxUnknownListed bounds the unknown names an answer quotes; the rest are
// counted. Each name is echoed (maxEchoed), but their number was bounded
// only by the body's: 4,800 unknown names in visible_tools made an answer
// of 82 KB for a 62 KB request.
const MaxUnknownListed = 64

// maxEchoed bounds a name the answer quotes back: room for a
// "server_match " label and a server/tool pair of the longest names a
// catalog allows, so every name that could be meant is quoted whole and
// one of 30 KB is not.
const maxEchoed = len("server_match ") + 2*catalog.MaxNameBytes + 1

// echoed is name as Diagnostic quotes it.
func echoed(name string) string { return redact.Clip(name, maxEchoed, "…") }

func (a *answer) ambiguous(name string) {
	if a.resp.Diagnostic == nil {
		a.resp.Diagnostic = &Diagnostic{}
	}
	a.resp.Diagnostic.Ambiguous = append(a.resp.Diagnostic.Ambiguous, name)
}

// inScope reports whether row is one the request may return: visible to
// it, and passing its safety and server filters.
func (a *answer) inScope(row int) bool {
	if !a.vis.Has(row) || !a.safe(row) {
		return false
	}
	return a.inServers == nil || a.inServers[a.snap.serverOf[row]]
}

// unfiltered reports whether every row is in scope: the caller's view
// is not narrowed and no safety or server filter applies.
func (a *answer) unfiltered() bool {
	return a.vis.IsAll() && !a.req.filtersSafety() && !a.req.filtersServers()
}

// filtersSafety reports whether r keeps only tools with some safety hint.
func (r *Request) filtersSafety() bool { return r.ReadOnly || r.ExcludeDestructive }

// filtersServers reports whether r keeps only tools of some servers.
func (r *Request) filtersServers() bool { return len(r.Servers) > 0 || r.ServerMatch != "" }

// safe reports whether row passes the request's safety filters, which
// apply to named tools (core, template, select) as to retrieved ones.
func (a *answer) safe(row int) bool {
	if !a.req.filtersSafety() {
		return true // the common case, on every candidate: no lookup
	}
	// The verdicts read the hints' values, not the annotations, so the
	// row's tool (its declared annotations) is not fetched.
	h := a.snap.hints.At(row, nil)
	return !(a.req.ReadOnly && !h.IsReadOnly()) && !(a.req.ExcludeDestructive && h.IsDestructive())
}

func (a *answer) hit(row int, source Source, score *float32) Hit {
	t := a.snap.Catalog.Tool(row)
	return Hit{Name: t.Name, Server: t.Server, Description: t.Description, Score: score, Source: source, Row: row}
}

// addRows appends rows the caller may see, in order, skipping any already
// in the answer, and counts the rest as withheld.
func (a *answer) addRows(rows []int, source Source) {
	for _, r := range rows {
		switch {
		case a.seen.has(r):
		case !a.vis.Has(r) || !a.safe(r):
			a.resp.Withheld++
		default:
			a.seen.add(r)
			a.resp.Tools = append(a.resp.Tools, a.hit(r, source, nil))
		}
	}
}

// template returns a workflow's tools in the manifest's order, plus core,
// with no embedding call and no ranking.
func (a *answer) template() error {
	t, ok := a.snap.policy.templates[a.req.Template]
	if !ok {
		return &UnknownTemplateError{Name: a.req.Template, Known: a.snap.policy.templateNames}
	}
	a.resp.Mode = ModeTemplate
	a.resp.Template = a.req.Template
	a.addRows(t.rows, SourceTemplate)
	if a.req.includeCore() {
		a.addRows(a.snap.policy.core, SourceCore)
	}
	return nil
}

// selectTools returns exactly the named tools, in the order named.
func (a *answer) selectTools(names []string) {
	a.resp.Mode = ModeSelect
	suggested := 0
	for _, n := range names {
		i, err := a.snap.Catalog.Resolve(n)
		switch {
		case errors.Is(err, catalog.ErrAmbiguousTool):
			a.ambiguous(n)
			continue
		case err != nil:
			a.unknown(n)
			if suggested < maxSuggested {
				suggested++
				if near := a.snap.Catalog.NearRef(n); near != "" {
					a.suggest(n, near)
				}
			}
			continue
		}
		a.addRows([]int{i}, SourceSelect)
	}
}

// list pages through the tools in scope.
func (a *answer) list() error {
	a.resp.Mode = ModeList
	var rows []int
	for i := range a.snap.Catalog.Len() {
		if a.inScope(i) {
			rows = append(rows, i)
		}
	}
	return a.page(rows, SourceList)
}

// page answers one page of rows, sorted by name then server, so the
// listing is the same on every call and every replica.
func (a *answer) page(rows []int, source Source) error {
	rows = inNameOrder(a.snap.Catalog, rows)
	start, end, next, err := window(a.snap.cursorKey(a.s.cfg.CursorKey), listScope(a.snap, a.req, a.caller), a.req.Cursor, len(rows), a.req.topK())
	if err != nil {
		return err
	}
	for _, r := range rows[start:end] {
		a.resp.Tools = append(a.resp.Tools, a.hit(r, source, nil))
	}
	total, returned := len(rows), len(a.resp.Tools)
	a.resp.Total, a.resp.Returned, a.resp.NextCursor = &total, &returned, next
	return nil
}

// window is the page of a listing of n items that cursor (one signed
// with key for scope; empty: the first page) and limit select, items
// [start, end), and the cursor of the page after it, empty on the last.
func window(key []byte, scope access.Scope, cursor string, n, limit int) (start, end int, next string, err error) {
	if cursor != "" {
		if start, err = access.VerifyCursor(key, cursor, scope); err != nil {
			return 0, 0, "", errBadCursor
		}
	}
	start = min(start, n)
	end = min(start+limit, n)
	if end < n {
		next = access.SignCursor(key, end, scope)
	}
	return start, end, next, nil
}

// inNameOrder sorts rows by their tools' names, then servers. A few are
// sorted as they are; many are picked out of the catalog's own order in
// one pass over it: sorting 90,000 names for each page of a list took
// 50 ms of a request at 100,000 tools.
func inNameOrder(cat *catalog.Catalog, rows []int) []int {
	if len(rows) < cat.Len()/16 {
		slices.SortFunc(rows, cat.CompareNames)
		return rows
	}
	in := make([]bool, cat.Len())
	for _, r := range rows {
		in[r] = true
	}
	out := rows[:0]
	for _, r := range cat.Sorted() {
		if in[r] {
			out = append(out, int(r))
		}
	}
	return out
}

// render adds schemas and provider definitions as asked.
func (a *answer) render() error {
	if !a.req.IncludeSchema && a.req.Format == "" {
		// Nothing to add: a tool's annotations, read back to merge its
		// hints, would be decoded for nothing.
		return nil
	}
	var namer tooldef.Namer
	for i := range a.resp.Tools {
		h := &a.resp.Tools[i]
		t := a.snap.Catalog.Tool(h.Row)
		hints := a.snap.hints.At(h.Row, t.Schemas.Annotations())
		if a.req.IncludeSchema {
			h.InputSchema, h.OutputSchema, h.Annotations, h.Execution = t.Schemas.Input(), t.Schemas.Output(), hints.Annotations, t.Execution()
		}
		if a.req.IncludeSchema || a.req.Format == "mcp" {
			h.AnnotationsInferred = hints.Inferred
		}
		if a.req.Format == "" {
			continue
		}
		name := t.Name
		if a.req.Format != "mcp" {
			name = namer.Name(t)
			h.DefinitionName = name
		}
		def, err := tooldef.Render(a.req.Format, t, hints.Annotations, name)
		if err != nil {
			return err
		}
		if def.Warning != "" {
			a.resp.Warnings = append(a.resp.Warnings, t.ID()+": "+def.Warning)
		}
		h.ArgumentNames = def.ArgumentNames
		a.resp.Definitions = append(a.resp.Definitions, def.JSON)
	}
	return nil
}

// rowSet is a set of catalog rows, one bit each.
type rowSet []uint64

// newRowSet is a set for rows [0,n), in buf when it is large enough.
func newRowSet(n int, buf []uint64) rowSet {
	words := (n + 63) / 64
	if words <= len(buf) {
		return buf[:words]
	}
	return make(rowSet, words)
}

func (s rowSet) add(row int)      { s[row/64] |= 1 << (row % 64) }
func (s rowSet) has(row int) bool { return s[row/64]&(1<<(row%64)) != 0 }

var errBadCursor = badRequest("invalid_cursor", `"cursor" is not one this service issued for this listing; start again without it`)

// cursorKey signs this snapshot's list cursors: the configured key, or
// one derived from the catalog, stable across replicas but not secret (the
// signature only detects tampering: visibility applies on every page).
func (snap *Snapshot) cursorKey(key []byte) []byte {
	if len(key) > 0 {
		return key
	}
	k := sha256.Sum256([]byte("toolsearch-cursor\x00" + snap.Catalog.Hash()))
	return k[:]
}

// listScope fingerprints what a listing covers (catalog, filters, caller),
// so a cursor cannot continue another listing.
func listScope(snap *Snapshot, req *Request, caller access.Caller) access.Scope {
	servers := slices.Sorted(slices.Values(req.Servers))
	tools := slices.Sorted(slices.Values(req.Visibility.Tools))
	vservers := slices.Sorted(slices.Values(req.Visibility.Servers))
	return access.ScopeOf(
		snap.Catalog.Hash(), strings.Join(servers, "\x01"), strings.ToLower(req.ServerMatch),
		strings.Join(tools, "\x01"), strings.Join(vservers, "\x01"), caller.Key,
		req.Regex, fmt.Sprint(req.RegexDescription, req.ReadOnly, req.ExcludeDestructive),
	)
}
