package bm25

import (
	"slices"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/pkg/analysis"
	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/internal/edit"
)

// A query's misspellings of the index's words read as those words; its
// English words, its words of other scripts, short words and what no
// tool is one edit from stay as written.
func TestCorrect(t *testing.T) {
	ix := fromDocs([]Doc{
		{Name: "post_message", Description: "Send a message to a Slack channel."},
		{Name: "send_email", Description: "Send an email message to a recipient."},
		{Name: "create_event", Description: "Schedule a calendar event with attendees."},
		{Name: "list_channels", Description: "List the channels of a Slack workspace."},
	}, DefaultConfig)
	tests := []struct {
		name, query, want string
	}{
		{"dropped, swapped and doubled letters", "sedn a mesage to slakc chaannel", "send message slack channel"},
		{"a word of the dictionary", "sned", "sned"}, // a scythe's handle
		{"a letter changed", "list chanmels", "list channel"},
		{"an English word the catalog lacks", "book a flight", "book flight"},
		{"an inflected form the dictionary lists", "took", "took"},
		{"a function word", "whatever", "whatever"},
		{"shorter than four letters", "sen", "sen"},
		{"two edits away", "mssge", "mssge"},
		{"three edits away", "slkcaa", "slkcaa"},
		{"not ASCII letters", "mesagé chann3l", "mesagé chann3l"},
		{"a word the index has", "message", "messag"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			terms := analysis.English.Terms(tt.query)
			ix.Correct(terms, nil)
			want := analysis.English.Terms(tt.want)
			if !slices.Equal(terms, want) {
				t.Errorf("Correct(%q) = %q, want %q", tt.query, terms, want)
			}
		})
	}
}

// A query word typed without the accents of a catalog's word reads as that
// word, English or not, and a query's accented word as the catalog's word
// without them, unless the query is Vietnamese.
func TestCorrectUnaccented(t *testing.T) {
	ix := fromDocs([]Doc{
		{Name: "lister_factures", Description: "Lister les factures impayées d'un client, avec leur échéance."},
		{Name: "leave_request", Description: "Déposer une demande de congés payés."},
		{Name: "city_roads", Description: "Straßen und Brücken der Stadt."},
		{Name: "order_coffee", Description: "Order a coffee from the café downstairs."},
		{Name: "resume_review", Description: "Review a resume for a job."},
		{Name: "book_flight", Description: "Book a flight to San Francisco, over the bay."},
	}, DefaultConfig)
	tests := []struct {
		name, query, want string
	}{
		{"French, no accents", "factures impayees echeance", "factures impayées échéance"},
		{"a stemmed form", "deposer des conges", "déposer des congés"},
		{"German sharp s and umlaut", "strassen brucken", "straßen brücken"},
		{"an English word", "cafe", "café"},
		{"a word the index has unaccented", "resume", "resume"},
		{"the query's accents, which the index lacks", "résumé", "resume"},
		{"a Vietnamese query's accents", "đặt vé sân bay", "đặt vé sân bay"},
		{"the same word in another query", "sân", "san"},
		{"an accented word the index lacks", "naïve", "naïve"},
		{"an unaccented word no accented one reads as", "invoice", "invoice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			terms := analysis.English.Terms(tt.query)
			was := slices.Clone(terms)
			fixes := ix.Correct(terms, nil)
			if want := analysis.English.Terms(tt.want); !slices.Equal(terms, want) {
				t.Errorf("Correct(%q) = %q, want %q", tt.query, terms, want)
			}
			for i := range terms {
				if terms[i] != was[i] && !slices.Contains(fixes, Fix{From: was[i], To: terms[i]}) {
					t.Errorf("%q read as %q unreported: fixes %v", was[i], terms[i], fixes)
				}
			}
		})
	}
}

// Of two accented words that read the same unaccented, the one more tools
// have is read.
func TestCorrectUnaccentedMostCommon(t *testing.T) {
	ix := fromDocs([]Doc{{Description: "un pâté"}, {Description: "le paté"}, {Description: "du pâté"}}, DefaultConfig)
	terms := analysis.English.Terms("pate")
	ix.Correct(terms, nil)
	if !slices.Equal(terms, []string{"pâté"}) {
		t.Errorf("Correct(pate) = %q, want [pâté]", terms)
	}
}

// Of two words one edit away, the one more tools have is read.
func TestCorrectMostCommon(t *testing.T) {
	ix := fromDocs([]Doc{{Name: "add_to_cart"}, {Name: "empty_cart"}, {Name: "cast_video"}}, DefaultConfig)
	for _, q := range []string{"casrt", "carst"} { // cart or cast, either way round
		terms := analysis.English.Terms(q)
		ix.Correct(terms, nil)
		if !slices.Equal(terms, []string{"cart"}) {
			t.Errorf("Correct(%q) = %q, want [cart]", q, terms)
		}
	}
}

// Only the first MaxCorrections terms that may be misspellings are
// looked up: a query cannot make the index try every word it sends.
func TestCorrectBounded(t *testing.T) {
	ix := fromDocs([]Doc{{Name: "send_message", Description: "Send a message."}}, DefaultConfig)
	words := make([]string, MaxCorrections+2)
	for i := range words {
		words[i] = "qzxv" + strings.Repeat("q", i%3) + string(rune('a'+i))
	}
	words[MaxCorrections-1] = "mesage" // the last one tried
	words[MaxCorrections] = "sedn"     // past the bound
	terms := analysis.English.Terms(strings.Join(words, " "))
	fixes := ix.Correct(terms, nil)
	if terms[MaxCorrections-1] != "messag" || terms[MaxCorrections] != "sedn" {
		t.Errorf("terms %d and %d: %q and %q, want messag and sedn", MaxCorrections-1, MaxCorrections, terms[MaxCorrections-1], terms[MaxCorrections])
	}
	// A sentence of the query reads the same misspelling the same way,
	// and a word past the bound as written, with no lookup of its own.
	if want := []Fix{{From: "mesag", To: "messag"}}; !slices.Equal(fixes, want) {
		t.Fatalf("fixes %v, want %v", fixes, want)
	}
	part := ix.Prepare("mesage sedn", fixes)
	if m := part.Matched(0); len(m["messag"]) == 0 || len(m["send"]) != 0 {
		t.Errorf("the sentence matched %v, want messag and not send", m)
	}
	// English words the index lacks are asked about too, a bounded few.
	english := strings.Repeat("flight ", maxRead-1)
	for _, q := range []struct {
		text string
		want bool
	}{{english + "mesage", true}, {english + "flight mesage", false}} {
		terms := analysis.English.Terms(q.text)
		ix.Correct(terms, nil)
		if got := terms[len(terms)-1] == "messag"; got != q.want {
			t.Errorf("after %d words the index lacks: mesage read as %q", len(terms)-1, terms[len(terms)-1])
		}
	}
}

// FuzzCorrect: whatever a query says, Correct replaces only terms no tool
// has, each by a term some tool has, one edit away or the same word with
// or without accents, reports each replacement, and replaces at most
// MaxCorrections.
func FuzzCorrect(f *testing.F) {
	cat, err := catalog.Default()
	if err != nil {
		f.Fatal(err)
	}
	// The default catalog's tools, and one whose words have accents.
	var docs []Doc
	for _, t := range cat.Tools() {
		docs = append(docs, Doc{Name: t.Name, Server: t.Server, Description: t.Description})
	}
	docs = append(docs, Doc{Name: "lister_factures", Description: "Lister les factures impayées, leur échéance, les congés; Straßen, Brücken, café, naïve, œuvre, Łódź."})
	ix := fromDocs(docs, DefaultConfig)
	for _, s := range []string{"sedn a mesage to slakc", "serch githb isseus", "qeury the postgers databse", "book a flight", "", "ææ mesagé", strings.Repeat("qzxv ", 40) + "mesage", "factures impayees echeance conges", "strassen brucken cafe naive oeuvre lodz", "résumé of the sân bay ÉVÉNEMENT", "đặt vé sân bay"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		terms := analysis.English.Terms(q)
		was := slices.Clone(terms)
		fixes := ix.Correct(terms, nil)
		if len(fixes) > MaxCorrections {
			t.Fatalf("%q: %d fixes", q, len(fixes))
		}
		for i := range terms {
			if terms[i] == was[i] {
				continue
			}
			u, _ := analysis.English.Unaccented(terms[i])
			v, _ := analysis.English.Unaccented(was[i])
			if ix.Has(was[i]) || !ix.Has(terms[i]) || !edit.One(was[i], terms[i]) && u != was[i] && v != terms[i] || !slices.Contains(fixes, Fix{From: was[i], To: terms[i]}) {
				t.Fatalf("%q: %q read as %q (fixes %v)", q, was[i], terms[i], fixes)
			}
		}
	})
}
