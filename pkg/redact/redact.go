// Package redact makes text safe to show: it removes secrets from what
// reaches status, errors and logs (URLs, keys in messages), and clips text
// to a length without splitting a character.
package redact

import (
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Clip cuts s to at most n bytes, back to a character boundary, and
// appends mark when it cut anything.
func Clip(s string, n int, mark string) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + mark
}

// URL drops user info, the query string and the fragment, where tokens
// hide: "https://user:pw@host/v1?key=x" becomes "https://host/v1".
func URL(raw string) string {
	if i := strings.IndexAny(raw, "?#"); i >= 0 {
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

// Text removes secrets from msg: each given secret in every form it can
// be echoed in (as is, the token of a "Scheme token" value such as "Bearer
// abc123", URL-escaped, base64 alone or in a Basic credential, and any run
// of minRun or more of its characters, which catches a key echoed without
// its "sk-" prefix or cut short), anything shaped like an API key, and the
// user info, query and fragment of any URL (urls). Secrets under 4 bytes
// are ignored: they would match by chance.
func Text(msg string, secrets ...string) string {
	msg = urls(msg)
	for _, s := range secrets {
		for _, form := range forms(s) {
			if len(form) >= 4 {
				msg = strings.ReplaceAll(msg, form, "[redacted]")
			}
		}
	}
	for _, s := range secrets {
		msg = redactRuns(msg, s)
		if _, tok, ok := strings.Cut(s, " "); ok {
			msg = redactRuns(msg, tok)
		}
	}
	return keyLike.ReplaceAllString(msg, "[redacted]")
}

// aURL is a URL as error texts quote it: net/http's `Post "URL": …`.
var aURL = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.\-]*://[^\s"'<>` + "`" + `]+`)

// urls replaces the user info, query and fragment of every URL in msg
// with a mark: Go's url.Error quotes the URL a request went to, which is
// not only the configured one (whose query and user info are given as
// secrets) but also where a redirect sent it, and a signed redirect's
// query carries a credential (X-Amz-Signature=…) that a caller of the
// upstream's tools was shown.
func urls(msg string) string {
	if !strings.Contains(msg, "://") {
		return msg
	}
	return aURL.ReplaceAllStringFunc(msg, func(u string) string {
		scheme, rest, _ := strings.Cut(u, "://")
		authority, path := rest, ""
		if i := strings.IndexAny(rest, "/?#"); i >= 0 {
			authority, path = rest[:i], rest[i:]
		}
		var b strings.Builder
		b.WriteString(scheme + "://")
		if at := strings.LastIndex(authority, "@"); at >= 0 {
			b.WriteString("[redacted]@")
			authority = authority[at+1:]
		}
		b.WriteString(authority)
		if i := strings.IndexAny(path, "?#"); i >= 0 {
			b.WriteString(path[:i] + "?[redacted]")
		} else {
			b.WriteString(path)
		}
		return b.String()
	})
}

// forms are the encodings a secret takes in URLs, headers and bodies.
func forms(s string) []string {
	if len(s) < 4 {
		return nil
	}
	out := []string{s, url.QueryEscape(s), url.PathEscape(s)}
	if _, tok, ok := strings.Cut(s, " "); ok {
		out = append(out, tok, url.QueryEscape(tok))
		s = tok
	}
	for _, raw := range []string{s, ":" + s} {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
			out = append(out, enc.EncodeToString([]byte(raw)))
		}
	}
	// Hex and reversed copies: forms an error body can echo a key in that
	// no one would think to strip.
	for _, raw := range []string{s} {
		h := hex.EncodeToString([]byte(raw))
		out = append(out, h, strings.ToUpper(h), reverse(raw))
	}
	// Longest first, so a form is not left half-replaced by a shorter one.
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

func reverse(s string) string {
	b := []byte(s)
	slices.Reverse(b)
	return string(b)
}

// minRun is the shortest run of a secret's characters that is redacted
// where it appears on its own: 8 random key characters do not occur in
// ordinary text by chance.
const minRun = 8

// redactRuns replaces every maximal run of at least minRun bytes of msg
// that occurs in secret.
func redactRuns(msg, secret string) string {
	if len(secret) < minRun || len(msg) < minRun {
		return msg
	}
	var b strings.Builder
	last := 0
	for i := 0; i+minRun <= len(msg); {
		if !strings.Contains(secret, msg[i:i+minRun]) {
			i++
			continue
		}
		j := i + minRun
		for j < len(msg) && strings.Contains(secret, msg[i:j+1]) {
			j++
		}
		b.WriteString(msg[last:i])
		b.WriteString("[redacted]")
		last, i = j, j
	}
	if last == 0 {
		return msg
	}
	b.WriteString(msg[last:])
	return b.String()
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

// MaxEcho is the most of any one input an error message quotes.
const MaxEcho = 64

// Echo quotes an input for an error message, clipped to MaxEcho bytes: an
// error says what it refused without sending a 100 KB name back.
func Echo(s string) string { return strconv.Quote(Clip(s, MaxEcho, "…")) }
