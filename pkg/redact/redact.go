// Package redact removes secrets from text the service shows: URLs in
// status and errors.
package redact

import (
	"regexp"
	"strings"
)

// URL drops user info and the query string, where tokens hide:
// "https://user:pw@host/v1?key=x" becomes "https://host/v1".
func URL(raw string) string {
	if i := strings.Index(raw, "?"); i >= 0 {
		raw = raw[:i]
	}
	if i := strings.Index(raw, "://"); i >= 0 {
		if at := strings.LastIndex(raw[i+3:], "@"); at >= 0 {
			raw = raw[:i+3] + raw[i+3+at+1:]
		}
	}
	return raw
}

// keyLike matches API-key shapes that providers echo back in error
// messages ("Incorrect API key provided: sk-abc***xyz").
var keyLike = regexp.MustCompile(`\b(sk|pk|rk|key)-[A-Za-z0-9_*\-]{6,}`)

// Text removes secrets from msg: each given secret (ignoring ones under 4
// bytes, which would match by chance), the token of a "Scheme token" value
// such as "Bearer abc123", and anything shaped like an API key.
func Text(msg string, secrets ...string) string {
	for _, s := range secrets {
		if len(s) >= 4 {
			msg = strings.ReplaceAll(msg, s, "[redacted]")
		}
		if _, tok, ok := strings.Cut(s, " "); ok && len(tok) >= 4 {
			msg = strings.ReplaceAll(msg, tok, "[redacted]")
		}
	}
	return keyLike.ReplaceAllString(msg, "[redacted]")
}

// URLSecrets returns the parts of raw that may carry a secret, its user
// info and query string, which net/http errors quote (masking a password,
// but not a query token).
func URLSecrets(raw string) []string {
	var out []string
	if i := strings.Index(raw, "?"); i >= 0 && i+1 < len(raw) {
		out = append(out, raw[i+1:])
	}
	if i := strings.Index(raw, "://"); i >= 0 {
		if at := strings.LastIndex(raw[i+3:], "@"); at >= 0 {
			out = append(out, raw[i+3:i+3+at])
		}
	}
	return out
}
