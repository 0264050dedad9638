package embedding

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// sameAsStrconv fails t if fastFloat32 reads all of s and is sure of a
// float32 other than strconv's, or of one where strconv finds an error.
func sameAsStrconv(t *testing.T, s string) {
	t.Helper()
	got, n, ok := fastFloat32([]byte(s))
	if !ok || n != len(s) {
		return // strconv's to read
	}
	want, err := strconv.ParseFloat(s, 32)
	if err != nil || math.Float32bits(got) != math.Float32bits(float32(want)) {
		t.Fatalf("fastFloat32(%q) = %v (%#x); strconv: %v (%#x), %v", s, got, math.Float32bits(got), float32(want), math.Float32bits(float32(want)), err)
	}
}

func TestParseFloat32(t *testing.T) {
	for _, s := range []string{
		"0", "-0", "0.0", "1", "-1", "0.5", "-0.0069292834", "0.123456789", "1e-3", "2.5E+3", "1e22", "1e23", "1e-22", "1e-23",
		"123456789012345", "1234567890123456", "999999999999999.5", "-0.0069292834959924221", "1234567890123456789012e-10", "0.000000000000000000000001",
		"16777217", "16777219", "33554434", // float32 halfway points, whole numbers: ties to even
		"3.4028235e38", "3.4028236e38", "-3.4028235e38", "1e39", "340282356779733661637539395458142568448",
		"1.1754944e-38", "1.1754942e-38", "1e-45", "1e-46", "7e-46",
		"", "-", ".5", "5.", "+1", "1e", "1e+", "1e5x", "00.5", "-.5", "1.e3", "1e00005", "0x10", "Inf", "NaN", "1_0",
	} {
		t.Run(s, func(t *testing.T) { sameAsStrconv(t, s) })
	}
}

// TestParseFloat32Halfway reads decimals at and just beside the points
// halfway between neighbouring float32s, where a float64 rounded again to
// float32 can go the wrong way, and where a decimal cut to 15 digits
// rounds otherwise than the whole: the fast path must leave each it
// cannot be sure of to strconv.
func TestParseFloat32Halfway(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200000 {
		f := math.Float32frombits(rng.Uint32N(0x7f000000) + 0x00800000) // a normal float32
		mid := (float64(f) + float64(math.Nextafter32(f, float32(math.Inf(1))))) / 2
		for _, s := range []string{
			strconv.FormatFloat(mid, 'g', -1, 64),
			strconv.FormatFloat(mid, 'g', 15, 64),
			strconv.FormatFloat(mid, 'e', 14, 64),
			strconv.FormatFloat(mid, 'e', 15, 64), // 16 digits and more: read as two of 15
			strconv.FormatFloat(mid, 'e', 16, 64),
			strconv.FormatFloat(mid, 'e', 24, 64),
			strconv.FormatFloat(math.Nextafter(mid, 0), 'e', 24, 64),
			strconv.FormatFloat(math.Nextafter(mid, 2*mid), 'e', 19, 64),
			strconv.FormatFloat(math.Nextafter(mid, 0), 'g', 15, 64),
			strconv.FormatFloat(math.Nextafter(mid, 2*mid), 'g', 15, 64),
			strconv.FormatFloat(float64(f), 'g', -1, 32),
			fmt.Sprintf("%.9f", f),
		} {
			sameAsStrconv(t, s)
		}
	}
}

// FuzzParseFloat32: whatever the bytes, fastFloat32 is sure only of
// strconv's answer.
func FuzzParseFloat32(f *testing.F) {
	for _, s := range []string{"0.1", "-0.0069292834", "1e-45", "16777217", "3.4028236e38", "+1", ".5", "1e00005", "9007199254740993"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { sameAsStrconv(t, s) })
}
