package search

import (
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/embedding"
	"github.com/toolsearch/toolsearch/pkg/rank"
)

// oracleProvider is an embeddings API whose vectors encode the right
// answer: a text that mentions a key word gets that word's axis. It stands
// for a strong model, where the local embedder is a weak one.
func oracleProvider(tb testing.TB, axes []string) string {
	tb.Helper()
	return embeddingsProvider(tb, func(in string) []float32 {
		v := make([]float32, len(axes)+1)
		v[len(axes)] = 0.01 // no text is the zero vector
		for j, key := range axes {
			if strings.Contains(strings.ToLower(in), key) {
				v[j] = 1
			}
		}
		return v
	})
}

// TestStrongDenseSide: when the dense side knows the answer and BM25 is
// misled by shared words, convex fusion follows the dense side if BM25's
// lead is small (the right tool scores at least about 4/7 of BM25's best at
// the default alpha 0.3), and only a higher alpha lets it overturn a clear
// BM25 lead. That is why an operator with a strong embedding model should
// raise hybrid_alpha (README).
func TestStrongDenseSide(t *testing.T) {
	tools := []catalog.Tool{
		{Server: "news", Name: "get_headlines", Description: "Latest news headlines about a topic, for a city or a country."},
		{Server: "weather", Name: "get_forecast", Description: "Forecast for a city: umbrella-worthy rain, wind and temperature."},
		{Server: "notes", Name: "save_note", Description: "Save a short note."},
	}
	// "umbrella" in the query means the forecast (the oracle's axis 0);
	// "headlines" and "note" name the other tools.
	url := oracleProvider(t, []string{"umbrella", "headlines", "note"})
	tests := []struct {
		name  string
		alpha float64
		query string
		want  string // first tool
	}{
		{"BM25 alone: a small lead for the wrong tool", 0, "umbrella latest city", "news/get_headlines"},
		{"a small BM25 lead: the dense side wins at the default alpha", rank.DefaultHybridAlpha, "umbrella latest city", "weather/get_forecast"},
		{"BM25 alone: a clear lead for the wrong tool", 0, "latest news about the country for my city, umbrella?", "news/get_headlines"},
		{"a clear BM25 lead holds at the default alpha", rank.DefaultHybridAlpha, "latest news about the country for my city, umbrella?", "news/get_headlines"},
		{"a clear BM25 lead falls to a high alpha", 0.8, "latest news about the country for my city, umbrella?", "weather/get_forecast"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mode := ModeHybrid
			if tt.alpha == 0 {
				mode = ModeKeyword
			}
			svc := New(Config{Embedder: embedding.NewOpenAI(embedding.OpenAIConfig{BaseURL: url, APIKey: "k", MaxRetries: -1}),
				QueryCacheSize: -1, Rank: rank.Config{Alpha: tt.alpha}})
			if _, err := svc.Build(t.Context(), &Setup{Catalog: catalogOf(t, tools)}); err != nil {
				t.Fatal(err)
			}
			res := mustSearch(t, svc, Request{Query: tt.query, Mode: mode})
			if res.Degraded || len(res.Tools) == 0 {
				t.Fatalf("degraded %v, %d tools", res.Degraded, len(res.Tools))
			}
			if got := ids(res.Tools)[0]; got != tt.want {
				t.Errorf("first tool %s, want %s (ranking %v)", got, tt.want, ids(res.Tools))
			}
		})
	}
}
