package redirect

import (
	"errors"
	"net/http"
	"testing"
)

func TestSameOrigin(t *testing.T) {
	req := func(u string) *http.Request {
		r, err := http.NewRequest(http.MethodGet, u, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	first := req("https://api.example.com/v1/embeddings")
	for _, tt := range []struct {
		name string
		to   string
		hops int
		want error
	}{
		{"same origin, another path", "https://api.example.com/v2/embeddings", 1, nil},
		{"another host", "https://evil.example.net/v1/embeddings", 1, ErrOtherOrigin},
		{"a subdomain", "https://x.api.example.com/v1/embeddings", 1, ErrOtherOrigin},
		{"another port", "https://api.example.com:8443/v1/embeddings", 1, ErrOtherOrigin},
		{"down to http", "http://api.example.com/v1/embeddings", 1, ErrOtherOrigin},
		{"too many hops", "https://api.example.com/v1/embeddings", Max, errors.New("stopped")},
	} {
		via := make([]*http.Request, tt.hops)
		for i := range via {
			via[i] = first
		}
		err := SameOrigin(req(tt.to), via)
		switch {
		case tt.want == nil && err != nil:
			t.Errorf("%s: %v, want it followed", tt.name, err)
		case tt.want == ErrOtherOrigin && !errors.Is(err, ErrOtherOrigin):
			t.Errorf("%s: %v, want ErrOtherOrigin", tt.name, err)
		case tt.want != nil && err == nil:
			t.Errorf("%s: followed, want refused", tt.name)
		}
	}
}
