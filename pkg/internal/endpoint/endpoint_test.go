package endpoint

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

func TestSameOrigin(t *testing.T) {
	req := func(method, u string) *http.Request {
		r, err := http.NewRequest(method, u, nil)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for _, tt := range []struct {
		name     string
		from, to string // methods
		url      string
		hops     int
		want     error
	}{
		{"same origin, another path", "POST", "POST", "https://api.example.com/v2/embeddings", 1, nil},
		{"a GET", "GET", "GET", "https://api.example.com/v2/embeddings", 1, nil},
		{"another host", "POST", "POST", "https://evil.example.net/v1/embeddings", 1, ErrOtherOrigin},
		{"a subdomain", "POST", "POST", "https://x.api.example.com/v1/embeddings", 1, ErrOtherOrigin},
		{"another port", "POST", "POST", "https://api.example.com:8443/v1/embeddings", 1, ErrOtherOrigin},
		{"down to http", "POST", "POST", "http://api.example.com/v1/embeddings", 1, ErrOtherOrigin},
		{"too many hops", "POST", "POST", "https://api.example.com/v1/embeddings", MaxRedirects, errors.New("stopped")},
		{"a POST as a GET (301, 302, 303)", "POST", "GET", "https://api.example.com/v1/embeddings/", 1, errors.New("would send the POST as a GET")},
	} {
		via := make([]*http.Request, tt.hops)
		for i := range via {
			via[i] = req(tt.from, "https://api.example.com/v1/embeddings")
		}
		err := SameOrigin(req(tt.to, tt.url), via)
		switch {
		case tt.want == nil && err != nil:
			t.Errorf("%s: %v, want it followed", tt.name, err)
		case tt.want == ErrOtherOrigin && !errors.Is(err, ErrOtherOrigin):
			t.Errorf("%s: %v, want ErrOtherOrigin", tt.name, err)
		case tt.want != nil && err == nil:
			t.Errorf("%s: followed, want refused", tt.name)
		case tt.want != nil && tt.want != ErrOtherOrigin && !strings.Contains(err.Error(), tt.want.Error()):
			t.Errorf("%s: %v, want it to say %q", tt.name, err, tt.want)
		}
	}
}

// A URL to call is checked once, at start-up: what would fail every
// request, or send its path into a query, is refused there with a message
// that quotes the URL without its credentials.
func TestCheck(t *testing.T) {
	for _, tt := range []struct {
		raw  string
		base bool
		want string // in the error; "" accepts
	}{
		{"https://api.openai.com/v1", true, ""},
		{"http://127.0.0.1:11434/v1", true, ""},
		{"http://[::1]:8080/mcp", false, ""},
		{"HTTPS://Host.Example/v1", true, ""},
		{"https://h.example/mcp?token=abc", false, ""}, // an upstream's URL is called as it is
		{"localhost:11434/v1", true, "must begin http:// or https://"},
		{"ftp://h.example/v1", true, "must begin http:// or https://"},
		{"/v1", true, "must begin http:// or https://"},
		{"", false, "must begin http:// or https://"},
		{"http:///v1", true, "names no host"},
		{"http://[::1/v1", true, "is not a URL"},
		{"http://h.example/v1\x7f", true, "is not a URL"},
		{"http://h.example/v1#part", true, "must not have a #fragment"},
		{"http://h.example/mcp#", false, "must not have a #fragment"},
		{"http://h.example/v1?key=abc", true, "must not have a ?query"},
		{"http://h.example/v1?", true, "must not have a ?query"},
	} {
		err := Check(tt.raw, tt.base)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("Check(%q, %v) = %v, want it accepted", tt.raw, tt.base, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("Check(%q, %v) = %v, want an error saying %q", tt.raw, tt.base, err, tt.want)
		}
	}
}

func TestCheckHidesCredentials(t *testing.T) {
	for _, raw := range []string{
		"http://tok_secret_9@[::1/v1",         // does not parse: url's own error would quote it
		"ftp://user:pw_secret_9@h.example/v1", // wrong scheme
		"http://h.example/v1?key=q_secret_9",  // a query in a base URL
		"http://h.example/v1?key=q_secret_9#x",
		"http://user:pw_secret_9@/v1", // no host
	} {
		err := Check(raw, true)
		if err == nil {
			t.Fatalf("Check(%q) accepted it", raw)
		}
		if strings.Contains(err.Error(), "secret_9") {
			t.Errorf("Check(%q) = %q: quotes a credential", raw, err)
		}
	}
}

// What Check accepts as a base URL takes an API path as a path: the
// request goes to the host configured, at the path appended.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{"https://api.openai.com/v1", "http://u:p@h:1/v1?k=v#f", "localhost:1/v1", "http://[::1/v1", "HTTP://H/", "http://h/%zz", "http://h\x00/v1", "https://h/v1?"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		if Check(raw, true) != nil {
			_ = Check(raw, false)
			return
		}
		base, _ := url.Parse(raw)
		u, err := url.Parse(raw + "/embeddings")
		if err != nil || u.Host != base.Host || !strings.HasSuffix(u.Path, "/embeddings") || u.RawQuery != "" {
			t.Fatalf("Check accepted %q, but the path appended to it is %+v (%v)", raw, u, err)
		}
	})
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		h    map[string]string
		want time.Duration
	}{
		{nil, 0},
		{map[string]string{"Retry-After": "3"}, 3 * time.Second},
		{map[string]string{"Retry-After": " 3 "}, 3 * time.Second},
		{map[string]string{"Retry-After": "0"}, 0},
		{map[string]string{"Retry-After": "-5"}, 0},
		{map[string]string{"Retry-After": "99999999999"}, 0},
		{map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second},
		{map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, 0},
		{map[string]string{"Retry-After-Ms": "250.5"}, 250500 * time.Microsecond},
		{map[string]string{"Retry-After-Ms": "nope", "Retry-After": "2"}, 2 * time.Second},
		{map[string]string{"Retry-After-Ms": "NaN"}, 0},
	} {
		h := http.Header{}
		for k, v := range tt.h {
			h.Set(k, v)
		}
		if got := RetryAfter(h, now); got != tt.want {
			t.Errorf("RetryAfter(%v) = %v, want %v", tt.h, got, tt.want)
		}
	}
}
