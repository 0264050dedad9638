package redact

import (
	"strings"
	"testing"
)

func TestURL(t *testing.T) {
	tests := map[string]string{
		"https://user:pw@host/v1?key=x":  "https://host/v1",
		"http://127.0.0.1:1/mcp":         "http://127.0.0.1:1/mcp",
		"https://a@b@host/p":             "https://host/p",
		"not a url?token=1":              "not a url",
		"https://host/cb#access_token=x": "https://host/cb",
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

// TestTextURLs: a URL in a message loses its user info, query and
// fragment whoever wrote it (a redirect's Location among them), and
// keeps the rest, which says where the request went.
func TestTextURLs(t *testing.T) {
	tests := []struct{ in, want string }{
		{`Post "http://127.0.0.1:8/mcp/signed?X-Amz-Signature=abc123def456": answered 403 Forbidden`,
			`Post "http://127.0.0.1:8/mcp/signed?[redacted]": answered 403 Forbidden`},
		{`Get "https://user:***@host/v1/x#access_token=t0k3n": EOF`, `Get "https://[redacted]@host/v1/x?[redacted]": EOF`},
		{"dial postgres://app:pw@db:5432/learn?sslmode=disable failed", "dial postgres://[redacted]@db:5432/learn?[redacted] failed"},
		{"https://host?key=x and https://other/path", "https://host?[redacted] and https://other/path"},
		{`<a href='https://host/p?sig=1'>`, `<a href='https://host/p?[redacted]'>`},
		{"see https://example.com/docs/errors#429 or http://h:80/mcp", "see https://example.com/docs/errors?[redacted] or http://h:80/mcp"},
		{"no URL here: a?b=c, mailto:x@y", "no URL here: a?b=c, mailto:x@y"},
	}
	for _, tt := range tests {
		if got := Text(tt.in); got != tt.want {
			t.Errorf("Text(%q)\n = %q\nwant %q", tt.in, got, tt.want)
		}
	}
}

// TestTextEveryForm: a provider or upstream may echo a key in any form;
// none may survive.
func TestTextEveryForm(t *testing.T) {
	const key = "sk-proj-Abc123Def456Ghi789Jkl012"
	tests := []struct{ name, msg string }{
		{"as is", "bad key " + key},
		{"without its prefix, in HTML", "<html><body><p>Invalid key: Abc123Def456Ghi789Jkl012</p></body></html>"},
		{"without any dash", "key proj_Abc123Def456Ghi789Jkl012 rejected"},
		{"cut short", "key Abc123Def456Gh... is invalid"},
		{"its tail", "key ending Ghi789Jkl012 is invalid"},
		{"URL-escaped", "GET /v1?key=" + "sk-proj-Abc123Def456Ghi789Jkl012%21"},
		{"base64", "auth c2stcHJvai1BYmMxMjNEZWY0NTZHaGk3ODlKa2wwMTI= rejected"},
		{"basic credential", "Authorization: Basic OnNrLXByb2otQWJjMTIzRGVmNDU2R2hpNzg5SmtsMDEy"},
		{"bearer header echoed", "got header Bearer " + key},
		{"hex", "key 736b2d70726f6a2d4162633132334465663435364768693738394a6b6c303132 rejected"},
		{"hex, upper case", "key 736B2D70726F6A2D4162633132334465663435364768693738394A6B6C303132 rejected"},
		{"reversed", "yek 210lkJ987ihG654feD321cbA-jorp-ks detcejer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Text(tt.msg, key)
			for _, leak := range []string{"Abc123Def456", "Def456Ghi", "Ghi789Jkl", "c2stcHJvai1", "OnNrLXByb2otQWJj", "416263313233446566343536", "416263313233446566343536", "kJ987ihG654f"} {
				if strings.Contains(got, leak) {
					t.Errorf("Text(%q) = %q, still holds %q", tt.msg, got, leak)
				}
			}
		})
	}
	if got := Text("an ordinary message about the provider", key); got != "an ordinary message about the provider" {
		t.Errorf("ordinary text changed: %q", got)
	}
}

func TestClip(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		mark string
		want string
	}{
		{"short", 10, "…", "short"},
		{"exactly", 7, "…", "exactly"},
		{"abcdef", 3, "…", "abc…"},
		{"caf\u00e9s", 4, "", "caf"}, // é is two bytes: cut before it, not inside
		{"\u00e9\u00e9", 1, "!", "!"},
	}
	for _, tt := range tests {
		if got := Clip(tt.s, tt.n, tt.mark); got != tt.want {
			t.Errorf("Clip(%q, %d, %q) = %q, want %q", tt.s, tt.n, tt.mark, got, tt.want)
		}
	}
}
