// Package inspect reports, for the tools a caller may see, what an operator
// needs to fix their descriptions: each tool's lint findings and its
// self-retrieval misses (which tool outranks it for its own words). It
// works on the caller's view only, so a key learns nothing of tools it
// cannot see: not their names, and not their effect on ranks or findings.
package inspect

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/eval"
	"github.com/toolsearch/toolsearch/pkg/internal/edit"
	"github.com/toolsearch/toolsearch/pkg/lint"
	"github.com/toolsearch/toolsearch/pkg/redact"
	"github.com/toolsearch/toolsearch/pkg/search"
)

// MaxAuditTools bounds the self-retrieval audit of one request: two
// searches a tool, so a few hundred tools take well under a second. A
// larger scope is listed with its findings and asked to narrow by server.
const MaxAuditTools = 500

// maxNearDuplicateTools bounds the pairwise near-duplicate check, which
// grows with the square of the tools: 2,000 tools are 2 million cosines, a
// fraction of a second; 10,000 would be 25 times that on every request.
const maxNearDuplicateTools = 2000

// lintUnitTools is how many tools a report lints for one unit of the
// caller's budget (access.Spend): a report on 100,000 took 0.9-1.1 s of
// CPU, 150 to 180 searches' (search.UnitTools) at that size.
const lintUnitTools = 500

// auditK is how deep a tool's own words are looked for.
const auditK = 10

// Report is the caller's catalog, or the servers it asked for.
type Report struct {
	IndexVersion string               `json:"index_version"`
	Servers      []search.ServerCount `json:"servers"` // every server the caller may see
	Tools        []Tool               `json:"tools"`   // in scope, in catalog order
	Checks       Checks               `json:"checks"`
	Audit        AuditRun             `json:"audit"`
}

// Tool is one tool with what is wrong with it.
type Tool struct {
	Server              string          `json:"server"`
	Name                string          `json:"name"`
	Description         string          `json:"description"`
	Annotations         json.RawMessage `json:"annotations,omitempty"`
	AnnotationsInferred []string        `json:"annotations_inferred,omitempty"`
	Findings            []Finding       `json:"findings,omitempty"`
	Misses              []Miss          `json:"misses,omitempty"`
}

// Finding is a lint finding about the tool.
type Finding struct {
	Severity lint.Severity `json:"severity"`
	Rule     string        `json:"rule"`
	Message  string        `json:"message"`
	Other    string        `json:"other,omitempty"` // the other tool of a near-duplicate pair
}

// Miss is a self-retrieval query that did not bring the tool back first.
type Miss struct {
	Query       string   `json:"query"`        // "description" or "name": which of its own texts was asked
	Rank        int      `json:"rank"`         // 1-based within the audit's depth; 0 when not there
	OutrankedBy string   `json:"outranked_by"` // server/tool that came first
	Shared      []string `json:"shared_terms"` // the query's terms the winner matched (stemmed)
}

// Checks says which lint checks ran, and why any did not.
type Checks struct {
	Ran     []string          `json:"ran"`
	Skipped map[string]string `json:"skipped,omitempty"`
}

// AuditRun says whether the self-retrieval audit ran, how deep, and why not.
type AuditRun struct {
	Ran    bool   `json:"ran"`
	K      int    `json:"k,omitempty"`
	Misses int    `json:"misses"`
	Reason string `json:"reason,omitempty"`
}

// UnknownServerError names a server the caller cannot see, which to the
// caller is the same as one that does not exist, and the server the
// caller can see it nearly names (edit.Nearest), if any.
type UnknownServerError struct{ Name, Hint string }

func (e *UnknownServerError) Error() string {
	msg := "unknown server " + redact.Echo(e.Name)
	if e.Hint != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", e.Hint)
	}
	return msg
}

// Catalog reports on the caller's tools, those of servers when given.
func Catalog(ctx context.Context, svc *search.Service, caller access.Caller, servers []string) (*Report, error) {
	view, err := svc.View(caller)
	if err != nil {
		return nil, err
	}
	counts := view.ServerCounts("")
	rows, err := scope(view.Catalog, counts, servers)
	if err != nil {
		return nil, err
	}
	// The work is priced before it is done: a unit for every
	// lintUnitTools linted and, for the audit, one for its provider call
	// and its searches (a tool's description and name) by what they rank:
	// 1,000 searches of 100,000 tools are 1,000 units, of the default
	// catalog none. Each search then pays as any search does for what
	// costs it more (a provider's vectors, a long description's scan and
	// intents), charged and never refused once the report is admitted.
	var cases []eval.Case
	if len(rows) <= MaxAuditTools {
		cases = eval.SelfCases(view.Catalog.Subset(rows))
	}
	units := len(rows) / lintUnitTools
	if cases != nil {
		units += 1 + len(cases)*view.Catalog.Len()/search.UnitTools
	}
	if err := access.Spend(ctx, access.WorkReport, units); err != nil {
		return nil, err
	}
	ctx = access.Committed(ctx)
	rep := &Report{IndexVersion: view.Version, Servers: counts, Tools: make([]Tool, len(rows))}
	byID := make(map[string]int, len(rows))        // lint names tools by id
	byKey := make(map[eval.ToolKey]int, len(rows)) // the audit, exactly
	for i, row := range rows {
		f := view.Found(row)
		rep.Tools[i] = Tool{Server: f.Server, Name: f.Name, Description: f.Description,
			Annotations: f.Hints.Annotations, AnnotationsInferred: f.Hints.Inferred}
		byID[f.ID()] = i
		byKey[eval.ToolKey{Server: f.Server, Name: f.Name}] = i
	}
	rep.Checks = findings(view, rows, rep.Tools, byID)
	if len(rows) > MaxAuditTools {
		rep.Audit.Reason = fmt.Sprintf("%d tools in scope, more than the %d one request audits: choose servers", len(rows), MaxAuditTools)
		return rep, nil
	}
	queries := make([]string, len(cases))
	for i, c := range cases {
		queries[i] = c.Query
	}
	svc.Warm(ctx, caller, queries) // one provider call for the audit, not one a case
	for _, c := range cases {
		m, ok, err := audit(ctx, svc, caller, c)
		if err != nil {
			return nil, err
		}
		if ok {
			continue
		}
		i := byKey[c.Keys()[0]]
		rep.Tools[i].Misses = append(rep.Tools[i].Misses, m)
		rep.Audit.Misses++
	}
	rep.Audit.Ran, rep.Audit.K = true, auditK
	return rep, nil
}

// scope is the rows of the servers asked for, or every row.
func scope(cat *catalog.Catalog, visible []search.ServerCount, servers []string) ([]int, error) {
	want := map[string]bool{}
	for _, s := range servers {
		if !slices.ContainsFunc(visible, func(c search.ServerCount) bool { return c.Name == s }) {
			names := make([]string, len(visible))
			for i, c := range visible {
				names[i] = c.Name
			}
			return nil, &UnknownServerError{Name: s, Hint: edit.Nearest(s, names)}
		}
		want[s] = true
	}
	var rows []int
	for i, t := range cat.Tools() {
		if len(want) == 0 || want[t.Server] {
			rows = append(rows, i)
		}
	}
	return rows, nil
}

// findings lints the tools in scope, rows of the view, against the whole
// view (a near-duplicate may sit in another server).
func findings(view *search.Snapshot, rows []int, tools []Tool, byID map[string]int) Checks {
	checks := Checks{Ran: slices.Clone(lint.CatalogChecks)}
	var vecs [][]float32
	if n := view.Catalog.Len(); n > maxNearDuplicateTools {
		checks.Skipped = map[string]string{lint.NearDuplicates: fmt.Sprintf("%d tools, more than the %d this endpoint compares pairwise: run toolsearch lint", n, maxNearDuplicateTools)}
	} else if view.Semantic() && view.Matrix.Sketched() {
		checks.Skipped = map[string]string{lint.NearDuplicates: "the semantic index is held as sign codes while a rebuild the memory limit cannot hold beside it runs: ask again once it is published"}
	} else if view.Semantic() {
		vecs = view.Matrix.Vectors()
		checks.Ran = append(checks.Ran, lint.NearDuplicates)
	} else {
		checks.Skipped = map[string]string{lint.NearDuplicates: "no embeddings: " + view.EmbedError}
	}
	var cfg lint.Config
	if len(rows) < view.Catalog.Len() {
		cfg.Rows = rows
	}
	for _, f := range lint.Check(view.Catalog, vecs, cfg) {
		if i, ok := byID[f.Tool]; ok {
			tools[i].Findings = append(tools[i].Findings, Finding{Severity: f.Severity, Rule: f.Rule, Message: f.Message, Other: f.Other})
		}
		// A pair is shown next to both of its tools: either may be the
		// one to fix.
		if i, ok := byID[f.Other]; ok && f.Other != "" {
			msg := strings.Replace(f.Message, f.Other, f.Tool, 1)
			tools[i].Findings = append(tools[i].Findings, Finding{Severity: f.Severity, Rule: f.Rule, Message: msg, Other: f.Tool})
		}
	}
	return checks
}

// audit asks the caller's index one self-retrieval case; ok when its tool
// came first.
func audit(ctx context.Context, svc *search.Service, caller access.Caller, c eval.Case) (Miss, bool, error) {
	k, noCore := auditK, false
	res, err := svc.Search(ctx, search.Request{Query: c.Query, TopK: &k, IncludeCore: &noCore, Explain: true}, caller)
	if err != nil {
		return Miss{}, false, fmt.Errorf("self-retrieval of %s: %w", c.ID, err)
	}
	want := c.Keys()[0]
	m := Miss{Query: strings.TrimPrefix(c.Category, "self-"), Shared: []string{}}
	for i, h := range res.Tools {
		if (eval.ToolKey{Server: h.Server, Name: h.Name}) == want {
			m.Rank = i + 1
			break
		}
	}
	if m.Rank == 1 || len(res.Tools) == 0 {
		return m, m.Rank == 1, nil
	}
	top := res.Tools[0]
	m.OutrankedBy = top.Server + "/" + top.Name
	if top.Explain != nil {
		m.Shared = slices.Sorted(maps.Keys(top.Explain.MatchedTerms))
	}
	return m, false, nil
}
