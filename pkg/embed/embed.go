// Package embed turns texts into vectors: offline with Local, or through any
// OpenAI-compatible /v1/embeddings endpoint with OpenAI.
package embed

import (
	"errors"
	"fmt"
	"math"
)

// Info describes an embedder for status pages and snapshot checks. It never
// holds a secret.
type Info struct {
	Provider   string `json:"provider"`
	Model      string `json:"model"`
	Dimensions int    `json:"dimensions"`
	BaseURL    string `json:"base_url,omitempty"`
}

// ErrBadResponse marks an embeddings answer that cannot be trusted: wrong
// count, wrong dimension, non-finite values. It is never retried.
var ErrBadResponse = errors.New("bad embeddings response")

// Validate checks that vecs holds n finite vectors of dimension dim (any
// common dimension when dim is 0) and returns that dimension.
func Validate(vecs [][]float32, n, dim int) (int, error) {
	if len(vecs) != n {
		return 0, fmt.Errorf("%w: %d vectors for %d inputs", ErrBadResponse, len(vecs), n)
	}
	for i, v := range vecs {
		if dim == 0 {
			dim = len(v)
		}
		if len(v) == 0 || len(v) != dim {
			return 0, fmt.Errorf("%w: vector %d has dimension %d, want %d", ErrBadResponse, i, len(v), dim)
		}
		for _, x := range v {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return 0, fmt.Errorf("%w: vector %d has a non-finite value", ErrBadResponse, i)
			}
		}
	}
	return dim, nil
}

// Normalize scales v to unit L2 length in place and reports its original
// length. A zero vector stays zero.
func Normalize(v []float32) float64 {
	var ss float64
	for _, x := range v {
		ss += float64(x) * float64(x)
	}
	norm := math.Sqrt(ss)
	if norm == 0 {
		return 0
	}
	inv := float32(1 / norm)
	for i := range v {
		v[i] *= inv
	}
	return norm
}
