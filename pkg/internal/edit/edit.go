// Package edit tells what reads as one typing error: search's server
// suggestions, the keyword index's tests and the hints for unknown JSON
// keys share it.
package edit

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
