// Command catgen writes a synthetic tool catalog of any size, for the
// start-up, memory and query measurements at scale (BENCHMARKS.md,
// make load). Its tools look like real MCP tools: thousands of servers
// of 3 to 60 tools, names of a verb and a noun, descriptions of one to
// three sentences, and input schemas with described parameters, some with
// enums. The words are its own (no eval set's text), drawn with a skewed
// frequency so that common words have long posting lists, as real
// catalogs do. The same -seed writes the same catalog.
//
//	go run ./cmd/catgen -tools 100000 -out /tmp/catalog-100k.json
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "catgen:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("catgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tools := fs.Int("tools", 10_000, "how many tools")
	seed := fs.Uint64("seed", 1, "the random seed: the same seed writes the same catalog")
	out := fs.String("out", "-", "where to write the catalog JSON (- for stdout)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *tools < 1 {
		return fmt.Errorf("-tools must be at least 1, got %d", *tools)
	}
	w := stdout
	if *out != "-" {
		f, err := os.Create(*out)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	if err := write(bw, *tools, rand.New(rand.NewPCG(*seed, 7))); err != nil {
		return err
	}
	return bw.Flush()
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

// write streams the catalog server by server, so 100,000 tools never sit
// in memory at once.
func write(w io.Writer, n int, r *rand.Rand) error {
	g := gen{r: r}
	if _, err := io.WriteString(w, `{"servers":[`); err != nil {
		return err
	}
	enc := json.NewEncoder(w)
	for i, made := 0, 0; made < n; i++ {
		size := min(3+r.IntN(58), n-made)
		s := server{Name: fmt.Sprintf("%s-%s-%d", g.pick(domains), g.pick(nouns), i)}
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

type gen struct{ r *rand.Rand }

// pick draws from words with a skewed frequency: the first words are
// common, the last rare.
func (g gen) pick(words []string) string {
	return words[min(int(g.r.ExpFloat64()*float64(len(words))/4), len(words)-1)]
}

func (g gen) tool() tool {
	verb, noun := g.pick(verbs), g.pick(nouns)
	name := verb + "_" + noun
	if g.r.IntN(3) == 0 {
		name = verb + "_" + g.pick(adjectives) + "_" + noun
	}
	var d strings.Builder
	fmt.Fprintf(&d, "%s %s %s %s %s.", capital(verb), g.article(), g.pick(adjectives), noun, g.tail())
	for range g.r.IntN(3) {
		fmt.Fprintf(&d, " %s %s %s %s.", capital(g.pick(openers)), g.pick(verbs), g.pick(adjectives), g.pick(nouns)+"s")
	}
	props := map[string]any{}
	var required []string
	for i := range 1 + g.r.IntN(6) {
		pname := g.pick(nouns)
		if i > 0 && g.r.IntN(2) == 0 {
			pname += "_" + g.pick(suffixes)
		}
		p := map[string]any{"type": g.pick(types), "description": fmt.Sprintf("The %s %s to %s.", g.pick(adjectives), g.pick(nouns), g.pick(verbs))}
		if g.r.IntN(6) == 0 {
			p["type"] = "string"
			p["enum"] = []string{g.pick(adjectives), g.pick(adjectives), g.pick(adjectives)}
		}
		props[pname] = p
		if g.r.IntN(2) == 0 {
			required = append(required, pname)
		}
	}
	schema := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		schema["required"] = required
	}
	return tool{Name: name, Description: d.String(), InputSchema: schema}
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
)
