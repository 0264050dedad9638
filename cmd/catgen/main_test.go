package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/toolsearch/toolsearch/pkg/catgen"
)

func TestRun(t *testing.T) {
	want := func(sp catgen.Spec) string {
		var buf bytes.Buffer
		if err := sp.Write(&buf); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	for _, tt := range []struct {
		args    []string
		out     string // the catalog written, when no error
		wantErr string
	}{
		{[]string{"-tools", "20", "-seed", "4"}, want(catgen.Spec{Tools: 20, Seed: 4}), ""},
		{[]string{"-tools", "20", "-seed", "4", "-text", "3"}, want(catgen.Spec{Tools: 20, Seed: 4, Text: 3}), ""},
		{[]string{"-tools", "0"}, "", "-tools must be at least 1"},
		{[]string{"-text", "0"}, "", "-text must be at least 1"},
		{[]string{"-tools", "20", "-script", "cyrillic"}, want(catgen.Spec{Tools: 20, Seed: 1, Script: "cyrillic"}), ""},
		{[]string{"-script", "greek"}, "", `-script must be one of ["" "cyrillic"], got "greek"`},
		{[]string{"-size", "3"}, "", "flag provided but not defined"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(tt.args, &stdout, &stderr)
		switch {
		case tt.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%v: error %v, want %q", tt.args, err, tt.wantErr)
			}
		case err != nil:
			t.Errorf("%v: %v", tt.args, err)
		case stdout.String() != tt.out:
			t.Errorf("%v: wrote %d bytes, not the catalog of its Spec (%d)", tt.args, stdout.Len(), len(tt.out))
		}
	}
}
