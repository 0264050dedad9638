package eval

import (
	"fmt"
	"testing"
)

func TestSplit(t *testing.T) {
	var cases []Case
	for i := range 1000 {
		cases = append(cases, Case{ID: fmt.Sprintf("c-%d", i)})
	}
	dev, _ := Split(cases, "dev")
	test, _ := Split(cases, "test")
	if len(dev)+len(test) != 1000 || len(dev) < 400 || len(test) < 400 {
		t.Fatalf("split %d/%d", len(dev), len(test))
	}
	inDev := map[string]bool{}
	for _, c := range dev {
		inDev[c.ID] = true
	}
	for _, c := range test {
		if inDev[c.ID] {
			t.Fatalf("%s in both halves", c.ID)
		}
	}
	again, _ := Split(cases[500:], "dev")
	for _, c := range again {
		if !inDev[c.ID] {
			t.Fatalf("%s changed halves when the file changed", c.ID)
		}
	}
	if _, err := Split(cases, "train"); err == nil {
		t.Error("Split(train) accepted")
	}
}
