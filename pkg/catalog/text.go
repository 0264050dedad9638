package catalog

import (
	"strings"

	"github.com/toolsearch/toolsearch/pkg/analysis"
	"github.com/toolsearch/toolsearch/pkg/redact"
)

// Fields is a tool's searchable text, by where it came from, so that a
// ranker can weigh a hit in the name above one in a parameter description.
type Fields struct {
	Name string
	// NameWords is the name's words ("list issues" for list_issues) when
	// they are not just the name; Text gives both.
	NameWords   string
	Title       string
	Description string // truncated to MaxDescEmbedBytes
	Params      string // parameter names (and their words) and descriptions
	Enums       string // enum values of parameters
	Server      string
	ServerWords string // as NameWords, for the server's name
	// ParamNames are the top-level parameters' names as the schema spells
	// them, sorted, for what reads a tool by its parameters (package
	// hints) without parsing the schema again.
	ParamNames []string
}

// Fields extracts the tool's searchable text. Schemas are untrusted input:
// the walk is bounded in depth and size, and ignores anything malformed.
func (t Tool) Fields() Fields {
	var params, enums string
	var names []string
	if t.Schemas.HasInput() {
		params, enums, names = readSchema(t.Schemas)
	}
	return Fields{
		ParamNames:  names,
		Name:        t.Name,
		NameWords:   wordsOf(t.Name),
		Title:       t.Title,
		Description: redact.Clip(t.Description, MaxDescEmbedBytes, ""),
		Params:      strings.TrimRight(params, "; "),
		Enums:       strings.TrimRight(enums, ", "),
		Server:      t.Server,
		ServerWords: wordsOf(t.Server),
	}
}

// Text is the one string embedded for a tool: its name (with the words split
// out of snake_case, camelCase, kebab-case and dotted names), title,
// description, parameter names and descriptions, enum values, and server.
// Labels between the parts give an embedding model the structure; the local
// embedder ignores them as near-stop-words.
//
// Example, for github/list_issues with a "state" enum:
//
//	list_issues (list issues). List issues in a repository. Parameters: state: Filter by state. Values: open, closed. Server: github.
//
// A build, which has the fields already, writes the same text from their
// Parts (TextLen, WriteText).
func (t Tool) Text() string {
	parts := t.Fields().Parts()
	var b strings.Builder
	b.Grow(TextLen(&parts))
	WriteText(&b, &parts)
	return b.String()
}

// TextLen is the length of the Text whose Parts are parts.
func TextLen(parts *[NumParts]string) int {
	n := 0
	for i, p := range parts {
		if p != "" || i == PartEnd {
			n += len(partBefore[i]) + len(p) + len(partAfter[i])
		}
	}
	return n
}

// WriteText writes to b the Text whose Parts are parts, for a caller that
// keeps many texts in one buffer.
func WriteText(b *strings.Builder, parts *[NumParts]string) {
	for i, p := range parts {
		if p != "" || i == PartEnd {
			b.WriteString(partBefore[i])
			b.WriteString(p)
			b.WriteString(partAfter[i])
		}
	}
}

// The parts of Text, in order: each is a field, or the label Text puts
// before a field, so that what analyses Text can analyse its parts once
// and read them apart (BM25 its fields, an embedder the whole text).
const (
	PartName = iota
	PartNameWords
	PartTitle
	PartDescription
	PartParamsLabel
	PartParams
	PartValuesLabel
	PartEnums
	PartServerLabel
	PartServer
	PartServerWords
	PartEnd // the closing full stop: no words
	NumParts
)

// Parts is Text in parts: joined with the punctuation Text puts around
// them (which has no words), they are Text.
func (f Fields) Parts() [NumParts]string {
	var p [NumParts]string
	p[PartName], p[PartNameWords], p[PartTitle], p[PartDescription] = f.Name, f.NameWords, f.Title, f.Description
	if f.Params != "" {
		p[PartParamsLabel], p[PartParams] = "Parameters:", f.Params
	}
	if f.Enums != "" {
		p[PartValuesLabel], p[PartEnums] = "Values:", f.Enums
	}
	p[PartServerLabel], p[PartServer], p[PartServerWords] = "Server:", f.Server, f.ServerWords
	return p
}

// partBefore and partAfter are the punctuation around each part of Text
// that is not empty.
var (
	partBefore = [NumParts]string{PartNameWords: " (", PartTitle: ". ", PartDescription: ". ", PartParamsLabel: " ", PartParams: " ", PartValuesLabel: " ", PartEnums: " ", PartServerLabel: " ", PartServer: " ", PartServerWords: " (", PartEnd: "."}
	partAfter  = [NumParts]string{PartNameWords: ")", PartServerWords: ")"}
)

// wordsOf returns a name's words joined by spaces when splitting the name
// changes it, "" otherwise.
func wordsOf(name string) string {
	words := analysis.Identifier(name)
	if words == strings.ToLower(name) {
		return ""
	}
	return words
}
