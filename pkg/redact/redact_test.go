package redact

import "testing"

func TestURL(t *testing.T) {
	tests := map[string]string{
		"https://user:pw@host/v1?key=x": "https://host/v1",
		"http://127.0.0.1:1/mcp":        "http://127.0.0.1:1/mcp",
		"https://a@b@host/p":            "https://host/p",
		"not a url?token=1":             "not a url",
	}
	for in, want := range tests {
		if got := URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}
