package access

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/toolsearch/toolsearch/pkg/catalog"
)

func TestAuthenticate(t *testing.T) {
	keys := []Key{{Name: "ops", Hash: HashSecret("s3cret-ops")}, {Name: "ci", Hash: HashSecret("s3cret-ci")}}
	tests := []struct {
		name  string
		keys  []Key
		token string
		want  Caller
		err   error
	}{
		{"no keys: anonymous", nil, "", Caller{}, nil},
		{"no keys, any token: anonymous", nil, "whatever", Caller{}, nil},
		{"match", keys, "s3cret-ci", Caller{Key: "ci"}, nil},
		{"unknown", keys, "s3cret", Caller{}, ErrUnauthorized},
		{"missing", keys, "", Caller{}, ErrUnauthorized},
	}
	for _, tt := range tests {
		got, err := Authenticate(tt.keys, tt.token)
		if got != tt.want || !errors.Is(err, tt.err) {
			t.Errorf("%s: Authenticate = %v, %v; want %v, %v", tt.name, got, err, tt.want, tt.err)
		}
	}
}

func TestCaller(t *testing.T) {
	ctx := WithCaller(t.Context(), Caller{Key: "ops"})
	if got := CallerFrom(ctx); got.Key != "ops" {
		t.Errorf("CallerFrom = %v", got)
	}
	if got := CallerFrom(t.Context()); got != (Caller{}) {
		t.Errorf("CallerFrom(empty) = %v, want anonymous", got)
	}
}

func TestCursor(t *testing.T) {
	key := []byte("k")
	scope := Scope{1, 2, 3}
	c := SignCursor(key, 40, scope)
	if off, err := VerifyCursor(key, c, scope); off != 40 || err != nil {
		t.Fatalf("VerifyCursor(own) = %d, %v", off, err)
	}
	other := scope
	other[0] = 9
	tampered := []byte(c)
	tampered[3] ^= 1
	for name, tc := range map[string]struct {
		key    []byte
		cursor string
		scope  Scope
	}{
		"other scope": {key, c, other},
		"other key":   {[]byte("x"), c, scope},
		"tampered":    {key, string(tampered), scope},
		"not base64":  {key, "!!", scope},
		"empty":       {key, "", scope},
	} {
		if _, err := VerifyCursor(tc.key, tc.cursor, tc.scope); !errors.Is(err, ErrBadCursor) {
			t.Errorf("%s: VerifyCursor error = %v, want ErrBadCursor", name, err)
		}
	}
}

func TestVisibility(t *testing.T) {
	part, err := catalog.Parse("t.json", []byte(`{"servers":[
		{"name":"gh","tools":[{"name":"a","description":"Tool a."},{"name":"b","description":"Tool b."}]},
		{"name":"slack","tools":[{"name":"c","description":"Tool c."}]}]}`), "")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.New([]catalog.Part{part})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		vis     Visibility
		rows    []int
		limited bool
		unknown []string
	}{
		{Visibility{}, nil, false, nil},
		{Visibility{Servers: []string{"slack"}}, []int{2}, true, nil},
		{Visibility{Tools: []string{"gh/b"}, Servers: []string{"slack", "jira"}}, []int{1, 2}, true, []string{"server jira"}},
		{Visibility{Tools: []string{"nope"}}, nil, true, []string{"tool nope"}},
	}
	for _, tt := range tests {
		set, unknown := tt.vis.Resolve(cat)
		rows, limited := set.Rows()
		if !slices.Equal(rows, tt.rows) || limited != tt.limited || !slices.Equal(unknown, tt.unknown) {
			t.Errorf("Resolve(%+v) = rows %v limited %v unknown %v; want %v %v %v", tt.vis, rows, limited, unknown, tt.rows, tt.limited, tt.unknown)
		}
		for r := range cat.Len() {
			if set.Has(r) != (!tt.limited || slices.Contains(tt.rows, r)) {
				t.Errorf("Resolve(%+v).Has(%d) disagrees with Rows", tt.vis, r)
			}
		}
	}
	a, _ := Visibility{Servers: []string{"gh"}}.Resolve(cat)
	b, _ := Visibility{Tools: []string{"b", "c"}}.Resolve(cat)
	if rows, _ := a.And(b).Rows(); !slices.Equal(rows, []int{1}) {
		t.Errorf("And = %v, want [1]", rows)
	}
	if rows, _ := All().And(b).Rows(); !slices.Equal(rows, []int{1, 2}) {
		t.Errorf("All().And = %v, want [1 2]", rows)
	}
}

// refusing is a budget in debt: it refuses every spend and records what
// it is charged.
type refusing struct{ charged map[Work]int }

func (b refusing) Spend(Work, int) error { return &OverBudgetError{Rate: 1, Burst: 1} }
func (b refusing) Charge(w Work, n int)  { b.charged[w] += n }

// TestSpend: a budget in ctx refuses a caller in debt, unless the work is
// committed, when it charges instead; without a budget, work is free.
func TestSpend(t *testing.T) {
	b := refusing{charged: map[Work]int{}}
	tests := []struct {
		name    string
		ctx     context.Context
		refused bool
		charged int
	}{
		{"no budget", context.Background(), false, 0},
		{"committed without a budget", Committed(context.Background()), false, 0},
		{"in debt", WithBudget(context.Background(), b), true, 0},
		{"committed", Committed(WithBudget(context.Background(), b)), false, 3},
		{"committed twice", Committed(Committed(WithBudget(context.Background(), b))), false, 3},
	}
	for _, tt := range tests {
		clear(b.charged)
		err := Spend(tt.ctx, WorkScan, 3)
		if (err != nil) != tt.refused {
			t.Errorf("%s: Spend = %v, want refused %v", tt.name, err, tt.refused)
		}
		if b.charged[WorkScan] != tt.charged {
			t.Errorf("%s: charged %d, want %d", tt.name, b.charged[WorkScan], tt.charged)
		}
	}
}
