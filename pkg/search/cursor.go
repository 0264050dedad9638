package search

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"sort"
	"strings"
)

// A list cursor is base64url(offset | scope fingerprint | HMAC). The
// fingerprint binds it to the scope and catalog it was issued for, so a
// cursor reused with other filters, or after the catalog changed, is
// rejected instead of silently skipping or repeating tools.

var errBadCursor = badRequest("invalid_cursor", `"cursor" is not one this service issued for this listing; start again without it`)

func (snap *Snapshot) cursorKey(key []byte) []byte {
	if len(key) > 0 {
		return key
	}
	k := sha256.Sum256([]byte("toolsearch-cursor\x00" + snap.Catalog.Hash()))
	return k[:]
}

func scopeFingerprint(snap *Snapshot, req *Request, caller Caller) [16]byte {
	servers := append([]string(nil), req.Servers...)
	sort.Strings(servers)
	tools := append([]string(nil), req.Visibility.Tools...)
	sort.Strings(tools)
	vservers := append([]string(nil), req.Visibility.Servers...)
	sort.Strings(vservers)
	h := sha256.Sum256([]byte(strings.Join([]string{
		snap.Catalog.Hash(), strings.Join(servers, "\x01"), strings.ToLower(req.ServerMatch),
		strings.Join(tools, "\x01"), strings.Join(vservers, "\x01"), caller.Key,
	}, "\x00")))
	var fp [16]byte
	copy(fp[:], h[:])
	return fp
}

func encodeCursor(key []byte, offset int, fp [16]byte) string {
	buf := make([]byte, 8, 8+16+16)
	binary.BigEndian.PutUint64(buf, uint64(offset))
	buf = append(buf, fp[:]...)
	mac := hmac.New(sha256.New, key)
	mac.Write(buf)
	buf = mac.Sum(buf)[:8+16+16]
	return base64.RawURLEncoding.EncodeToString(buf)
}

func decodeCursor(key []byte, cursor string, fp [16]byte) (int, error) {
	buf, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || len(buf) != 8+16+16 {
		return 0, errBadCursor
	}
	mac := hmac.New(sha256.New, key)
	mac.Write(buf[:24])
	if !hmac.Equal(mac.Sum(nil)[:16], buf[24:]) || !hmac.Equal(buf[8:24], fp[:]) {
		return 0, errBadCursor
	}
	off := binary.BigEndian.Uint64(buf[:8])
	if off > 1<<31 {
		return 0, errBadCursor
	}
	return int(off), nil
}
