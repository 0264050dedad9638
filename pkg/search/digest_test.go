package search

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/pkg/analysis"
)

func TestDigest(t *testing.T) {
	// A catalog's rarity: these words pick tools out; others are unknown.
	known := map[string]float64{}
	for w, score := range map[string]float64{"invoice": 3, "refund": 4, "weather": 2, "berlin": 5, "calendar": 2, "meet": 1} {
		for _, term := range analysis.English.Terms(w) {
			known[term] = score
		}
	}
	rarity := func(term string) float64 { return known[term] }
	b64 := strings.Repeat("QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo", 20)
	persona := strings.Repeat("You are a friendly assistant who always answers politely and never rushes. ", 80)
	tests := []struct {
		name      string
		msgs      []Message
		want      []string // words the digest must hold
		wantNot   []string // and must not
		maxLength int
		ask       string // the digest's part that is the newest user turn's, when it has earlier words
	}{
		{"short ask kept as written", []Message{{Role: "user", Content: "refund my last invoice"}}, []string{"refund my last invoice"}, nil, 100, ""},
		{"pasted image dropped", []Message{{Role: "user", Content: "what is in this picture data:image/png;base64," + b64 + " and the weather in Berlin"}},
			[]string{"weather in Berlin"}, []string{"QUJD", "base64"}, 200, ""},
		{"long prompt: its ask and its rare words", []Message{{Role: "user", Content: "Invoice handling matters. " + persona + " Now check the weather in Berlin."}},
			[]string{"Now check the weather in Berlin.", "invoice"}, nil, tailBytes + 200, ""},
		{"older turns add their rarest words", []Message{
			{Role: "user", Content: "I need a refund for the invoice"},
			{Role: "assistant", Content: "Sure, which invoice?"},
			{Role: "user", Content: "the one from March"},
		}, []string{"the one from March", "refund"}, nil, 200, "the one from March"},
		{"a system turn is no context", []Message{
			{Role: "system", Content: "You help with calendar and weather questions; refunds go to billing."},
			{Role: "user", Content: "the one from March"},
		}, []string{"the one from March"}, []string{"calendar", "weather", "refund"}, 200, ""},
		{"nor does it count as one of the turns read", append(append([]Message{{Role: "user", Content: "refund the invoice"}},
			slices.Repeat([]Message{{Role: "system", Content: "Be brief."}}, contextTurns)...), Message{Role: "user", Content: "the one from March"}),
			[]string{"the one from March", "refund"}, nil, 200, "the one from March"},
		{"an older turn is read through its first kilobytes", []Message{
			{Role: "tool", Content: "refund " + persona + " weather"},
			{Role: "user", Content: "the one from March"},
		}, []string{"the one from March", "refund"}, []string{"weather"}, 200, "the one from March"},
		{"a pasted log, then the ask in its own paragraph", []Message{{Role: "user", Content: strings.Repeat("2026-11-02 ERROR refund invoice weather\n", 60) + "\n \nmeet in Berlin"}},
			[]string{"meet in Berlin", "refund", "weather"}, nil, tailBytes + 200, "meet in Berlin"},
		{"a long last paragraph is no ask", []Message{{Role: "user", Content: "refund\n\n" + persona}}, []string{"refund"}, nil, tailBytes + 200, ""},
		{"a system turn alone is the request", []Message{{Role: "system", Content: "calendar meeting"}}, []string{"calendar meeting"}, nil, 100, ""},
		{"no user turn: the last turn", []Message{{Role: "assistant", Content: "calendar meeting"}}, []string{"calendar meeting"}, nil, 100, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ask := digest(tt.msgs, rarity)
			if tt.ask != "" && got[:ask] != tt.ask {
				t.Errorf("digest %q: its ask is %q, want %q", got, got[:ask], tt.ask)
			}
			if tt.ask == "" && ask != len(got) {
				t.Errorf("digest %q: %q read as earlier turns' words", got, got[ask:])
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("digest %q lacks %q", got, w)
				}
			}
			for _, w := range tt.wantNot {
				if strings.Contains(got, w) {
					t.Errorf("digest %q holds %q", got, w)
				}
			}
			if len(got) > tt.maxLength {
				t.Errorf("digest is %d bytes, want at most %d", len(got), tt.maxLength)
			}
		})
	}
	// Budgets: however long the conversation, the digest stays small, and
	// an assistant turn gives fewer words than a user turn.
	var long []Message
	for range MaxMessages {
		long = append(long, Message{Role: "user", Content: "refund invoice weather berlin calendar meet " + persona[:400]})
	}
	if got, _ := digest(long, rarity); len(got) > 2*tailBytes {
		t.Errorf("a long conversation's digest is %d bytes", len(got))
	}
	user, _ := digest([]Message{{Role: "user", Content: "refund invoice weather berlin calendar meet"}, {Role: "user", Content: "ok"}}, rarity)
	assistant, _ := digest([]Message{{Role: "assistant", Content: "refund invoice weather berlin calendar meet"}, {Role: "user", Content: "ok"}}, rarity)
	if len(strings.Fields(assistant)) >= len(strings.Fields(user)) {
		t.Errorf("assistant context %q is not smaller than user context %q", assistant, user)
	}
}

func FuzzDigest(f *testing.F) {
	f.Add("refund my invoice", "assistant", "data:image/png;base64,AAAA")
	f.Add(strings.Repeat("word ", 500), "user", "")
	f.Fuzz(func(t *testing.T, ask, role, older string) {
		got, n := digest([]Message{{Role: role, Content: older}, {Role: "user", Content: ask}}, func(string) float64 { return 1 })
		if n > len(got) || role == "user" && len(ask) <= tailBytes && !blob.MatchString(ask) && got[:n] != ask {
			t.Errorf("digest %q: its ask is %d bytes of it, want %q", got, n, ask)
		}
		if len(got) > len(ask)+len(older)+restTerms*maxDigestTerm+contextTerms*maxDigestTerm+8 {
			t.Errorf("digest grew: %d bytes from %d", len(got), len(ask)+len(older))
		}
	})
}

// TestContextWeight: a short ask weighs the earlier turns' words as its
// own; a longer one less, in proportion.
func TestContextWeight(t *testing.T) {
	for _, tt := range []struct {
		n    int
		want float64
	}{{0, 1}, {1, 1}, {2, 1}, {5, contextWords / 5}, {25, contextWords / 25}} {
		if got := contextWeight(tt.n); got != tt.want {
			t.Errorf("contextWeight(%d) = %v, want %v", tt.n, got, tt.want)
		}
	}
}

// TestWordlessAskRatesItsContext: an ask with no words of its own ("do
// it") is its earlier turns' words, and is ranked and rated as they would
// be asked alone; rated only on the words its best tool has, "do it"
// after a turn about a stuck queue read 0.59 confident, where its words
// asked alone read 0.31.
func TestWordlessAskRatesItsContext(t *testing.T) {
	svc := newService(t, nil)
	snap := mustBuild(t, svc)
	earlier := "The quarterly numbers look off, maybe the cluster queue is stuck."
	for _, ask := range []string{"do it", "please do it"} {
		msgs := []Message{{Role: "user", Content: earlier}, {Role: "user", Content: ask}}
		text, n := digest(msgs, snap.Keywords.IDF)
		if len(analysis.English.Terms(text[:n])) > 0 {
			t.Fatalf("%q has words of its own: %q", ask, analysis.English.Terms(text[:n]))
		}
		for _, mode := range []Mode{ModeHybrid, ModeKeyword} {
			conv := mustSearch(t, svc, Request{Messages: msgs, Mode: mode, IncludeCore: ptr(false)})
			alone := mustSearch(t, svc, Request{Query: strings.TrimSpace(text[n:]), Mode: mode, IncludeCore: ptr(false)})
			if got, want := *conv.Confidence, *alone.Confidence; math.Abs(float64(got-want)) > 1e-5 || !slices.Equal(ids(conv.Tools), ids(alone.Tools)) {
				t.Errorf("%s, %q: ranked %v at confidence %v; its earlier words alone %v at %v", mode, ask, ids(conv.Tools), got, ids(alone.Tools), want)
			}
		}
	}
}
