// Package bm25 ranks tools lexically with BM25F: Okapi BM25 over several
// weighted fields, so a query word found in a tool's name counts for more
// than the same word in a parameter description.
package bm25

import (
	"context"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/toolsearch/toolsearch/pkg/analysis"
	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/index"
	"github.com/toolsearch/toolsearch/pkg/internal/chunk"
)

// Field indexes a document's text by where it came from.
type Field int

// The fields of a tool.
const (
	Name Field = iota
	Server
	Title
	Description
	Params
	Enums
	// Concepts holds the synonym concepts of every word above, so that a
	// query word meets its synonyms at a low weight.
	Concepts
	// Pairs holds each two neighbouring terms of every field above the
	// concepts, so that a query saying "current weather" favours the tool
	// that says so over one with "current" and "weather" far apart. New
	// fills it; a Doc leaves it empty.
	Pairs
	numFields
)

var fieldNames = [numFields]string{"name", "server", "title", "description", "params", "enums", "concepts", "pairs"}

func (f Field) String() string { return fieldNames[f] }

// Config holds BM25F's knobs. The zero value is not useful; start from
// DefaultConfig.
type Config struct {
	K1      float64
	B       float64
	Weights [numFields]float64
}

// DefaultConfig: k1 and b are the usual Okapi values. The weights make a
// name word worth three description words, and a parameter word about half
// of one, because names are chosen to say what a tool does and parameter
// text mostly says how.
var DefaultConfig = Config{
	K1:      1.2,
	B:       0.75,
	Weights: [numFields]float64{Name: 3, Server: 1.5, Title: 2, Description: 1, Params: 0.5, Enums: 0.4, Concepts: 0.3, Pairs: 1},
}

// PairWeight scales the idf of a query's neighbouring-term pairs: a pair is
// rare, so its full idf would outweigh the words it is made of. Chosen on
// the five shared sets with the Pairs field weight: the gain holds for
// pair weights from 0.1 to 0.5 and field weights from 0.5 to 2
// (evals/README.md).
const PairWeight = 0.3

// BroaderWeight scales the idf of a query term's hypernyms
// (analysis.Analyzer.Broader): "symptom" is weaker evidence for a query
// about a headache than "headache" would be. Chosen on the five shared
// sets: anything from 0.2 to 0.5 measured within half a point of 0.3
// (evals/README.md).
const BroaderWeight = 0.3

// NumberWeight scales the idf of a query term that is a number. A number in
// a request is nearly always a value for the tool to act on (an amount, an
// id, a date: "add 7 and 9", "order 81234"), and it meets tools whose
// names number their variants ("Rentals_2_Search") by chance. It still
// counts, for the numbers that do name things ("7zip"). Chosen on the
// five shared sets (0, 0.3, 0.5, 0.6 tried): 0.5 and 0.6 lose nothing on
// any set, and whichever four choose, the fifth gains or holds
// (evals/README.md).
const NumberWeight = 0.5

// number reports whether a term is digits only.
func number(t string) bool {
	return t != "" && strings.Trim(t, "0123456789") == ""
}

// DerivedWeight scales the idf of the derived forms of a query term that
// the catalog uses too: a query for the "multiplication" of two numbers
// meets a tool that says "multiply" even where another tool says
// "multiplication", but the word the query used still counts for more.
// Chosen on the five shared sets (0.2 to 1 tried): chosen on any four, the
// weight is 0.4 or 0.5 and the fifth gains or holds (evals/README.md).
const DerivedWeight = 0.4

// posting is one document that has a term. impact is the term's whole
// BM25F weight in the document but for idf, the field-weighted,
// length-normalised term frequency saturated by k1 (tf/(k1+tf)), worked
// out once at build so that scoring a posting is one multiply-add.
type posting struct {
	doc    int32
	fields uint8 // the fields that hold the term, for Matched
	impact float64
}

// Index is an immutable inverted index over tools. It is safe for
// concurrent use.
type Index struct {
	p        Config
	n        int
	postings map[string][]posting
	scratch  sync.Pool
}

// Doc is one tool's text, by field.
type Doc [numFields]string

// DocOf splits a tool's text, its fields already extracted, into the
// index's fields.
func DocOf(t catalog.Tool, f catalog.Fields) Doc {
	d := Doc{Name: t.Name, Server: t.Server, Title: f.Title, Description: f.Description, Params: f.Params, Enums: f.Enums}
	d[Concepts] = conceptText(strings.Join(d[:Concepts], " "))
	return d
}

// conceptToken spells a concept id as one word that Terms keeps whole and
// no real text contains.
func conceptToken(id string) string { return conceptPrefix + conceptName(id) }

// conceptName is a concept id ("c:NAME") without its prefix.
func conceptName(id string) string { return strings.TrimPrefix(id, "c:") }

const conceptPrefix = "qqconcept"

// conceptText is the concept ids of text's terms, as words.
func conceptText(text string) string {
	var b strings.Builder
	for _, t := range analysis.English.Terms(text) {
		for _, c := range analysis.English.Related(t) {
			b.WriteString(conceptToken(c))
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// New indexes docs, one per tool, in row order.
func New(docs []Doc, p Config) *Index {
	ix := &Index{p: p, n: len(docs), postings: map[string][]posting{}}
	// Field counts first: a posting's impact needs the average field
	// lengths, known once every document is counted.
	tfsOf := map[string][]counts{}
	lens := make([][numFields]uint16, len(docs))
	// Analysing the texts is most of the work, and each document's is its
	// own: the cores share it. Postings are then gathered in document
	// order, as Matched and Fraction expect.
	// A window at a time, so the counts waiting to be gathered stay a few
	// thousand documents' worth, whatever the catalog's size.
	const window = 8192
	perDoc := make([][]termCounts, min(window, len(docs)))
	var total [numFields]float64
	for start := 0; start < len(docs); start += window {
		part := docs[start:min(start+window, len(docs))]
		chunk.Each(len(part), func(_, lo, hi int) {
			for i := lo; i < hi; i++ {
				perDoc[i], lens[start+i] = countDoc(part[i])
			}
		})
		for i := range part {
			d := start + i
			for _, tc := range perDoc[i] {
				tfsOf[tc.term] = append(tfsOf[tc.term], counts{doc: int32(d), tf: tc.tf})
			}
			perDoc[i] = nil
			for f := range total {
				total[f] += float64(lens[d][f])
			}
		}
	}
	var avgLen [numFields]float64
	for f := range total {
		if ix.n > 0 {
			avgLen[f] = total[f] / float64(ix.n)
		}
	}
	norm := make([][numFields]float64, len(docs))
	for d := range lens {
		for f := range numFields {
			norm[d][f] = 1
			if avgLen[f] > 0 {
				norm[d][f] = 1 - p.B + p.B*float64(lens[d][f])/avgLen[f]
			}
		}
	}
	for term, cs := range tfsOf {
		ps := make([]posting, len(cs))
		for i, c := range cs {
			var tf float64
			var fields uint8
			for f := range numFields {
				if c.tf[f] == 0 {
					continue
				}
				fields |= 1 << f
				if p.Weights[f] != 0 {
					tf += p.Weights[f] * float64(c.tf[f]) / norm[c.doc][f]
				}
			}
			ps[i] = posting{doc: c.doc, fields: fields, impact: tf / (p.K1 + tf)}
		}
		ix.postings[term] = ps
	}
	ix.scratch.New = func() any {
		s := make([]float32, ix.n)
		return &s
	}
	return ix
}

// counts are one document's field counts of a term.
type counts struct {
	doc int32
	tf  [numFields]uint16
}

// termCounts are a term's field counts in one document.
type termCounts struct {
	term string
	tf   [numFields]uint16
}

// countDoc counts each term of doc by field, pairs included, and the
// fields' lengths in terms.
func countDoc(doc Doc) ([]termCounts, [numFields]uint16) {
	var lens [numFields]uint16
	at := map[string]int{} // term -> its place in out
	var out []termCounts
	count := func(term string, f Field) {
		i, ok := at[term]
		if !ok {
			i = len(out)
			at[term] = i
			out = append(out, termCounts{term: term})
		}
		if out[i].tf[f] < math.MaxUint16 {
			out[i].tf[f]++
		}
		if lens[f] < math.MaxUint16 {
			lens[f]++
		}
	}
	for f, text := range doc[:Pairs] {
		terms := analysis.English.Terms(text)
		for i, term := range terms {
			count(term, Field(f))
			if i > 0 && Field(f) < Concepts {
				count(pair(terms[i-1], term), Pairs)
			}
		}
	}
	return out, lens
}

// pair is the index key of two neighbouring terms; no term has a space.
func pair(a, b string) string { return a + " " + b }

// Has reports whether some document has term (analysed) in any field.
func (ix *Index) Has(term string) bool { return len(ix.postings[term]) > 0 }

// IDF is term's inverse document frequency here; 0 for a term no
// document has.
func (ix *Index) IDF(term string) float64 {
	df := len(ix.postings[term])
	if df == 0 {
		return 0
	}
	return ix.idf(df)
}

// Len is the number of documents.
func (ix *Index) Len() int { return ix.n }

// idf is BM25's inverse document frequency in the Lucene form,
// ln(1 + (N-df+0.5)/(df+0.5)): positive however common the word, so a word
// in most tools still counts for a little, with no floor needed.
func (ix *Index) idf(df int) float64 {
	return math.Log(1 + (float64(ix.n)-float64(df)+0.5)/(float64(df)+0.5))
}

// Query is a query's distinct terms looked up in one index, so that a
// query scored, rated and explained is tokenised once. It is immutable.
type Query struct {
	ix    *Index
	terms []queryTerm
}

type queryTerm struct {
	term     string
	postings []posting // in document order
	idf      float64
	// from and name say where the term came from, for explanations
	// (Matched): the query's own term or pair, named as itself; a concept,
	// named by its id (the term is its stemmed token); a hypernym or a
	// derived form of a query word. Labels are put together only when
	// explained, so a query pays nothing for them.
	from termSource
	name string
}

type termSource uint8

const (
	fromQuery termSource = iota
	fromConcept
	fromBroader
	fromDerived
)

// sourcePrefix is each termSource's prefix in an explanation's label.
var sourcePrefix = [...]string{fromQuery: "", fromConcept: "concept:", fromBroader: "broader:", fromDerived: "derived:"}

// Prepare looks up the query's terms, each once, then its synonym concepts.
func (ix *Index) Prepare(query string) Query {
	return ix.PrepareTerms(analysis.English.Terms(query))
}

// PrepareTerms is Prepare for a query already split into analysed terms.
// A term no tool uses is expanded to its derivationally related forms that
// some tool does (analysis.Analyzer.Expand), or failing those to its
// nearest hypernyms some tool uses, at BroaderWeight
// (analysis.Analyzer.Broader). A term some tool does use also looks up its
// derived forms, at DerivedWeight. Each two neighbouring terms of the query
// are also looked up as a pair, at PairWeight.
func (ix *Index) PrepareTerms(terms []string) Query {
	asked := len(terms) // Expand appends to the query's own terms
	broader := analysis.English.Broader(terms, ix.Has)
	terms = analysis.English.Expand(terms, ix.Has)
	q := Query{ix: ix, terms: make([]queryTerm, 0, len(terms)+len(broader))}
	add := func(t string, weight float64, from termSource, name string) {
		// Linear: a query has tens of terms (MaxQueryBytes bounds it).
		for _, x := range q.terms {
			if x.term == t {
				return
			}
		}
		ps := ix.postings[t]
		q.terms = append(q.terms, queryTerm{term: t, postings: ps, idf: weight * ix.idf(len(ps)), from: from, name: name})
	}
	for _, t := range terms {
		w := 1.0
		if number(t) {
			w = NumberWeight
		}
		add(t, w, fromQuery, t)
	}
	for _, t := range terms {
		for _, c := range analysis.English.Related(t) {
			// The token as the documents' text was analysed, so stemmed.
			add(analysis.Stem(conceptToken(c)), 1, fromConcept, conceptName(c))
		}
	}
	for _, t := range broader {
		add(t, BroaderWeight, fromBroader, t)
	}
	for _, t := range terms[:asked] {
		if !ix.Has(t) {
			continue // its relatives are query terms already, at full weight
		}
		for _, r := range analysis.English.Derived(t) {
			if ix.Has(r) {
				add(r, DerivedWeight, fromDerived, r)
			}
		}
	}
	for i := 1; i < asked; i++ {
		if p := pair(terms[i-1], terms[i]); ix.Has(p) { // most pairs are in no tool: no term to carry
			add(p, PairWeight, fromQuery, p)
		}
	}
	return q
}

// Search ranks the documents kept by keep (all when nil) against the query
// and returns the k best with a positive score, best first.
func (q Query) Search(ctx context.Context, k int, keep func(row int) bool) ([]index.Match, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ix := q.ix
	sp := ix.scratch.Get().(*[]float32)
	defer ix.scratch.Put(sp)
	scores := *sp
	if !q.ScoresInto(scores) {
		return []index.Match{}, nil
	}
	positive := func(row int) bool { return scores[row] > 0 && (keep == nil || keep(row)) }
	return index.TopK(scores, k, positive), nil
}

// ScoresInto writes every document's score into dst (Len elements; 0 for
// no match) and reports whether the query had any term.
func (q Query) ScoresInto(dst []float32) bool {
	dst = dst[:q.ix.n]
	clear(dst)
	for _, t := range q.terms {
		for _, pt := range t.postings {
			dst[pt.doc] += float32(t.idf * pt.impact)
		}
	}
	return len(q.terms) > 0
}

// Fraction is row's BM25 score for the query as a fraction of the most any
// document could score (every query term matched without limit), in
// [0,1]. Unlike the raw score, it does not grow with the query's length,
// so it can be compared across queries.
func (q Query) Fraction(row int) float32 {
	var got, best float64
	for _, t := range q.terms {
		best += t.idf
		if i, ok := slices.BinarySearchFunc(t.postings, int32(row), func(p posting, d int32) int { return int(p.doc - d) }); ok {
			got += t.idf * t.postings[i].impact
		}
	}
	if best == 0 {
		return 0
	}
	return float32(got / best)
}

// Matched returns the query terms found in document row, and in which
// fields, for explaining a ranking. A synonym concept reads "concept:NAME",
// a hypernym of a query word "broader:TERM", a derived form of a query word
// "derived:TERM", and two neighbouring terms
// found side by side read as the two, in field "pairs".
func (q Query) Matched(row int) map[string][]string {
	out := map[string][]string{}
	for _, t := range q.terms {
		label := sourcePrefix[t.from] + t.name
		if i, ok := slices.BinarySearchFunc(t.postings, int32(row), func(p posting, d int32) int { return int(p.doc - d) }); ok {
			for f := range numFields {
				if t.postings[i].fields&(1<<f) != 0 {
					out[label] = append(out[label], Field(f).String())
				}
			}
		}
	}
	return out
}
