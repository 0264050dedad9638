// Package embedding turns texts into vectors: offline with Local, or through any
// OpenAI-compatible /v1/embeddings endpoint with OpenAI.
package embedding

import (
	"context"
	"errors"
)

// Embedder is what every embedder here provides: Local and OpenAI, and the
// fitted Local that Local.Fit returns. Consumers declare, where they use
// them, the further capabilities they look for (package search: fitting to
// a corpus, sparse queries).
type Embedder interface {
	// Embed returns one vector per text, in order, not normalised.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	Info() Info
}

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
