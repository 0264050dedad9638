// Package redact removes secrets from text the service shows: URLs in
// status and errors.
package redact

import "strings"

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
