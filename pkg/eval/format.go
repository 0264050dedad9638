package eval

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Formats lists the report formats Write accepts.
var Formats = []string{"text", "json", "junit", "markdown"}

// Write renders rep in format to w. title names the run (catalog and cases).
func Write(w io.Writer, rep *Report, format, title string) error {
	switch format {
	case "text", "":
		return writeText(w, rep, title)
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Title string `json:"title"`
			*Report
		}{title, rep})
	case "junit":
		return writeJUnit(w, rep, title)
	case "markdown":
		return writeMarkdown(w, rep, title)
	}
	return fmt.Errorf("%w: unknown format %q (want one of %s)", ErrBadInput, format, strings.Join(Formats, ", "))
}

func writeText(w io.Writer, rep *Report, title string) error {
	s := rep.Summary
	fmt.Fprintf(w, "eval: %s\n", title)
	fmt.Fprintf(w, "cases %d, k %d\n", s.Cases, rep.K)
	fmt.Fprintf(w, "recall@%d  %.3f  (%d expected, %d found)\n", rep.K, s.Recall, s.Expected, s.Found)
	fmt.Fprintf(w, "recall@%d mean per case  %.3f   recall@1  %.3f   recall@5  %.3f\n", rep.K, s.RecallMean, s.RecallAt1, s.RecallAt5)
	fmt.Fprintf(w, "hit@1  %.3f   MRR@%d  %.3f   nDCG@%d  %.3f\n", s.HitAt1, rep.K, s.MRR, rep.K, s.NDCG)
	l := rep.Latency
	fmt.Fprintf(w, "latency per query: mean %.2f ms, p50 %.2f ms, p95 %.2f ms, max %.2f ms (total %.0f ms)\n", l.MeanMS, l.P50MS, l.P95MS, l.MaxMS, l.TotalMS)
	if c := rep.Calibration; c != nil {
		fmt.Fprintf(w, "confidence: threshold %.3f separates right from wrong first tools with accuracy %.3f; %.0f%% of answers above it, hit@1 %.3f above, %.3f below\n",
			c.Threshold, c.Accuracy, 100*c.ConfidentShare, c.PrecisionConfident, c.PrecisionUnconfident)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "category\tcases\texpected\tfound\trecall\tmean\thit@1\tMRR\tnDCG\t\n")
	for _, c := range rep.Categories {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.3f\t%.3f\t%.3f\t%.3f\t%.3f\t\n", c.Category, c.Cases, c.Expected, c.Found, c.Recall, c.RecallMean, c.HitAt1, c.MRR, c.NDCG)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	writeRegressionsText(w, rep)
	if len(rep.Misses) == 0 {
		_, err := fmt.Fprintln(w, "\nno misses")
		return err
	}
	fmt.Fprintf(w, "\nmisses (%d):\n", len(rep.Misses))
	for _, m := range rep.Misses {
		fmt.Fprintf(w, "  %s [%s] %q\n    expected %s: %s; top: %s\n", m.Case, m.Category, m.Query, m.Expected, rankText(m.Rank), strings.Join(m.Top, ", "))
	}
	return nil
}

func writeRegressionsText(w io.Writer, rep *Report) {
	if rep.Regressions == nil {
		return
	}
	if len(rep.Regressions) == 0 {
		fmt.Fprintln(w, "\nno regressions against the baseline")
		return
	}
	fmt.Fprintf(w, "\nregressions against the baseline (%d):\n", len(rep.Regressions))
	for _, r := range rep.Regressions {
		fmt.Fprintf(w, "  %s [%s] %s: %s -> %s\n", r.Case, r.Category, r.Tool, rankWord(r.Was), rankWord(r.Now))
	}
}

func rankText(r int) string {
	if r == 0 {
		return fmt.Sprintf("not in top %d", Depth)
	}
	return fmt.Sprintf("rank %d", r)
}

func writeMarkdown(w io.Writer, rep *Report, title string) error {
	s := rep.Summary
	fmt.Fprintf(w, "### Tool-search eval: %s\n\n", mdText(title))
	fmt.Fprintf(w, "| metric | value |\n|---|---|\n")
	fmt.Fprintf(w, "| cases | %d |\n| recall@%d | **%.3f** (%d of %d expected) |\n| recall@%d, mean per case | %.3f |\n", s.Cases, rep.K, s.Recall, s.Found, s.Expected, rep.K, s.RecallMean)
	fmt.Fprintf(w, "| recall@1 / recall@5 | %.3f / %.3f |\n", s.RecallAt1, s.RecallAt5)
	fmt.Fprintf(w, "| hit@1 | %.3f |\n| MRR@%d | %.3f |\n| nDCG@%d | %.3f |\n| latency p50 / p95 | %.2f / %.2f ms |\n\n", s.HitAt1, rep.K, s.MRR, rep.K, s.NDCG, rep.Latency.P50MS, rep.Latency.P95MS)
	fmt.Fprintf(w, "| category | cases | recall@%d | hit@1 | MRR | nDCG |\n|---|---:|---:|---:|---:|---:|\n", rep.K)
	for _, c := range rep.Categories {
		fmt.Fprintf(w, "| %s | %d | %.3f | %.3f | %.3f | %.3f |\n", mdText(c.Category), c.Cases, c.Recall, c.HitAt1, c.MRR, c.NDCG)
	}
	if rep.Regressions != nil {
		if len(rep.Regressions) == 0 {
			fmt.Fprintf(w, "\nNo regressions against the baseline.\n")
		} else {
			fmt.Fprintf(w, "\n**%d regressions against the baseline**\n\n| case | tool | was | now |\n|---|---|---|---|\n", len(rep.Regressions))
			for _, r := range rep.Regressions {
				fmt.Fprintf(w, "| %s | %s | %s | %s |\n", mdText(r.Case), mdCode(r.Tool), rankWord(r.Was), rankWord(r.Now))
			}
		}
	}
	if len(rep.Misses) > 0 {
		fmt.Fprintf(w, "\n<details><summary>%d misses</summary>\n\n| case | query | expected | rank | top |\n|---|---|---|---|---|\n", len(rep.Misses))
		for _, m := range rep.Misses {
			top := make([]string, len(m.Top))
			for i, t := range m.Top {
				top[i] = mdCode(t)
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", mdText(m.Case), mdText(m.Query), mdCode(m.Expected), rankText(m.Rank), strings.Join(top, ", "))
		}
		fmt.Fprintln(w, "\n</details>")
	}
	return nil
}

// mdText is s as text in a Markdown table cell, shown as written: the
// characters that can end a cell or start a link, an image, emphasis,
// code, an entity or HTML are backslash-escaped (CommonMark allows it of
// any punctuation), so a query, a case id or a title can do none of it;
// line breaks become spaces. A URL may still show as one: its text is
// what it links to.
func mdText(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n' || r == '\r':
			b.WriteByte(' ')
		case strings.ContainsRune(mdActive, r):
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// codeEscapes are mdCode's: a report names thousands of tools.
var codeEscapes = strings.NewReplacer("\n", " ", "\r", " ", "|", `\|`)

// mdActive are the characters mdText escapes.
const mdActive = "\\`*_[]<>|&~!"

// mdCode is s, a tool name (an upstream's, untrusted), as a code span in
// a Markdown table cell: fenced by more backticks than it holds in a
// row, its pipes escaped (a table splits cells before it reads spans).
func mdCode(s string) string {
	s = codeEscapes.Replace(s)
	run, longest := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", longest+1)
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Time     float64     `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      float64       `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Error     *junitFailure `xml:"error,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// writeJUnit renders one test suite per category and one test case per eval
// case; a case fails when any expected tool is outside the top k.
func writeJUnit(w io.Writer, rep *Report, title string) error {
	misses := map[string][]Miss{}
	for _, m := range rep.Misses {
		misses[m.Case] = append(misses[m.Case], m)
	}
	regressed := map[string]string{}
	for _, r := range rep.Regressions {
		regressed[r.Case] += fmt.Sprintf("%s: %s -> %s\n", r.Tool, rankWord(r.Was), rankWord(r.Now))
	}
	var out junitSuites
	bySuite := map[string]int{}
	for _, c := range rep.Cases {
		i, ok := bySuite[c.Category]
		if !ok {
			i = len(out.Suites)
			bySuite[c.Category] = i
			out.Suites = append(out.Suites, junitSuite{Name: "toolsearch eval " + title + ": " + c.Category})
		}
		s := &out.Suites[i]
		jc := junitCase{Name: c.ID, Classname: "toolsearch." + c.Category, Time: c.TookMS / 1000}
		switch {
		case c.Error != "":
			jc.Error = &junitFailure{Message: "search failed", Text: c.Error}
			s.Errors++
		case regressed[c.ID] != "":
			jc.Failure = &junitFailure{Message: "regressed against the baseline", Text: regressed[c.ID]}
			s.Failures++
		case !c.Passed():
			var b strings.Builder
			for _, m := range misses[c.ID] {
				fmt.Fprintf(&b, "query %q: expected %s at %s within top %d; top: %s\n", m.Query, m.Expected, rankText(m.Rank), rep.K, strings.Join(m.Top, ", "))
			}
			jc.Failure = &junitFailure{Message: fmt.Sprintf("%d of %d expected tools in top %d", c.Found, c.Expected, rep.K), Text: b.String()}
			s.Failures++
		}
		s.Tests++
		s.Time += jc.Time
		s.Cases = append(s.Cases, jc)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
