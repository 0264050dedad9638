// Package catgen writes synthetic tool catalogs of any size, for the
// start-up, memory and query measurements at scale (BENCHMARKS.md, make
// load, the benchmarks of search). Its tools look like real MCP tools:
// thousands of servers of 3 to 60 tools, names of a verb and a noun,
// descriptions of one to three sentences, and input schemas with
// described parameters, some with enums. The words are its own (no eval
// set's text). Common words are drawn with a skewed frequency, so they
// have long posting lists, as in real catalogs; product and jargon words
// are drawn from an open-ended Zipf distribution, so the vocabulary keeps
// growing with the catalog (Heaps' law), as a real catalog's does, and a
// large catalog is not a small one repeated. The same seed writes the same
// catalog. Spec.Text makes each tool's text longer, as a catalog whose
// tools are documented at length (descriptions of paragraphs, dozens of
// parameters) has it: memory grows with the text, not only the tools.
// Spec.Script writes the descriptions in another script's letters, since
// text that is not ASCII is read by other code than English is.
package catgen

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"unicode"
)

// Spec says which catalog to write: Tools tools, drawn from Seed (the
// same seed writes the same catalog), each with about Text times the
// text of the first catalogs measured (tools of about 440 bytes; real
// MCP servers' run from a few hundred bytes to tens of kilobytes): its
// description and its parameters. Text 0 is 1. Script "cyrillic" writes
// every description, the tools' and their parameters', in Cyrillic
// letters, each Latin letter as one (so the words are no language's, but
// their letters are read as Russian text's are); names and enum values
// stay ASCII, as identifiers are. "" is English's letters.
type Spec struct {
	Tools  int
	Seed   uint64
	Text   int
	Script string
}

// Scripts are the values of Spec.Script.
var Scripts = []string{"", "cyrillic"}

// CheckScript reports a script that is not one of Scripts, so that a
// command can refuse it before it writes anything.
func CheckScript(script string) error {
	if !slices.Contains(Scripts, script) {
		return fmt.Errorf("must be one of %q, got %q", Scripts, script)
	}
	return nil
}

// Write streams the catalog as JSON ({"servers":[...]}) to w, server by
// server, so 100,000 tools never sit in memory at once.
func (sp Spec) Write(w io.Writer) error {
	if sp.Text < 0 {
		return fmt.Errorf("catgen: text %d, want at least 1", sp.Text)
	}
	if err := CheckScript(sp.Script); err != nil {
		return fmt.Errorf("catgen: script %w", err)
	}
	n, text := sp.Tools, max(sp.Text, 1)
	r := rand.New(rand.NewPCG(sp.Seed, 7))
	g := gen{r: r, rare: rand.NewZipf(r, 1.05, 8, 1<<22), text: text, cyrillic: sp.Script == "cyrillic"}
	if _, err := io.WriteString(w, `{"servers":[`); err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	for i, made := 0, 0; made < n; i++ {
		size := min(3+r.IntN(58), n-made)
		s := server{Name: fmt.Sprintf("%s-%s-%d", g.pick(domains), g.rareWord(), i)}
		seen := map[string]bool{}
		for len(s.Tools) < size {
			t := g.tool()
			if seen[t.Name] {
				t.Name = fmt.Sprintf("%s_%d", t.Name, len(s.Tools))
			}
			seen[t.Name] = true
			s.Tools = append(s.Tools, t)
		}
		made += size
		if i > 0 {
			if _, err := io.WriteString(w, ","); err != nil {
				return err
			}
		}
		if err := enc.Encode(s); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, "]}\n")
	return err
}

type tool struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	InputSchema map[string]any `json:"inputSchema"`
}

type server struct {
	Name  string `json:"name"`
	Tools []tool `json:"tools"`
}

type gen struct {
	r        *rand.Rand
	rare     *rand.Zipf
	text     int  // how many times a tool's text: Spec.Text
	cyrillic bool // Spec.Script
}

// prose is a description as the catalog's script writes it.
func (g gen) prose(s string) string {
	if !g.cyrillic {
		return s
	}
	return strings.Map(func(r rune) rune {
		switch {
		case 'a' <= r && r <= 'z':
			return cyrillic[r-'a']
		case 'A' <= r && r <= 'Z':
			return unicode.ToUpper(cyrillic[r-'A'])
		}
		return r
	}, s)
}

// cyrillic is the Cyrillic letter each Latin one is written as.
var cyrillic = []rune("абцдефгхийклмнопярстужвьыз")

// pick draws from words with a skewed frequency: the first words are
// common, the last rare.
func (g gen) pick(words []string) string {
	return words[min(int(g.r.ExpFloat64()*float64(len(words))/4), len(words)-1)]
}

// rareWord is a product or jargon word: its rank is Zipf-distributed over
// millions, and the word is spelt from its rank, so the same rank is the
// same word and new ranks keep appearing as a catalog grows.
func (g gen) rareWord() string {
	k := g.rare.Uint64()
	var b strings.Builder
	for {
		b.WriteString(syllables[k%uint64(len(syllables))])
		k /= uint64(len(syllables))
		if k == 0 {
			break
		}
	}
	return b.String()
}

func (g gen) tool() tool {
	verb, noun := g.pick(verbs), g.pick(nouns)
	name := verb + "_" + noun
	switch g.r.IntN(6) {
	case 0, 1:
		name = verb + "_" + g.pick(adjectives) + "_" + noun
	case 2:
		name = verb + "_" + g.rareWord() + "_" + noun
	}
	var d strings.Builder
	fmt.Fprintf(&d, "%s %s %s %s %s.", capital(verb), g.article(), g.pick(adjectives), noun, g.tail())
	for range g.r.IntN(3) {
		fmt.Fprintf(&d, " %s %s %s %s.", capital(g.pick(openers)), g.pick(verbs), g.pick(adjectives), g.pick(nouns)+"s")
	}
	if g.r.IntN(4) != 0 {
		fmt.Fprintf(&d, " Works with %s %s and %s.", capital(g.rareWord()), g.pick(nouns)+"s", g.rareWord())
	}
	props := map[string]any{}
	var required []string
	for i := range 1 + g.r.IntN(6) {
		g.param(props, &required, i > 0)
	}
	// A longer text's draws all come after a text-1 tool's, so text 1
	// writes the catalog the first measurements were made on, byte for
	// byte.
	for range g.text - 1 {
		fmt.Fprintf(&d, " %s %s %s %s %s.", capital(g.pick(openers)), g.pick(verbs), g.article(), g.pick(adjectives), g.pick(nouns))
		for range g.r.IntN(3) {
			fmt.Fprintf(&d, " %s %s %s %s %s.", capital(g.pick(openers)), g.pick(verbs), g.pick(nouns)+"s", g.tail(), g.rareWord())
		}
		for range 1 + g.r.IntN(6) {
			g.param(props, &required, true)
		}
	}
	schema := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		schema["required"] = required
	}
	return tool{Name: name, Description: g.prose(d.String()), InputSchema: schema}
}

// param adds a described parameter to props, perhaps required; suffixed
// (pname_id) at random, when suffix.
func (g gen) param(props map[string]any, required *[]string, suffix bool) {
	pname := g.pick(nouns)
	if suffix && g.r.IntN(2) == 0 {
		pname += "_" + g.pick(suffixes)
	}
	desc := fmt.Sprintf("The %s %s to %s.", g.pick(adjectives), g.pick(nouns), g.pick(verbs))
	if g.r.IntN(3) == 0 {
		desc = fmt.Sprintf("The %s %s %s.", g.rareWord(), g.pick(nouns), g.pick(suffixes))
	}
	if _, dup := props[pname]; dup && g.text > 1 {
		pname = fmt.Sprintf("%s_%d", pname, len(props)) // a text-1 tool keeps its repeats, as first written
	}
	p := map[string]any{"type": g.pick(types), "description": g.prose(desc)}
	if g.r.IntN(6) == 0 {
		p["type"] = "string"
		p["enum"] = []string{g.pick(adjectives), g.rareWord(), g.pick(adjectives)}
	}
	props[pname] = p
	if g.r.IntN(2) == 0 {
		*required = append(*required, pname)
	}
}

func (g gen) article() string {
	if g.r.IntN(2) == 0 {
		return "a"
	}
	return "the"
}

func (g gen) tail() string {
	return fmt.Sprintf("%s %s %s", g.pick(preps), g.article(), g.pick(nouns))
}

func capital(s string) string { return strings.ToUpper(s[:1]) + s[1:] }

var (
	verbs = strings.Fields(`get list create update delete search find fetch send read write move copy rename archive restore export import
		sync schedule cancel approve reject merge split convert translate summarize analyze validate check compute estimate forecast
		render upload download share lock unlock assign tag label rate rank sort filter group count measure monitor track notify
		subscribe publish deploy rollback build test scan inspect audit backup encrypt decrypt sign verify resolve close open reopen
		pause resume start stop restart scale resize compress extract parse format print plot chart map route geocode book reserve`)
	nouns = strings.Fields(`file folder document record report invoice order payment customer account user team project task ticket issue
		message email channel thread comment note event meeting calendar booking flight hotel car train route location address city
		weather forecast temperature image photo video audio song playlist album artist movie show book article page site domain
		server cluster node container volume bucket database table query index cache queue topic stream log metric alert incident
		service endpoint key secret token certificate policy role group permission repository branch commit release build pipeline
		job workflow schedule budget expense receipt contract lead deal campaign product price stock inventory shipment package
		recipe ingredient meal workout patient appointment prescription student course grade exam device sensor reading`)
	adjectives = strings.Fields(`new active recent archived pending shared private public daily weekly monthly current previous next
		primary secondary default custom raw detailed summary full partial local remote external internal urgent open closed
		draft final verified encrypted compressed large small free paid optional required unread starred flagged`)
	openers  = strings.Fields(`also can may will optionally then it`)
	preps    = strings.Fields(`in for from to by with on of`)
	suffixes = strings.Fields(`id name type limit offset format date time count size status mode`)
	types    = strings.Fields(`string string string integer boolean number array`)
	domains  = strings.Fields(`acme globex initech umbrella stark wayne hooli vandelay wonka tyrell cyberdyne soylent`)
	// syllables spell rare words: 48 of them make 2,304 two-syllable and
	// 110,592 three-syllable words.
	syllables = strings.Fields(`ka lo mi ne zu ra ti vo sen dar pel mor qui tas bel fen gar hul jin kor lum nex
		pra sol tev ur vim wex yar zol bri cha dro fli gro kla ple sta tri vra zen ox ul ab ek id og ix`)
)
