package search

import (
	"context"
	"regexp"
	"regexp/syntax"
	"strings"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/analysis"
)

// Bounds on a regex search. Go's RE2 matches in time linear in the text,
// so no pattern can backtrack catastrophically; these bound the rest: the
// pattern's size once compiled (a{1000} is one short pattern and a
// thousand instructions) and the text each tool offers it.
const (
	MaxRegexBytes      = 256
	maxRegexInsts      = 2000
	regexDescBytes     = 1024 // a description's opening, where its purpose is
	regexCheckCtxEvery = 256  // tools between checks that the caller is still there
	// MaxRegexText bounds the text one regex search reads. Linear is not
	// cheap: a pattern with no literal to look for first runs at about
	// 45 ns a byte whatever its size, so the names and descriptions of
	// 100,000 generated tools (11 MB) took 0.45-0.56 s a request against
	// 5 ms for a search. At this bound a request is at most about 0.2 s;
	// the names of 100,000 generated tools (1.6 MB) fit, their descriptions
	// do not.
	MaxRegexText = 4 << 20
	// RegexUnitBytes is the text a regex search reads for one unit of the
	// caller's budget beyond the request's own (access.Spend): at 45 ns a
	// byte, about what a unit pays for (UnitTools). The names of 100,000
	// generated tools (1.6 MB, 78 ms) are 12 more units, the bound 32;
	// the names of a few thousand, none.
	RegexUnitBytes = 128 << 10
)

func checkRegex(pattern string) error {
	if len(pattern) > MaxRegexBytes {
		return badRequest("regex_too_long", `"regex" is %d bytes; the limit is %d`, len(pattern), MaxRegexBytes)
	}
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return badRequest("invalid_regex", `"regex" is not a valid RE2 pattern: %v`, err)
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return badRequest("invalid_regex", `"regex" is not a valid RE2 pattern: %v`, err)
	}
	if len(prog.Inst) > maxRegexInsts {
		return badRequest("regex_too_complex", `"regex" compiles to %d instructions; the limit is %d (use fewer or smaller repetitions)`, len(prog.Inst), maxRegexInsts)
	}
	return nil
}

// regex lists, sorted and paged like a list, the tools in scope whose
// name (or description's opening, when asked) matches the pattern.
func (a *answer) regex(ctx context.Context) error {
	re, err := regexp.Compile(a.req.Regex) // validated: cannot fail
	if err != nil {
		return badRequest("invalid_regex", `"regex" is not a valid RE2 pattern: %v`, err)
	}
	a.resp.Mode = ModeRegex
	if n := a.regexText(); n > MaxRegexText {
		// Worded for either surface: HTTP's fields and the MCP tool's differ.
		narrow := "narrow it to some servers"
		if a.req.RegexDescription {
			narrow = "match names only, or " + narrow
		}
		return badRequest("regex_scope_too_large", `the tools in scope offer %.1f MiB of text to "regex"; the limit is %d MiB: %s`,
			float64(n)/(1<<20), MaxRegexText>>20, narrow)
	} else if err := access.Spend(ctx, access.WorkRegex, n/RegexUnitBytes); err != nil {
		return err
	}
	var rows []int
	for i, t := range a.snap.Catalog.Tools() {
		if i%regexCheckCtxEvery == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if !a.inScope(i) {
			continue
		}
		desc := t.Description
		if len(desc) > regexDescBytes {
			desc = strings.ToValidUTF8(desc[:regexDescBytes], "")
		}
		if matches(re, t.Name) || (a.req.RegexDescription && matches(re, desc)) {
			rows = append(rows, i)
		}
	}
	return a.page(rows, SourceRegex)
}

// matches reports whether re matches s as written or as its reader sees
// it (analysis.Fold): an upstream's "de\u00adlete_rows" or "dеlete_rows"
// (a Cyrillic е) looks like delete_rows, which every ranker, the hints
// and the catalog's warning read it as, and a pattern "delete" looking
// for the destructive tools must find it too. Only text that is not ASCII
// can read otherwise, and only that is read again: matching 1,500
// descriptions of a kilobyte of Russian or Chinese, 2 to 3 ms as written,
// takes 5 to 9 ms, most of it Fold's (regexText counts such text twice).
func matches(re *regexp.Regexp, s string) bool {
	if re.MatchString(s) {
		return true
	}
	if analysis.IsASCII(s) {
		return false
	}
	seen := analysis.Fold(s)
	return seen != s && re.MatchString(seen)
}

// regexText is the bytes of text regex would read: the names of the tools
// in scope, and their descriptions' openings when asked; text that is not
// ASCII twice, since it may be read again as it is seen (matches).
func (a *answer) regexText() int {
	n := 0
	for i, t := range a.snap.Catalog.Tools() {
		if a.inScope(i) {
			n += regexBytes(t.Name)
			if a.req.RegexDescription {
				n += regexBytes(t.Description[:min(len(t.Description), regexDescBytes)])
			}
		}
	}
	return n
}

// regexBytes is what matches may read of s: its bytes, twice if it is not
// ASCII.
func regexBytes(s string) int {
	if analysis.IsASCII(s) {
		return len(s)
	}
	return 2 * len(s)
}
