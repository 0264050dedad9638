package eval

import (
	"errors"
	"testing"
)

func FuzzParseCases(f *testing.F) {
	f.Add([]byte(`{"id":"a","category":"c","query":"q","expected":["t"]}` + "\n"))
	f.Add([]byte("# comment\n\n{\"id\":\"a\",\"query\":\"q\",\"expected\":[\"s/t\"]}\n{\"id\":\"a\"}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cases, err := ParseCases("fuzz.jsonl", data)
		if err != nil {
			if !errors.Is(err, ErrBadInput) {
				t.Fatalf("error is not ErrBadInput: %v", err)
			}
			return
		}
		for _, c := range cases {
			if c.ID == "" || c.Query == "" || len(c.Expected) == 0 || c.Category == "" {
				t.Fatalf("accepted an incomplete case %+v", c)
			}
		}
	})
}
