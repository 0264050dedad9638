package redact

import (
	"strings"
	"testing"
)

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

func TestText(t *testing.T) {
	msg := `Post "http://u:***@h/mcp?token=abc123": bad key sk-live-0123456789 from Bearer tok-secret-1 (ab)`
	got := Text(msg, append(URLSecrets("http://u:pw@h/mcp?token=abc123"), "Bearer tok-secret-1", "ab")...)
	for _, secret := range []string{"token=abc123", "sk-live-0123456789", "tok-secret-1"} {
		if strings.Contains(got, secret) {
			t.Errorf("Text left %q in %q", secret, got)
		}
	}
	if !strings.Contains(got, "(ab)") {
		t.Errorf("Text removed a 2-byte \"secret\", which would match by chance: %q", got)
	}
}
