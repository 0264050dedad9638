package index

import (
	"fmt"
	"math"
	mathbits "math/bits"
)

// Validate checks that vecs holds n finite vectors of dimension dim (any
// common dimension when dim is 0) and returns that dimension. Vectors are
// validated once, where they enter the process: a provider's answer
// (package embedding) or a snapshot file (package snapshot). What the
// local embedder computes is finite by construction.
func Validate(vecs [][]float32, n, dim int) (int, error) {
	if len(vecs) != n {
		return 0, fmt.Errorf("%d vectors for %d inputs", len(vecs), n)
	}
	for i, v := range vecs {
		if dim == 0 {
			dim = len(v)
		}
		if len(v) == 0 || len(v) != dim {
			return 0, fmt.Errorf("vector %d has dimension %d, want %d", i, len(v), dim)
		}
		if !finite(v) {
			return 0, fmt.Errorf("vector %d has a non-finite value", i)
		}
	}
	return dim, nil
}

// Normalize scales v to unit L2 length in place and reports its original
// length. A zero vector stays zero.
func Normalize(v []float32) float64 {
	norm := Norm(v)
	if norm == 0 {
		return 0
	}
	inv := 1 / norm
	if inv > math.MaxFloat32 {
		// A length so small (values near float32's smallest, which a
		// provider may send) that its inverse overflows float32: scaled
		// in float32 every value became ±Inf, or NaN where it was 0, and
		// the row's score every query's best or none. In float64 the
		// values come out at most 1.
		for i := range v {
			v[i] = float32(float64(v[i]) * inv)
		}
		return norm
	}
	inv32 := float32(inv)
	for i := range v {
		v[i] *= inv32
	}
	return norm
}

// Norm is v's L2 length.
func Norm(v []float32) float64 {
	// Four partial sums, so the additions need not wait for each other;
	// in float64 the order changes nothing a float32 result can show.
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(v); i += 4 {
		x := v[i : i+4 : i+4]
		s0 += float64(x[0]) * float64(x[0])
		s1 += float64(x[1]) * float64(x[1])
		s2 += float64(x[2]) * float64(x[2])
		s3 += float64(x[3]) * float64(x[3])
	}
	for ; i < len(v); i++ {
		s0 += float64(v[i]) * float64(v[i])
	}
	return math.Sqrt((s0 + s1) + (s2 + s3))
}

// normTouched is Norm(v) where only the columns bits marks can be
// nonzero, reading those alone: each is added to the partial sum Norm
// adds it to, in the same order, and Norm's other terms are zeros, so the
// result is Norm's to the last bit.
func normTouched(v []float32, bits []uint64) float64 {
	var s [4]float64
	whole := len(v) &^ 3 // Norm's tail goes to its first sum
	for w, word := range bits {
		for ; word != 0; word &= word - 1 {
			j := w*64 + mathbits.TrailingZeros64(word)
			x := float64(v[j])
			if j < whole {
				s[j&3] += x * x
			} else {
				s[0] += x * x
			}
		}
	}
	return math.Sqrt((s[0] + s[1]) + (s[2] + s[3]))
}

// finite reports whether every element of v is a number: x-x is 0 for a
// finite x and NaN for NaN or ±Inf, and a NaN survives any sum. Branch-free
// with four partial sums, since a query vector is checked on every search.
func finite(v []float32) bool {
	var z0, z1, z2, z3 float32
	i := 0
	for ; i+4 <= len(v); i += 4 {
		x := v[i : i+4 : i+4]
		z0 += x[0] - x[0]
		z1 += x[1] - x[1]
		z2 += x[2] - x[2]
		z3 += x[3] - x[3]
	}
	for ; i < len(v); i++ {
		z0 += v[i] - v[i]
	}
	return z0+z1+z2+z3 == 0
}

// AddSparse appends to dst a + weight·b, for a and b whose indices
// ascend; the sum's ascend too.
func AddSparse(dst, a, b Sparse, weight float32) Sparse {
	i, j := 0, 0
	for i < len(a.Idx) || j < len(b.Idx) {
		switch {
		case j == len(b.Idx) || i < len(a.Idx) && a.Idx[i] < b.Idx[j]:
			dst.Idx, dst.Val = append(dst.Idx, a.Idx[i]), append(dst.Val, a.Val[i])
			i++
		case i == len(a.Idx) || b.Idx[j] < a.Idx[i]:
			dst.Idx, dst.Val = append(dst.Idx, b.Idx[j]), append(dst.Val, weight*b.Val[j])
			j++
		default:
			dst.Idx, dst.Val = append(dst.Idx, a.Idx[i]), append(dst.Val, a.Val[i]+weight*b.Val[j])
			i, j = i+1, j+1
		}
	}
	return dst
}
