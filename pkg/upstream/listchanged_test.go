package upstream

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestListChangedHeard checks that status says whether an upstream's tool
// changes are heard, and that one whose are not is listed at the shorter
// refresh unless the operator set one: behind a gateway that refuses the
// GET stream, a tool added upstream showed only at the 5-minute refresh,
// and status did not say why.
func TestListChangedHeard(t *testing.T) {
	const unheard = 100 * time.Millisecond
	for _, p := range protocols {
		for _, tt := range []struct {
			name   string
			refuse bool // the session's stream is answered 405, as by a gateway that does not pass it
			// cut: its first stream is cut after a moment; a GET for it
			// again hangs (the SDK ends a session whose GET is refused
			// then), a listening stream asked for again (2026-07-28:
			// a new session) is refused.
			cut         bool
			unoffered   bool // the upstream declares no tools.listChanged
			refresh     time.Duration
			want        string
			moreListing bool // listed again before the refresh
		}{
			{name: "heard", want: ListChangedHeard},
			{name: "no stream", refuse: true, want: ListChangedNoStream, moreListing: true},
			{name: "no stream, refresh set", refuse: true, refresh: time.Hour, want: ListChangedNoStream},
			{name: "stream cut", cut: true, want: ListChangedNoStream, moreListing: true},
			{name: "not offered", unoffered: true, want: ListChangedNotOffered, moreListing: true},
		} {
			t.Run(p.name+"/"+tt.name, func(t *testing.T) {
				f := p.fake(t, 0, 1)
				if tt.unoffered {
					f.srv = mcp.NewServer(&mcp.Implementation{Name: "fake", Version: "1"},
						&mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}, Logger: slog.New(&f.errors)})
					f.add("tool_0", "Does thing number 0.")
					f.restart()
				}
				var lists, streams atomic.Int64
				serve := f.http.Config.Handler
				f.http.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.Method == http.MethodGet || r.Header.Get("Mcp-Method") == "subscriptions/listen" {
						switch n := streams.Add(1); {
						case tt.cut && n == 1:
							ctx, cancel := context.WithTimeout(r.Context(), 200*time.Millisecond)
							defer cancel()
							r = r.WithContext(ctx)
						case tt.cut && r.Method == http.MethodGet:
							<-r.Context().Done()
							return
						case tt.refuse || tt.cut:
							w.Header().Set("Allow", "POST, DELETE")
							http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
							return
						}
					}
					if r.Method == http.MethodPost {
						body, _ := io.ReadAll(r.Body)
						if bytes.Contains(body, []byte(`"method":"tools/list"`)) {
							lists.Add(1)
						}
						r.Body = io.NopCloser(bytes.NewReader(body))
					}
					serve.ServeHTTP(w, r)
				})
				m := startWith(t, []Config{{Name: "u", URL: f.http.URL, Refresh: tt.refresh, Health: time.Hour}}, Options{unheard: unheard})
				waitFor(t, "list_changed "+tt.want, func() bool { return m.Status()[0].ListChanged == tt.want })
				if tt.moreListing {
					f.add("brand_new", "A tool added at runtime.")
					waitFor(t, "the added tool, listed at the shorter refresh", func() bool { return slices.Contains(names(m), "u/brand_new") })
					return
				}
				// Five of the shorter refreshes: none of them is due.
				before := lists.Load()
				time.Sleep(5 * unheard)
				if n := lists.Load() - before; n != 0 {
					t.Errorf("listed %d times more within %v; want none before the refresh", n, 5*unheard)
				}
				if got := m.Status()[0].ListChanged; got != tt.want {
					t.Errorf("list_changed %q after the wait, want %q", got, tt.want)
				}
			})
		}
	}
}
