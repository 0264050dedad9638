package analysis

import "testing"

func TestUnaccented(t *testing.T) {
	tests := []struct {
		term, want string
		ok         bool
	}{
		{"impayées", "impaye", true}, // as the query word "impayees" analyses
		{"congés", "cong", true},
		{"échéance", "echeanc", true},
		{"straße", "strass", true},
		{"œuvre", "oeuvr", true},
		{"café", "cafe", true},
		{"łódź", "lodz", true},
		{"đặt", "dat", true},
		{"ça", "ca", true},
		{"cafe", "", false},    // nothing to unaccent
		{"東京", "", false},      // no unaccented form
		{"naïve東京", "", false}, // partly none
		{"à", "", false},       // a single letter
		{"thé", "", false},     // a stop word unaccented
	}
	for _, tt := range tests {
		if Vietnamese(tt.term) != (tt.term == "đặt") {
			t.Errorf("Vietnamese(%q) = %v", tt.term, !(tt.term == "đặt"))
		}
		got, ok := English.Unaccented(tt.term)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Unaccented(%q) = %q, %v; want %q, %v", tt.term, got, ok, tt.want, tt.ok)
		}
	}
}
