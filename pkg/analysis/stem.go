package analysis

import "strings"

// Stem strips the commonest English inflections so that "files", "filed" and
// "filing" meet "file". It is deliberately light (no dictionary): a wrong
// merge costs precision in every query, a missed one only recall in a few.
func Stem(w string) string {
	n := len(w)
	if n <= 3 {
		return w
	}
	switch {
	case strings.HasSuffix(w, "ies") && n > 4:
		return w[:n-3] + "y"
	case strings.HasSuffix(w, "sses"):
		return w[:n-2]
	case strings.HasSuffix(w, "ing") && n > 5:
		return undouble(w[:n-3])
	case strings.HasSuffix(w, "ed") && n > 4 && !strings.HasSuffix(w, "eed"):
		return undouble(w[:n-2])
	case strings.HasSuffix(w, "es") && n > 4 && hasSibilantEnd(w[:n-2]):
		return w[:n-2]
	case strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		return w[:n-1]
	}
	return w
}

func hasSibilantEnd(w string) bool {
	return strings.HasSuffix(w, "sh") || strings.HasSuffix(w, "ch") || strings.HasSuffix(w, "x") ||
		strings.HasSuffix(w, "ss") || strings.HasSuffix(w, "z")
}

// undouble turns "stopp" (from "stopped") back into "stop", but leaves
// "fill" and "pass" alone.
func undouble(w string) string {
	n := len(w)
	if n >= 3 && w[n-1] == w[n-2] && !strings.ContainsRune("lsz", rune(w[n-1])) && !strings.ContainsRune("aeiou", rune(w[n-1])) {
		return w[:n-1]
	}
	return w
}
