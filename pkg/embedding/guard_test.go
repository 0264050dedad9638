package embedding

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
)

// TestProviderAnswersAreBounded: a provider answer larger than the vectors
// asked for can be is cut off, not read into memory; so is an error page.
func TestProviderAnswersAreBounded(t *testing.T) {
	huge := func(status int) func(int, []string, http.ResponseWriter) {
		return func(_ int, _ []string, w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			// A valid-looking start, then 50 MB of padding inside one vector.
			fmt.Fprint(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1`)
			chunk := strings.Repeat(",0.1", 1<<14)
			for written := 0; written < 50<<20; written += len(chunk) {
				if _, err := fmt.Fprint(w, chunk); err != nil {
					return
				}
			}
			fmt.Fprint(w, `]}]}`)
		}
	}
	tests := []struct {
		name   string
		status int
		dims   int
	}{
		{"vectors, width unknown", 200, 0},
		{"vectors, width configured", 200, 64},
		{"error page", 500, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, url := newFake(t, huge(tt.status))
			o := NewOpenAI(OpenAIConfig{BaseURL: url, APIKey: "k", Dimensions: tt.dims, MaxRetries: -1, sleep: noSleep})
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := o.Embed(context.Background(), []string{"one query"})
			runtime.ReadMemStats(&after)
			if err == nil {
				t.Fatal("a 50 MB answer for one vector was accepted")
			}
			if tt.status == 200 && !errors.Is(err, ErrAnswerTooLarge) {
				t.Errorf("err = %v, want ErrAnswerTooLarge", err)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 8<<20 {
				t.Errorf("reading the answer allocated %d MB, want under 8", grew>>20)
			}
			if len(err.Error()) > 2*maxErrorBody {
				t.Errorf("error text is %d bytes", len(err.Error()))
			}
		})
	}
}

// TestZeroVectorsAreProviderFaults: a (near-)zero vector is no embedding.
func TestZeroVectorsAreProviderFaults(t *testing.T) {
	for _, scale := range []float32{0, 1e-9} {
		_, url := newFake(t, func(_ int, inputs []string, w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			items := make([]string, len(inputs))
			for i := range inputs {
				items[i] = fmt.Sprintf(`{"object":"embedding","index":%d,"embedding":[%g,%g,%g]}`, i, scale, scale, scale)
			}
			fmt.Fprintf(w, `{"object":"list","data":[%s]}`, strings.Join(items, ","))
		})
		o := NewOpenAI(OpenAIConfig{BaseURL: url, APIKey: "k", MaxRetries: -1, sleep: noSleep})
		if _, err := o.Embed(context.Background(), []string{"a", "b"}); !errors.Is(err, ErrBadResponse) {
			t.Errorf("vectors of %g: err = %v, want ErrBadResponse", scale, err)
		}
	}
}
