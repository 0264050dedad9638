package embedding

import (
	"bytes"
	"context"
	"io"
	"math"
	"net/http"
	"testing"
)

// bodyTransport answers every request with one fixed body.
type bodyTransport struct {
	status int
	body   []byte
}

func (b bodyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: b.status, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(b.body)), Request: r}, nil
}

// FuzzProviderAnswer feeds arbitrary embeddings answers to the client:
// either an error, or exactly one finite, non-zero vector per input, all
// of one width. Never a panic, never a partial result.
func FuzzProviderAnswer(f *testing.F) {
	for _, seed := range []string{
		`{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,0.2]},{"object":"embedding","index":1,"embedding":[0.3,0.4]}]}`,
		`{"data":[{"index":1,"embedding":[1]},{"index":1,"embedding":[1]}]}`,
		`{"data":[{"index":0,"embedding":[0,0]},{"index":1,"embedding":[1e-30,0]}]}`,
		`{"data":[{"index":0,"embedding":[1,2,3]},{"index":1,"embedding":[1,2]}]}`,
		`{"data":[{"index":-1,"embedding":[1]}]}`, `{"error":{"message":"bad key sk-abc","type":"invalid_request_error"}}`,
		`{"data":[{"index":0,"embedding":"AAAAAA=="}]}`, `<html>oops</html>`, ``, `{"data":null}`,
	} {
		f.Add(seed, 200)
	}
	f.Add(`{"error":{"message":"slow down"}}`, 429)
	f.Fuzz(func(t *testing.T, body string, status int) {
		if status < 200 || status > 599 {
			return
		}
		o := NewOpenAI(OpenAIConfig{BaseURL: "http://provider.invalid/v1", APIKey: "sk-test-0123456789", MaxRetries: -1, sleep: noSleep,
			HTTPClient: &http.Client{Transport: bodyTransport{status, []byte(body)}}})
		vecs, err := o.Embed(context.Background(), []string{"first", "second"})
		if err != nil {
			return
		}
		if len(vecs) != 2 || len(vecs[0]) == 0 || len(vecs[0]) != len(vecs[1]) {
			t.Fatalf("accepted %d vectors of widths %v from %q", len(vecs), widths(vecs), body)
		}
		for _, v := range vecs {
			var sum float64
			for _, x := range v {
				if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
					t.Fatalf("accepted a non-finite value from %q", body)
				}
				sum += float64(x) * float64(x)
			}
			if sum < minNorm*minNorm {
				t.Fatalf("accepted a zero vector from %q", body)
			}
		}
	})
}

func widths(vecs [][]float32) []int {
	out := make([]int, len(vecs))
	for i, v := range vecs {
		out[i] = len(v)
	}
	return out
}
