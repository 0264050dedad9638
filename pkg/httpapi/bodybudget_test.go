package httpapi

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolsearch/toolsearch/pkg/config"
	"github.com/toolsearch/toolsearch/pkg/embedding"
	"github.com/toolsearch/toolsearch/pkg/mcpserver"
	"github.com/toolsearch/toolsearch/pkg/search"
)

// TestBodyBudget: bodies being read hold the budget by their declared
// size (their route's bound when chunked) until answered; a request the
// budget cannot hold is answered 503 busy at once, with Retry-After,
// and one that fits is served beside them. Without the budget, slow
// clients holding back their bodies' last bytes held as much memory as
// they liked.
func TestBodyBudget(t *testing.T) {
	reg := prometheus.NewRegistry()
	svc := search.New(search.Config{Embedder: embedding.NewLocal(64), Registerer: reg, Version: "test"})
	if _, err := svc.Build(t.Context(), testSetup(t, false)); err != nil {
		t.Fatal(err)
	}
	const budget = 100 << 10
	ts := httptest.NewServer(NewServer(svc, Options{Registerer: reg, BodyBudgetBytes: budget}))
	defer ts.Close()
	waitFor := func(want float64) { t.Helper(); waitBudget(t, reg, want) }
	// A slow client: headers and the first bytes of a 60,000-byte body.
	slow, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close() // before ts.Close, which waits for its request
	fmt.Fprintf(slow, "POST /mcp/tool-search HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n\r\n{\"query\":\"list issues\"", ts.Listener.Addr())
	waitFor(60000)

	post := func(body string, chunked bool) *http.Response {
		t.Helper()
		var r io.Reader = strings.NewReader(body)
		if chunked {
			r = io.MultiReader(r) // no length: sent chunked
		}
		resp, err := http.Post(ts.URL+"/mcp/tool-search", "application/json", r)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	big := `{"query":"list issues"` + strings.Repeat(" ", 45000) + `}` // JSON's own padding
	for _, tt := range []struct {
		name    string
		body    string
		chunked bool
		want    int
	}{
		{"a small body fits beside it", `{"query":"list issues"}`, false, 200},
		{"a large one does not", big, false, 503},
		{"nor a chunked one, held at its route's bound", `{"query":"list issues"}`, true, 503},
	} {
		resp := post(tt.body, tt.chunked)
		if resp.StatusCode != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, resp.StatusCode, tt.want)
		}
		if tt.want == 503 && resp.Header.Get("Retry-After") != "1" {
			t.Errorf("%s: Retry-After %q, want 1", tt.name, resp.Header.Get("Retry-After"))
		}
	}
	waitFor(60000) // the answered ones gave theirs back

	// The slow client sends the rest: answered, it gives its share back.
	fmt.Fprintf(slow, "%s}", strings.Repeat(" ", 60000-len(`{"query":"list issues"`)-1))
	resp, err := http.ReadResponse(bufio.NewReader(slow), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	slow.Close()
	if resp.StatusCode != 200 {
		t.Errorf("the slow body's search: %d", resp.StatusCode)
	}
	waitFor(0)
	if resp := post(big, false); resp.StatusCode != 200 {
		t.Errorf("the large body once the budget is free: %d", resp.StatusCode)
	}
}

// The bound on /mcp's bodies the budget holds is the one the MCP
// endpoint enforces, and the least budget the config takes; the default
// budget is the config's, which the deploy tests size pods with.
func TestBodyBoundsAgree(t *testing.T) {
	for name, v := range map[string]int64{"mcpserver.MaxRequestBytes": mcpserver.MaxRequestBytes, "config.MinRequestBodyBudgetBytes": config.MinRequestBodyBudgetBytes} {
		if v != MCPMaxBodyBytes {
			t.Errorf("%s is %d, MCPMaxBodyBytes %d: they must agree", name, v, int64(MCPMaxBodyBytes))
		}
	}
	if budget := int64(DefaultBodyBudgetBytes); budget != config.DefaultRequestBodyBudgetBytes || budget < MCPMaxBodyBytes {
		t.Errorf("DefaultBodyBudgetBytes %d: config's default is %d, and it must be at least MCPMaxBodyBytes %d", budget, int64(config.DefaultRequestBodyBudgetBytes), int64(MCPMaxBodyBytes))
	}
}

// TestBodyBudgetPerCaller: one caller holds at most a share of the
// budget (a quarter, at least /mcp's bound), so slow bodies from one key
// leave room for another's; the share given back, the first is served
// again.
func TestBodyBudgetPerCaller(t *testing.T) {
	reg := prometheus.NewRegistry()
	svc := search.New(search.Config{Embedder: embedding.NewLocal(64), Registerer: reg, Version: "test"})
	if _, err := svc.Build(t.Context(), testSetup(t, true)); err != nil {
		t.Fatal(err)
	}
	const budget = 8 << 20 // a caller's share: 2 MiB
	ts := httptest.NewServer(NewServer(svc, Options{Registerer: reg, BodyBudgetBytes: budget}))
	defer ts.Close()
	// Caller "all" fills its share with slow bodies of 64 KiB each.
	const each, share = 64 << 10, budget / 4
	var slow []net.Conn
	defer func() {
		for _, c := range slow {
			c.Close()
		}
	}()
	for range share / each {
		c, err := net.Dial("tcp", ts.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		slow = append(slow, c)
		fmt.Fprintf(c, "POST /mcp/tool-search HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer key-all\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{", ts.Listener.Addr(), each)
	}
	waitBudget(t, reg, share)
	search := func(key string) *http.Response {
		t.Helper()
		req, err := http.NewRequest("POST", ts.URL+"/mcp/tool-search", strings.NewReader(`{"query":"list issues"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	if resp := search("key-all"); resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("the caller at its share: %d, Retry-After %q; want 503, 1", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if resp := search("key-gh"); resp.StatusCode != 200 {
		t.Errorf("another caller beside it: %d, want 200", resp.StatusCode)
	}
	for _, c := range slow {
		c.Close() // the bodies end short: their requests end, and give their share back
	}
	slow = nil
	waitBudget(t, reg, 0)
	if resp := search("key-all"); resp.StatusCode != 200 {
		t.Errorf("the caller with its share back: %d, want 200", resp.StatusCode)
	}
}

// waitBudget polls the body budget held until it is want: the server
// changes it as it routes and ends requests, which a client does not see.
func waitBudget(t *testing.T, reg *prometheus.Registry, want float64) {
	t.Helper()
	const series = "toolsearch_http_body_budget_bytes"
	for start := time.Now(); gathered(t, reg, series) != want; time.Sleep(time.Millisecond) {
		if time.Since(start) > 10*time.Second { // a guard against hanging, not a timing
			t.Fatalf("%s is %v, never %v", series, gathered(t, reg, series), want)
		}
	}
}

// TestBodyCharged: a body costs its caller a unit of work for each whole
// BodyUnitBytes read, beyond its request's own, into debt, with or
// without a budget of bodies: a 1 MiB body's decoding is up to sixteen
// searches' work, and the body's bound alone let one key send fifty a
// second.
func TestBodyCharged(t *testing.T) {
	conversation := func(size int) string {
		pad := strings.Repeat("A", size)
		return `{"messages":[{"role":"user","content":[{"type":"text","text":"merge the approved pull request"},{"type":"image_url","image_url":{"url":"data:image/png;base64,` + pad + `"}}]}]}`
	}
	big := conversation(SearchMaxBodyBytes - 200)
	small := `{"query":"merge the approved pull request"}`
	const burst = 24
	for _, tt := range []struct {
		name   string
		budget int64
		first  string
		units  int
	}{
		{"a body of nearly 1 MiB", 0, big, len(big) / BodyUnitBytes},
		{"without a budget of bodies", -1, big, len(big) / BodyUnitBytes},
		{"a body just under a unit", 0, conversation(BodyUnitBytes - 300), 0},
		{"a small body", 0, small, 0},
		{"a body over the bound, drained", 0, conversation(2 * SearchMaxBodyBytes), SearchMaxBodyBytes / BodyUnitBytes},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.units > burst-2 {
				t.Fatalf("%d units leave no search to count", tt.units)
			}
			reg := prometheus.NewRegistry()
			svc := search.New(search.Config{Embedder: embedding.NewLocal(64), Registerer: reg, Version: "test"})
			if _, err := svc.Build(t.Context(), testSetup(t, false)); err != nil {
				t.Fatal(err)
			}
			h := NewServer(svc, Options{Registerer: reg, SearchRate: 0.001, SearchBurst: burst, BodyBudgetBytes: tt.budget})
			want := http.StatusOK
			if len(tt.first) > SearchMaxBodyBytes {
				want = http.StatusRequestEntityTooLarge
			}
			if rec := do(h, http.MethodPost, "/mcp/tool-search", "", tt.first); rec.Code != want {
				t.Fatalf("first search of %d bytes: %d %.300s", len(tt.first), rec.Code, rec.Body)
			}
			searches := 0
			for ; searches < burst; searches++ {
				if rec := do(h, http.MethodPost, "/mcp/tool-search", "", small); rec.Code != http.StatusOK {
					break
				}
			}
			if want := burst - 1 - tt.units; searches != want {
				t.Errorf("%d searches after one of %d bytes, want %d", searches, len(tt.first), want)
			}
			if got := gathered(t, reg, `toolsearch_budget_units_total{work="body"}`); got != float64(tt.units) {
				t.Errorf("body units %g, want %d", got, tt.units)
			}
		})
	}
}
