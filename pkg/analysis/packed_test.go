package analysis

import (
	"bytes"
	_ "embed"
	"flag"
	"os"
	"slices"
	"testing"
	"unsafe"
)

// The TSV files relgen writes from WordNet (derived.LICENSE); the service
// embeds lexicon.bin, generated from them.
var (
	//go:embed derived.tsv
	derivedTSV string
	//go:embed hypernyms.tsv
	hypernymsTSV string
	//go:embed words.tsv
	wordsTSV string
)

var update = flag.Bool("update", false, "write the generated files (lexicon.bin, lookalike_table.go) again")

// generateTables is what lexicon.bin must hold.
func generateTables() tables {
	t := tables{
		lexicon:   lexiconName(derivedTSV, hypernymsTSV, wordsTSV),
		derived:   packRelations(derivedMap(derivedTSV, Stem, stop)),
		hypernyms: parseHypernyms(hypernymsTSV, Stem, stop),
	}
	t.words = packWords(wordsTSV, Stem, func(term string) bool {
		_, ok := t.hypernyms.senses(term)
		return ok || t.derived.has(term)
	})
	return t
}

// lexicon.bin is what the TSV files and this package's stemmer and stop
// words give, so a change to any of them fails here until it is
// regenerated (-update); and it reads back as written.
func TestLexiconFile(t *testing.T) {
	want := generateTables().encode()
	if *update {
		if err := os.WriteFile("lexicon.bin", want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal([]byte(lexiconBin), want) {
		t.Fatalf("lexicon.bin (%d bytes) is not what derived.tsv, hypernyms.tsv and words.tsv give (%d bytes): go test ./pkg/analysis -run TestLexiconFile -update", len(lexiconBin), len(want))
	}
	got, err := decodeTables(lexiconBin)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.encode(), want) {
		t.Fatal("lexicon.bin does not read back as written")
	}
	for n := range len(want) {
		if _, err := decodeTables(string(want[:n])); err == nil {
			t.Fatalf("decodeTables accepted the first %d of %d bytes", n, len(want))
		}
		if n > 4096 {
			break // the headers and the first lists; the rest is the same code
		}
	}
}

// The tables read the same from a copy of lexicon.bin whose lists are not
// aligned, which decodeTables copies, as from the binary's, whose lists it
// reads in place; a padding byte that is not zero is refused.
func TestLexiconInPlace(t *testing.T) {
	want := []byte(lexiconBin)
	at := func(tab tables) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(tab.derived.lists.vals))) }
	inBinary := func(p uintptr) bool {
		start := uintptr(unsafe.Pointer(unsafe.StringData(lexiconBin)))
		return p >= start && p < start+uintptr(len(lexiconBin))
	}
	shifted := make([]byte, len(want)+1)
	copy(shifted[1:], want)
	tests := []struct {
		name    string
		data    string
		inPlace bool
	}{
		{"the binary's", lexiconBin, littleEndian},
		{"not aligned", string(shifted[1:]), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeTables(tt.data)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.encode(), want) {
				t.Fatal("does not read back as written")
			}
			if in := inBinary(at(got)); in != tt.inPlace {
				t.Errorf("lists read in place: %v, want %v", in, tt.inPlace)
			}
		})
	}
	if in := inBinary(at(englishTables())); in != littleEndian {
		t.Errorf("the loaded tables' lists are in the binary: %v, want %v", in, littleEndian)
	}
	// The magic's padding: the first bytes after it.
	bad := bytes.Clone(want)
	bad[len(lexiconMagic)] = 1
	if _, err := decodeTables(string(bad)); err == nil {
		t.Error("a padding byte that is not zero was accepted")
	}
}

// The packed WordNet tables answer what the maps they were packed from
// hold, for every word and synset, and nothing for other words.
func TestPackedTables(t *testing.T) {
	m := derivedMap(derivedTSV, Stem, stop)
	r := packRelations(m)
	for w, want := range m {
		if got := r.get(w); !slices.Equal(got, want) || !r.has(w) {
			t.Fatalf("derived %q = %q, want %q", w, got, want)
		}
	}
	u := hypernymMaps(hypernymsTSV, Stem, stop)
	h := packHierarchy(u.up, u.words, u.of)
	for w, want := range u.of {
		if got, ok := h.senses(w); !ok || !slices.Equal(got, want) {
			t.Fatalf("senses %q = %v, want %v", w, got, want)
		}
	}
	for i := range u.up {
		var words []string
		for _, id := range h.words.at(int32(i)) {
			words = append(words, h.stems.String(id))
		}
		if !slices.Equal(h.up.at(int32(i)), u.up[i]) || !slices.Equal(words, u.words[i]) {
			t.Fatalf("synset %d: %v %q, want %v %q", i, h.up.at(int32(i)), words, u.up[i], u.words[i])
		}
	}
	for _, w := range []string{"", "zzqx", "delet", "a\x00b"} {
		if _, in := m[w]; !in && (r.has(w) || r.get(w) != nil) {
			t.Errorf("derived has %q", w)
		}
		if _, in := u.of[w]; !in {
			if _, ok := h.senses(w); ok {
				t.Errorf("hierarchy has %q", w)
			}
		}
	}
	// A word that is only in a list, not a key, is not a key.
	small := packRelations(map[string][]string{"a": {"b"}})
	if small.has("b") || small.get("b") != nil || !slices.Equal(small.get("a"), []string{"b"}) {
		t.Errorf("packRelations(a: b): has(b) %v, get(b) %q, get(a) %q", small.has("b"), small.get("b"), small.get("a"))
	}
	if empty := packRelations(nil); empty.has("a") || empty.get("a") != nil {
		t.Error("an empty table has a word")
	}
}

// Known is true for the dictionary's words in any part of speech and
// the inflections its exception lists give, and for function words; not
// for misspellings or stop words.
func TestKnown(t *testing.T) {
	for _, tt := range []struct {
		word string
		want bool
	}{
		{"message", true}, {"shown", true}, {"always", true}, {"very", true}, {"took", true}, {"children", true},
		{"among", true}, {"whatever", true}, {"flight", true}, {"calender", true}, // a machine that presses cloth
		// Regular inflections the stemmer leaves apart from their base, and
		// a word whose term is a stop word's.
		{"queued", true}, {"wider", true}, {"highest", true}, {"happier", true}, {"bigger", true}, {"women", true},
		{"having", true}, {"during", true},
		{"mesage", false}, {"slakc", false}, {"calandar", false}, {"xqzv", false}, {"", false},
	} {
		terms := English.Terms(tt.word)
		got := len(terms) == 1 && English.Known(terms[0])
		if got != tt.want {
			t.Errorf("Known(%q, term %q) = %v, want %v", tt.word, terms, got, tt.want)
		}
	}
}
