package search

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/redact"
	"github.com/toolsearch/toolsearch/pkg/tooldef"
)

// MaxQueryBytes is the longest query ranked as written. A longer one (up
// to MaxInputBytes), like a conversation, is ranked on a digest of it
// (see digest): a pasted document or persona prompt would otherwise cost
// the embedding provider and the ranker for words that pick no tool.
const MaxQueryBytes = 4096

// UnitTools is the size of the work one unit of a caller's budget
// (access.Spend) pays for: a short search of this many tools, 4 to 6 ms
// of CPU on the 2-core machine of BENCHMARKS.md (UnitCost). Work beyond
// it is priced in these units where it is done: a search's ranking by its
// estimated cost (rank.Ranker.Cost; a broad query, a provider's dense
// vectors or 16 intents ranked apart at this size cost four to seven), the
// self-retrieval audit's searches (package inspect), the text a regex
// reads (RegexUnitBytes).
const UnitTools = 100_000

// UnitCost is the CPU time a unit pays for, as rank.Ranker.Cost
// estimates it.
const UnitCost = 5 * time.Millisecond

// CodeInputTooLarge is the error code of input beyond MaxInputBytes or
// MaxMessages; HTTP answers it 413.
const CodeInputTooLarge = "input_too_large"

// Mode is how an answer was made: ranked by hybrid, semantic or keyword
// retrieval, or given by a template, a select: operator or a listing.
type Mode string

// The modes. A request may ask for the three retrieval modes.
const (
	ModeHybrid   Mode = "hybrid"   // dense and BM25 rankings fused
	ModeSemantic Mode = "semantic" // dense ranking alone
	ModeKeyword  Mode = "keyword"  // BM25 alone; also every degraded answer
	ModeTemplate Mode = "template"
	ModeSelect   Mode = "select"
	ModeList     Mode = "list"
	ModeRegex    Mode = "regex"
)

// Requestable reports whether a request may ask for m: one of the three
// retrieval modes, or "" for the service's own.
func (m Mode) Requestable() bool {
	return m == "" || m == ModeHybrid || m == ModeSemantic || m == ModeKeyword
}

// Source says why a tool is in an answer: retrieved (its retrieval mode's
// name), or named by the core whitelist, a template, a select: operator or
// a listing.
type Source string

// The sources besides the retrieval modes.
const (
	SourceCore     Source = "core"
	SourceTemplate Source = "template"
	SourceSelect   Source = "select"
	SourceList     Source = "list"
	SourceRegex    Source = "regex"
)

// The operations a request may ask for.
const (
	OperationSearch = "search"
	OperationList   = "list"
)

// Request is a search request, shared by the HTTP API, the MCP meta-tools
// and the eval harness. Validate it before use.
type Request struct {
	// Query is what the caller wants to do. Operators: "select:a,b" returns
	// exactly those tools; "+term" requires a term in the tool's name or
	// description.
	Query string `json:"query,omitempty"`
	// Messages is a conversation, newest last, instead of Query: ranked on
	// the newest user turn, with the rarest words of up to six turns
	// before it as context (user turns weigh more than assistant ones).
	Messages Conversation `json:"messages,omitempty"`
	TopK     *int         `json:"top_k,omitempty"` // 1..MaxTopK; DefaultTopK when nil
	// Mode picks the ranker: "hybrid" (dense and BM25 fused), "semantic"
	// (dense only) or "keyword" (BM25 only). Empty: hybrid where a dense
	// index exists, keyword otherwise.
	Mode        Mode     `json:"mode,omitempty"`
	IncludeCore *bool    `json:"include_core,omitempty"` // default true
	Template    string   `json:"template,omitempty"`     // return this template's tools; no retrieval
	Servers     []string `json:"servers,omitempty"`      // only these servers (exact names)
	ServerMatch string   `json:"server_match,omitempty"` // only servers whose name contains this, any case
	Operation   string   `json:"operation,omitempty"`    // "search" (default) or "list"
	Cursor      string   `json:"cursor,omitempty"`       // continue a list
	MinScore    *float64 `json:"min_score,omitempty"`    // drop retrieved tools scoring under it
	// Regex returns, instead of a ranking, every tool whose name (and, with
	// RegexDescription, description) matches this RE2 pattern, sorted and
	// paged like a list. A field rather than a query operator: a pattern
	// has its own syntax errors, which a query's free text must not hit.
	Regex            string `json:"regex,omitempty"`
	RegexDescription bool   `json:"regex_description,omitempty"`
	// ReadOnly keeps only tools known (declared or inferred) to change
	// nothing; ExcludeDestructive drops tools known to destroy or
	// overwrite. Both apply to every tool of the answer, core included.
	ReadOnly           bool `json:"read_only,omitempty"`
	ExcludeDestructive bool `json:"exclude_destructive,omitempty"`
	access.Visibility
	IncludeSchema bool   `json:"include_schema,omitempty"` // add input_schema, output_schema, annotations
	Explain       bool   `json:"explain,omitempty"`        // add each retrieved tool's matched terms and per-ranker rank and score
	Format        string `json:"format,omitempty"`         // also render definitions: one of tooldef.Formats
}

// RequestError is a request the service will not run, with a stable code.
type RequestError struct {
	Code    string
	Message string
}

func (e *RequestError) Error() string { return e.Message }

func badRequest(code, format string, args ...any) *RequestError {
	return &RequestError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// UnknownTemplateError names a template that does not exist, and those
// that do.
type UnknownTemplateError struct {
	Name  string
	Known []string
}

func (e *UnknownTemplateError) Error() string {
	if len(e.Known) == 0 {
		return fmt.Sprintf("unknown template %s; there are no templates", redact.Echo(e.Name))
	}
	return fmt.Sprintf("unknown template %s; known templates: %s", redact.Echo(e.Name), strings.Join(e.Known, ", "))
}

// ErrNoQuery and ErrCursorAlone name, among their remedies, fields that
// only the HTTP API has: the MCP tools say them in their own arguments.
var (
	ErrNoQuery     = badRequest("empty_query", `"query" is required and must not be blank (unless "template", "regex" or "operation":"list" is given)`)
	ErrCursorAlone = badRequest("conflicting_fields", `"cursor" needs "operation":"list" or "regex"`)
)

// given names the field that a conflict is with, the first of "query"
// (or "messages"), "template" and "operation":"list" that r has: the one
// the caller sent, not the list of those it could have.
func (r *Request) given() string {
	switch {
	case r.Query != "":
		return `"query"`
	case len(r.Messages) > 0:
		return `"messages"`
	case r.Template != "":
		return `"template"`
	}
	return `"operation":"list"`
}

func (r *Request) topK() int {
	if r.TopK == nil {
		return DefaultTopK
	}
	return *r.TopK
}

func (r *Request) includeCore() bool { return r.IncludeCore == nil || *r.IncludeCore }

// Validate checks the request on its own; names are checked against the
// catalog when it runs. The error is a *RequestError.
func (r *Request) Validate() error {
	if err := r.checkMessages(); err != nil {
		return err
	}
	asks := strings.TrimSpace(r.Query) != "" || len(r.Messages) > 0 // checkMessages refused blank ones
	switch {
	case len(r.Query) > MaxInputBytes:
		return badRequest(CodeInputTooLarge, `"query" is %d bytes; the limit is %d`, len(r.Query), MaxInputBytes)
	case r.Query != "" && len(r.Messages) > 0:
		return badRequest("conflicting_fields", `give "query" or "messages", not both`)
	case strings.ContainsRune(r.Query, 0):
		return badRequest("invalid_query", `"query" contains a NUL character`)
	case r.TopK != nil && (*r.TopK < 1 || *r.TopK > MaxTopK):
		return badRequest("top_k_out_of_range", `"top_k" must be between 1 and %d, got %d`, MaxTopK, *r.TopK)
	case !r.Mode.Requestable():
		return badRequest("invalid_mode", `"mode" must be "hybrid", "semantic" or "keyword", got %s`, redact.Echo(string(r.Mode)))
	case r.Operation != "" && r.Operation != OperationSearch && r.Operation != OperationList:
		return badRequest("invalid_operation", `"operation" must be "search" or "list", got %s`, redact.Echo(r.Operation))
	case r.Format != "" && !tooldef.Valid(r.Format):
		return badRequest("invalid_format", `"format" must be one of %s, got %s`, strings.Join(tooldef.Formats, ", "), redact.Echo(r.Format))
	case r.MinScore != nil && (math.IsNaN(*r.MinScore) || math.IsInf(*r.MinScore, 0)):
		return badRequest("invalid_min_score", `"min_score" must be a finite number`)
	case r.Template != "" && r.Operation == OperationList:
		return badRequest("conflicting_fields", `"template" and "operation":"list" cannot be combined`)
	case r.Regex != "" && (r.Template != "" || r.Operation == OperationList || asks):
		return badRequest("conflicting_fields", `"regex" cannot be combined with %s`, r.given())
	case asks && r.Template != "":
		// A template answers its manifest whatever the query says: the
		// query would be dropped without a word.
		return badRequest("conflicting_fields", `"query" cannot be combined with "template": a template returns its manifest, unranked`)
	case asks && r.Operation == OperationList:
		return badRequest("conflicting_fields", `"query" cannot be combined with "operation":"list", which lists every tool of its servers in name order; to rank them, leave out "operation"`)
	case r.RegexDescription && r.Regex == "":
		return badRequest("conflicting_fields", `"regex_description" needs "regex"`)
	case r.Cursor != "" && r.Operation != OperationList && r.Regex == "":
		return ErrCursorAlone
	case r.Operation == OperationList && len(r.Servers) == 0 && r.ServerMatch == "":
		return badRequest("missing_scope", `"operation":"list" needs "servers" or "server_match"`)
	case !asks && r.Template == "" && r.Operation != OperationList && r.Regex == "":
		return ErrNoQuery
	}
	if rest, ok := cutPrefixFold(strings.TrimSpace(r.Query), "select:"); ok && strings.TrimFunc(rest, func(c rune) bool { return c == ',' || unicode.IsSpace(c) }) == "" {
		return badRequest("empty_query", `"select:" names no tools; name them, separated by commas (select:server/tool,tool)`)
	}
	if r.Regex != "" {
		if err := checkRegex(r.Regex); err != nil {
			return err
		}
	}
	for _, s := range r.Servers {
		if strings.TrimSpace(s) == "" {
			return badRequest("invalid_servers", `"servers" must not contain blank names`)
		}
	}
	if r.ServerMatch != "" && strings.TrimSpace(r.ServerMatch) == "" {
		return badRequest("invalid_server_match", `"server_match" must not be blank`)
	}
	// A router narrows its users' view with these: a list it computed
	// empty ("this user may see none") read as no list, and answered with
	// every tool the key sees. "servers", a filter models fill in, keeps
	// reading [] as none given.
	switch {
	case r.Visibility.Servers != nil && len(r.Visibility.Servers) == 0:
		return badRequest("empty_visibility", `"visible_servers" is empty, which would narrow nothing: name servers, or leave it out`)
	case r.Visibility.Tools != nil && len(r.Visibility.Tools) == 0:
		return badRequest("empty_visibility", `"visible_tools" is empty, which would narrow nothing: name tools, or leave it out`)
	}
	return nil
}

func (r *Request) checkMessages() error {
	if len(r.Messages) > MaxMessages {
		return badRequest(CodeInputTooLarge, `"messages" has %d turns; the limit is %d (send the recent ones)`, len(r.Messages), MaxMessages)
	}
	blank := true
	for i, m := range r.Messages {
		switch m.Role {
		case "user", "assistant", "system", RoleTool:
		default:
			return badRequest("invalid_messages", `"messages[%d].role" must be "user", "assistant", "system" or "tool" (or another chat API's name for one: %s)`, i, roleAliases)
		}
		if strings.ContainsRune(m.Content, 0) {
			return badRequest("invalid_messages", `"messages[%d].content" contains a NUL character`, i)
		}
		blank = blank && strings.TrimSpace(m.Content) == ""
	}
	ask := newestAsk(r.Messages) // -1 with no turns
	switch {
	case ask >= 0 && len(r.Messages[ask].Content) > MaxInputBytes:
		return badRequest(CodeInputTooLarge, `"messages[%d]", the turn the conversation is ranked on, holds %d bytes of content; the limit is %d`, ask, len(r.Messages[ask].Content), MaxInputBytes)
	case len(r.Messages) > 0 && blank:
		return badRequest("empty_query", `"messages" has no text`)
	case len(r.Messages) > 0 && (r.Template != "" || r.Operation == OperationList || r.Regex != ""):
		other := `"operation":"list"`
		if r.Template != "" {
			other = `"template"`
		} else if r.Regex != "" {
			other = `"regex"`
		}
		return badRequest("conflicting_fields", `"messages" cannot be combined with %s`, other)
	}
	return nil
}

// Hit is one tool in an answer.
type Hit struct {
	Name        string   `json:"name"`
	Server      string   `json:"server"`
	Description string   `json:"description"`
	Score       *float32 `json:"score,omitempty"` // retrieved tools only
	// Source says why the tool is in the answer: hybrid, semantic or
	// keyword (retrieved), core, template, select, or list.
	Source       Source          `json:"source"`
	InputSchema  json.RawMessage `json:"input_schema,omitempty"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	Annotations  json.RawMessage `json:"annotations,omitempty"`
	// Execution, with include_schema, is the tool's task support, when it
	// has one: a tool whose taskSupport is "required" must be called as
	// an MCP task.
	Execution *catalog.Execution `json:"execution,omitempty"`
	// AnnotationsInferred names the hints in Annotations (and in the mcp
	// definition) that the service inferred because the server declared
	// none; see package hints.
	AnnotationsInferred []string `json:"annotations_inferred,omitempty"`
	// DefinitionName is the function name used in Response.Definitions,
	// which differs from Name when Name is not a valid or unique provider
	// function name.
	DefinitionName string `json:"definition_name,omitempty"`
	// ArgumentNames, with format anthropic, maps the parameter names its
	// definition uses anew (Anthropic refuses some names) to the tool's
	// own, under which a call's arguments must be given.
	ArgumentNames map[string]string `json:"argument_names,omitempty"`
	Explain       *Explanation      `json:"explain,omitempty"`
	Row           int               `json:"-"`
}

// Explanation says why a retrieved tool ranked where it did.
type Explanation struct {
	// MatchedTerms maps each query term (stemmed) found in the tool to the
	// fields it was found in: name, server, title, description, params, enums.
	MatchedTerms map[string][]string `json:"matched_terms"`
	Semantic     *RankScore          `json:"semantic,omitempty"` // the dense ranker's view
	Keyword      *RankScore          `json:"keyword,omitempty"`  // BM25's view
	// Companion is what the tool gained as a learned companion of one of
	// the best tools (used with it for one task by earlier callers).
	Companion float32 `json:"companion,omitempty"`
}

// RankScore is one ranker's rank (1-based; 0 when the tool was outside
// that ranker's candidates) and raw score for a tool.
type RankScore struct {
	Rank  int     `json:"rank"`
	Score float32 `json:"score"`
}

// Response is a search answer.
type Response struct {
	Tools []Hit `json:"tools"`
	// SearchID names a retrieval while learning is on: report the tools
	// used with it (POST /mcp/tool-search/feedback), so that the service
	// learns which tools such queries need.
	SearchID string `json:"search_id,omitempty"`
	// Definitions holds each tool of Tools, in the same order, rendered in
	// the requested format, ready to forward to that provider.
	Definitions []json.RawMessage `json:"definitions,omitempty"`
	// Mode is what produced the answer: hybrid, semantic, keyword,
	// template, select or list.
	Mode       Mode        `json:"mode"`
	Degraded   bool        `json:"degraded"`
	Diagnostic *Diagnostic `json:"diagnostic,omitempty"`
	// Withheld counts tools the request named (core, template, select)
	// that the request's own visible_tools/visible_servers filter left out.
	// Tools the caller's key cannot see are never counted: to the key they
	// do not exist.
	Withheld int `json:"withheld,omitempty"`
	// Confidence is an absolute measure of the best retrieved tool's match
	// (comparable across queries, unlike scores normalised per query), and
	// Confident whether it reaches the calibrated threshold of the mode
	// (and the answer is not no_match). When false, the caller may prefer
	// to offer only core tools.
	Confidence *float32 `json:"confidence,omitempty"`
	Confident  *bool    `json:"confident,omitempty"`
	// NoMatch says that the tool the query needs is likely absent: the
	// best confidence is under the mode's no-match threshold, calibrated
	// for absence (evals/README.md). The tools listed are the closest weak
	// candidates, not answers, and a router should not call one on this
	// evidence.
	NoMatch      bool     `json:"no_match,omitempty"`
	Total        *int     `json:"total,omitempty"`    // list: tools in scope
	Returned     *int     `json:"returned,omitempty"` // list: tools in this page
	NextCursor   string   `json:"next_cursor,omitempty"`
	TookMS       float64  `json:"took_ms"`
	IndexVersion string   `json:"index_version"`
	Template     string   `json:"template,omitempty"`
	Required     []string `json:"required_terms,omitempty"`
	// Warnings say where a definition is not the whole tool: a schema
	// whose $refs could not be inlined within bounds ("server/tool: ...").
	Warnings []string `json:"warnings,omitempty"`
}

// Diagnostic explains an answer that is not what the caller might expect.
type Diagnostic struct {
	// EmbeddingError says why the answer is keyword-ranked, in a fixed
	// sentence for EmbeddingReason (the provider's own error text is in
	// the admin status and the log only).
	EmbeddingError  string `json:"embedding_error,omitempty"`
	EmbeddingReason string `json:"embedding_reason,omitempty"`
	// Unknown lists names in the request that match nothing the caller
	// can see.
	Unknown []string `json:"unknown,omitempty"`
	// UnknownMore counts the names that match nothing past the first
	// MaxUnknownListed, which Unknown lists.
	UnknownMore int `json:"unknown_more,omitempty"`
	// Ambiguous lists select: names that match several tools the caller
	// can see ("a/b/c" when server a has tool b/c and server a/b has tool
	// c); name them by server and tool apart to pick one.
	Ambiguous []string `json:"ambiguous,omitempty"`
	// DidYouMean maps an unknown server ("server GitHub", as Unknown has
	// it) to the server the caller can see whose name it nearly is: the
	// same but for case, or one edit away; and an unknown select: name
	// to the tool it nearly names (its bare name where that is the
	// tool's alone, else server/tool).
	DidYouMean map[string]string `json:"did_you_mean,omitempty"`
}
