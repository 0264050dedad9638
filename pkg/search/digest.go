package search

import (
	"cmp"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/toolsearch/toolsearch/pkg/analysis"
)

// MaxInputBytes bounds the ask a request may have the service read: a
// query, or a conversation's newest user turn. Longer input answers 413.
// Anything up to it is ranked through a digest of it. Of the turns before
// it, the digest reads a few, each through its first contextBytes, so
// their length is bounded only by the body's: a conversation's text
// counted whole against this bound was refused once the chat grew long
// (forty turns of 800 bytes), though its old turns were never read.
// MaxMessages bounds the turns: the digest reads the newest few, so it is
// set where the HTTP body's bound once (64 KiB) held the count already. At 64,
// an agent's loop held as Responses items (a call and its output a step,
// between two asks) was refused after twenty-odd steps, in 6 KB.
const (
	MaxInputBytes = 32 << 10
	MaxMessages   = 1024
)

// Message is one turn of a conversation, as the service reads it; JSON
// in the shapes chat APIs write turns in decodes to it (message.go).
type Message struct {
	Role    string `json:"role"` // user, assistant, system or tool
	Content string `json:"content"`
}

// The digest's budgets. The newest user turn is the request; its last
// tailBytes are kept as written (a long prompt puts its ask last), and the
// rest of it, like older turns, gives only its rarest terms in the
// catalog: words that pick tools out, not the prose around them.
const (
	tailBytes     = 1024
	restTerms     = 24   // from the newest user turn beyond its tail
	contextBytes  = 4096 // of an older turn, read for its rarest terms
	contextTurns  = 6    // older turns read, newest first
	contextTerms  = 8    // from the newest older user turn; halved per turn back
	assistantCut  = 2    // an assistant's or system turn gives this many times fewer
	maxDigestTerm = 64   // a longer token is not a word
)

// contextWeight is what each of the earlier turns' words weighs in a
// conversation's query, against a word of its newest user turn (the ask),
// for an ask of n terms: in BM25, and in the query's vector (each part's
// unit vector, the earlier turns' scaled by it, summed). A short ask ("close
// it out", "move it to Friday") leans on the turns before it, and weighs
// them fully, as the digest always did; a longer one says what it wants,
// and weighs them less, contextWords/n.
//
// At full weight, the earlier turns' rarest words outweighed a longer
// ask's common ones, so a conversation that turned to a new task ranked
// the last task's tool first: asked after another case's query and tool,
// the shared sets' right tools came first in 6-59 % of the sampled cases,
// against 53-91 % asked alone (evals/nomatch -conversation). contextWords
// is the smallest that kept the conversations that need their earlier
// turns (evals/conversations.jsonl) at their mean reciprocal rank
// (evals/README.md has both, for each value tried).
func contextWeight(n int) float64 {
	return min(1, contextWords/float64(max(n, 1)))
}

const contextWords = 2.5

// blob matches encoded payloads pasted into a message: data URIs, and long
// runs of base64 or hex, which carry no words and would fill a digest.
var blob = regexp.MustCompile(`data:[a-zA-Z0-9.+/-]*;base64,[A-Za-z0-9+/=_-]*|[A-Za-z0-9+/=_-]{64,}`)

// digest is the text a long query or a conversation is ranked on, and how
// much of it, from its start, is the newest user turn's: the rest is
// earlier turns' words. rarity scores a term by how well it picks tools out
// (BM25's IDF over the caller's view; 0 for a term no tool has).
func digest(msgs []Message, rarity func(term string) float64) (string, int) {
	newest := newestAsk(msgs)
	var b strings.Builder
	ask := blob.ReplaceAllString(msgs[newest].Content, " ")
	pasted := ""
	if at := lastParagraph(ask); at > 0 {
		pasted, ask = ask[:at], ask[at:]
	}
	var asked int
	if len(ask) <= tailBytes {
		b.WriteString(ask)
		asked = b.Len()
		if pasted != "" {
			writeLong(&b, pasted, rarity)
		}
	} else {
		writeLong(&b, ask, rarity)
		asked = b.Len()
	}
	budget := contextTerms
	for i, read := newest-1, 0; i >= 0 && read < contextTurns && budget > 0; i-- {
		if msgs[i].Role == "system" {
			// Standing instructions, the same in every request a router
			// sends, tell this request from no other; their rarest words
			// in the catalog were noise (a generic prompt cost one of the
			// 22 conversations its tool: evals/README.md).
			continue
		}
		if strings.TrimSpace(msgs[i].Content) == "" {
			// A turn of tool calls or reasoning alone (a Responses API
			// conversation has several between two words of text) is
			// not a turn further back for the ones before it.
			continue
		}
		n := budget
		if msgs[i].Role != "user" {
			n /= assistantCut
		}
		writeTerms(&b, rarest(blob.ReplaceAllString(head(msgs[i].Content, contextBytes), " "), n, rarity))
		budget /= 2
		read++
	}
	return b.String(), asked
}

// parts is what the query asks, and the context after it in text
// (empty for a query that is all ask).
func (q parsedQuery) parts() (ask, context string) {
	if q.ask == "" {
		return q.text, ""
	}
	return q.ask, q.text[len(q.ask):]
}

// digest sets the query's text to msgs' digest, and its ask to the
// digest's request part when the rest is context.
func (q *parsedQuery) digest(msgs []Message, rarity func(term string) float64) {
	var ask int
	q.text, ask = digest(msgs, rarity)
	q.ask = ""
	if ask < len(q.text) {
		q.ask = q.text[:ask]
	}
}

// writeLong writes a long text's rarest words before its last tailBytes,
// then those as written.
func writeLong(b *strings.Builder, text string, rarity func(string) float64) {
	if len(text) <= tailBytes {
		b.WriteString(" ")
		b.WriteString(text)
		return
	}
	cut := len(text) - tailBytes
	for cut < len(text) && text[cut] != ' ' && text[cut] != '\n' {
		cut++ // start on a word
	}
	writeTerms(b, rarest(text[:cut], restTerms, rarity))
	b.WriteString(" ")
	b.WriteString(text[cut:])
}

// lastParagraph is where a long text's last paragraph starts, after a
// blank line, when that paragraph is short enough to be an ask and has a
// word: a log, a document or a trace pasted, then what to do with it. It
// is 0 for a text with no such paragraph, or a short one.
func lastParagraph(text string) int {
	if len(text) <= tailBytes {
		return 0
	}
	end := len(strings.TrimRightFunc(text, unicode.IsSpace))
	worded := false // whether text[i+1:end] has a letter or digit (any non-ASCII byte counts)
	for i := end - 1; i > max(0, end-tailBytes); i-- {
		c := text[i]
		if c != '\n' {
			worded = worded || c >= utf8.RuneSelf || '0' <= c && c <= '9' || 'a' <= c|0x20 && c|0x20 <= 'z'
			continue
		}
		j := i - 1
		for j >= 0 && (text[j] == ' ' || text[j] == '\t' || text[j] == '\r') {
			j--
		}
		if worded && j >= 0 && text[j] == '\n' {
			return i + 1
		}
	}
	return 0
}

// newestAsk is the index of the turn a conversation is ranked on: its
// newest user turn or, with none, its newest turn.
func newestAsk(msgs []Message) int {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			return i
		}
	}
	return len(msgs) - 1
}

// head is text's first n bytes at most, ending where a word does.
func head(text string, n int) string {
	if len(text) <= n {
		return text
	}
	cut := n
	for cut > 0 && text[cut] != ' ' && text[cut] != '\n' {
		cut-- // end on a word
	}
	return text[:cut]
}

func writeTerms(b *strings.Builder, terms []string) {
	for _, t := range terms {
		b.WriteString(" ")
		b.WriteString(t)
	}
}

// rarest returns text's n words whose terms score highest, first seen
// first among equals; words whose terms no tool has are left out.
func rarest(text string, n int, rarity func(string) float64) []string {
	if n <= 0 {
		return nil
	}
	type cand struct {
		word  string
		score float64
	}
	var cands []cand
	seen := map[string]bool{}
	for _, w := range analysis.Words(text) {
		if len(w) > maxDigestTerm || seen[w] {
			continue
		}
		seen[w] = true
		best := 0.0
		for _, t := range analysis.English.Terms(w) {
			best = max(best, rarity(t))
		}
		if best > 0 {
			cands = append(cands, cand{w, best})
		}
	}
	slices.SortStableFunc(cands, func(a, b cand) int { return cmp.Compare(b.score, a.score) })
	out := make([]string, 0, min(n, len(cands)))
	for _, c := range cands[:min(n, len(cands))] {
		out = append(out, c.word)
	}
	return out
}
