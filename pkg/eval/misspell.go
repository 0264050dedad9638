package eval

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"regexp"
)

// keyboard is the QWERTY layout's letter rows: a slip of the finger
// types a neighbour of the key meant.
var keyboard = [...]string{"qwertyuiop", "asdfghjkl", "zxcvbnm"}

// neighbours are each letter's keys around it.
var neighbours = func() (n ['z' + 1][]byte) {
	for r, row := range keyboard {
		for i := range len(row) {
			for rr := max(r-1, 0); rr <= min(r+1, len(keyboard)-1); rr++ {
				for j := max(i-1, 0); j <= min(i+1, len(keyboard[rr])-1); j++ {
					if c := keyboard[rr][j]; c != row[i] {
						n[row[i]] = append(n[row[i]], c)
					}
				}
			}
		}
	}
	return n
}()

// Misspell returns cases with typing errors in their queries: each ASCII
// word of five letters or more has, with probability rate, one of two
// neighbouring letters swapped, a letter dropped, a letter doubled, or a
// letter typed as a neighbouring key's. The first and last letters are
// kept, as people seldom slip on those. Each case's errors depend only on
// its id and query, so a case misspells the same way in every run and
// whatever else the file holds. A case's request keeps its other fields,
// its query misspelt as the case's is.
func Misspell(cases []Case, rate float64) ([]Case, error) {
	if rate < 0 || rate > 1 {
		return nil, fmt.Errorf("%w: the share of words misspelt must be from 0 to 1, got %g", ErrBadInput, rate)
	}
	out := make([]Case, len(cases))
	for i, c := range cases {
		c.Query = misspell(c.ID, c.Query, rate)
		if c.Request != nil && c.Request.Query != "" {
			req := *c.Request
			req.Query = misspell(c.ID, req.Query, rate)
			c.Request = &req
		}
		out[i] = c
	}
	return out, nil
}

// misspell is s with typing errors, drawn from id and s.
func misspell(id, s string, rate float64) string {
	h := fnv.New64a()
	h.Write([]byte(id))
	h.Write([]byte{0})
	h.Write([]byte(s))
	r := rand.New(rand.NewPCG(h.Sum64(), 0))
	return longWord.ReplaceAllStringFunc(s, func(w string) string {
		if r.Float64() < rate {
			return string(slip([]byte(w), r))
		}
		return w
	})
}

// longWord is an ASCII word of five letters or more.
var longWord = regexp.MustCompile(`[A-Za-z]{5,}`)

// slip makes one typing error in w, away from its first and last
// letters.
func slip(w []byte, r *rand.Rand) []byte {
	kind := r.IntN(4)
	k := 1 + r.IntN(len(w)-2) // a letter inside the word
	if kind == 0 {
		k = 1 + r.IntN(len(w)-3) // and its next one is inside too
	}
	out := append([]byte(nil), w[:k]...)
	switch kind {
	case 0: // swapped with the next
		return append(append(out, w[k+1], w[k]), w[k+2:]...)
	case 1: // dropped
		return append(out, w[k+1:]...)
	case 2: // doubled
		return append(append(out, w[k]), w[k:]...)
	default: // a neighbouring key's
		c, upper := w[k], false
		if 'A' <= c && c <= 'Z' {
			c, upper = c+'a'-'A', true
		}
		n := neighbours[c]
		typed := n[r.IntN(len(n))]
		if upper {
			typed -= 'a' - 'A'
		}
		return append(append(out, typed), w[k+1:]...)
	}
}
