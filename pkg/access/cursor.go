package access

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"strings"
)

// A list cursor is base64url(offset | scope fingerprint | HMAC). The
// fingerprint binds it to the scope and catalog it was issued for (the
// caller computes it), so a cursor reused with other filters, or after
// the catalog changed, is rejected instead of silently skipping or
// repeating tools.

// ErrBadCursor is a cursor this key did not sign for this scope.
var ErrBadCursor = errors.New("invalid cursor")

// Scope fingerprints what a listing covers.
type Scope [16]byte

// ScopeOf is the scope of a listing defined by parts (its catalog, its
// filters, its caller), each a string that may hold anything but NUL.
func ScopeOf(parts ...string) Scope {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	var s Scope
	copy(s[:], h[:])
	return s
}

// SignCursor is the cursor that continues a listing of scope at offset.
func SignCursor(key []byte, offset int, scope Scope) string {
	buf := make([]byte, 8, 8+16+16)
	binary.BigEndian.PutUint64(buf, uint64(offset))
	buf = append(buf, scope[:]...)
	mac := hmac.New(sha256.New, key)
	mac.Write(buf)
	buf = mac.Sum(buf)[:8+16+16]
	return base64.RawURLEncoding.EncodeToString(buf)
}

// VerifyCursor returns the offset of a cursor SignCursor made with key for
// scope, or ErrBadCursor.
func VerifyCursor(key []byte, cursor string, scope Scope) (int, error) {
	buf, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || len(buf) != 8+16+16 {
		return 0, ErrBadCursor
	}
	mac := hmac.New(sha256.New, key)
	mac.Write(buf[:24])
	if !hmac.Equal(mac.Sum(nil)[:16], buf[24:]) || !hmac.Equal(buf[8:24], scope[:]) {
		return 0, ErrBadCursor
	}
	off := binary.BigEndian.Uint64(buf[:8])
	if off > 1<<31 {
		return 0, ErrBadCursor
	}
	return int(off), nil
}
