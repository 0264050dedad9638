package edit

import (
	"strings"
	"testing"
)

func TestOne(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want bool
	}{
		{"github", "github", false},
		{"github", "gihub", true},
		{"github", "githubs", true},
		{"github", "gitbub", true},
		{"github", "igthub", true},
		{"github", "gitlab", false},
		{"ab", "ba", true},
		{"a", "", true},
		{"", "", false},
		{"abc", "cba", false},
	} {
		if got := One(tt.a, tt.b); got != tt.want || One(tt.b, tt.a) != tt.want {
			t.Errorf("One(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestNearest(t *testing.T) {
	names := []string{"github", "gitlab", "slack", "Jira"}
	for _, tt := range []struct{ name, want string }{
		{"GitHub", "github"},
		{"githb", "github"},
		{"gitlb", "gitlab"},
		{"jira", "Jira"},
		{"slak", "slack"},
		{"gitbucket", ""},
		{"", ""},
		{strings.Repeat("a", 65), ""},
	} {
		if got := Nearest(tt.name, names); got != tt.want {
			t.Errorf("Nearest(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}
