// Package edit tells what reads as one typing error: the suggestions for
// unknown servers and JSON keys, and the keyword index's tests, share it.
package edit

import "strings"

// Nearest is the first of names that name nearly is: equal but for case,
// else one typing error away (One), case aside; "" for none, and for a
// name over 64 bytes (a guess at a hostile name is not worth a scan).
func Nearest(name string, names []string) string {
	if len(name) > 64 {
		return ""
	}
	low := strings.ToLower(name)
	best := ""
	for _, n := range names {
		switch ln := strings.ToLower(n); {
		case ln == low:
			return n
		case best == "" && One(low, ln):
			best = n
		}
	}
	return best
}

// One reports whether a and b are one letter dropped, added or changed,
// or two neighbours swapped, apart (byte by byte): what reads as one
// typing error.
func One(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	switch len(b) - len(a) {
	case 0:
		i := 0
		for i < len(a) && a[i] == b[i] {
			i++
		}
		if i == len(a) {
			return false // equal
		}
		if a[i+1:] == b[i+1:] {
			return true // one changed
		}
		return i+1 < len(a) && a[i] == b[i+1] && a[i+1] == b[i] && a[i+2:] == b[i+2:]
	case 1:
		i := 0
		for i < len(a) && a[i] == b[i] {
			i++
		}
		return a[i:] == b[i+1:]
	}
	return false
}
