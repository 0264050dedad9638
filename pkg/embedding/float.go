package embedding

import "math"

// exact10 are the powers of ten a float64 holds exactly.
var exact10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// fastFloat32 reads the decimal number b starts with, and the float32
// nearest it (ok) when it can be sure that is strconv's answer: for a
// provider that answers floats rather than base64, 1,536 of them a
// vector, parsing was most of such a build's time (BENCHMARKS.md,
// "Floats read in one pass"). Past 15 significant digits the decimal is
// between its first 15 and the next number of 15, and when both of those
// round to the same float32 so does it (rounding is monotone); float32
// has about 7 digits, so they nearly always do. Every other spelling is
// not ok: strconv's to read.
func fastFloat32(b []byte) (f float32, n int, ok bool) {
	const most = 15 // digits clinger takes
	i, neg := 0, false
	if len(b) > 0 && b[0] == '-' {
		i, neg = 1, true
	}
	var mant uint64
	digits, exp, seen, cut := 0, 0, false, false
	// digit takes one more digit; leading zeros leave mant 0 and are not
	// counted. A digit past the 15th is dropped, scaling the rest by ten
	// when it is before the point.
	digit := func(d byte, point bool) {
		if digits == most {
			cut = cut || d != '0'
			if !point {
				exp++
			}
			return
		}
		if point {
			exp--
		}
		if mant = mant*10 + uint64(d-'0'); mant != 0 {
			digits++
		}
	}
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		seen = true
		digit(b[i], false)
	}
	if i < len(b) && b[i] == '.' {
		i++
		frac := false
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			frac = true
			digit(b[i], true)
		}
		seen = seen && frac
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		sign := 1
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			if b[i] == '-' {
				sign = -1
			}
			i++
		}
		e, n := 0, 0
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9' && n < 4; i, n = i+1, n+1 {
			e = e*10 + int(b[i]-'0')
		}
		seen = seen && n > 0
		exp += sign * e
	}
	if !seen {
		return 0, i, false
	}
	f, ok = clinger(mant, exp, neg)
	if ok && cut {
		var above float32
		above, ok = clinger(mant+1, exp, neg)
		ok = ok && above == f
	}
	return f, i, ok
}

// clinger is the float32 nearest ±mant×10^exp, for mant at most 10^15 (a
// float64 holds it exactly), when it can be sure of it. Within 22 powers
// of ten the decimal is one correctly rounded float64 operation
// (Clinger's fast path). Rounding that float64 to float32 gives the
// float32 nearest the decimal unless the float64 fell exactly on a point
// halfway between two float32s: rounding to nearest is monotone, and
// every such halfway point is a float64, so the decimal lies on the same
// side of it as its float64 unless the float64 is the point itself. Such
// a decimal is between 1e-22 and 1e37, inside float32's normal range, so
// neither subnormals nor overflow reach it.
func clinger(mant uint64, exp int, neg bool) (float32, bool) {
	if exp < -22 || exp > 22 {
		return 0, false
	}
	x := float64(mant)
	if exp >= 0 {
		x *= exact10[exp]
	} else {
		x /= exact10[-exp]
	}
	if neg {
		x = -x
	}
	const halfway = 1 << 28 // the float64 bits below a float32's last
	if x != 0 && math.Float64bits(x)&(1<<29-1) == halfway {
		return 0, false
	}
	return float32(x), true
}
