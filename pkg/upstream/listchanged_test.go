package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// How a test upstream answers its sessions' streams (a GET, or at
// 2026-07-28 subscriptions/listen).
type streamAnswer int

const (
	served  streamAnswer = iota
	refused              // 405, as by a gateway that does not pass event streams
	// cut: the first is cut after it has stayed open for longer than
	// briefStream; a GET for it again hangs (the SDK ends a session whose
	// GET is refused then), a listening stream asked for again (at
	// 2026-07-28, by a new session) is refused.
	cut
	atOnce // an event stream that ends as soon as it opens, having carried a comment
	asJSON // a JSON-RPC error, "method not found", not a stream
	// held: no answer at all, as from a proxy that holds an event
	// stream's headers until its body is done
	held
)

// TestListChangedHeard checks that status says whether an upstream's
// tool changes are heard, and that one whose are not is listed at the
// shorter refresh unless the operator set one: behind a gateway that
// refuses the GET stream, a tool added upstream showed only at the
// 5-minute refresh, and status did not say why. A stream that cannot be
// held open costs at most two sessions more: one that ended at once, or
// a listening request answered with an error, had toolsearch make a
// session (and list every tool) one to two times a second.
func TestListChangedHeard(t *testing.T) {
	const unheard = 100 * time.Millisecond
	for _, p := range protocols {
		for _, tt := range []struct {
			name        string
			streams     streamAnswer
			unoffered   bool // the upstream declares no tools.listChanged
			refresh     time.Duration
			want        string
			moreListing bool  // listed again before the refresh
			mostStreams int64 // asked for in all; 0: not counted
		}{
			{name: "heard", want: ListChangedHeard},
			{name: "no stream", streams: refused, want: ListChangedNoStream, moreListing: true},
			{name: "no stream, refresh set", streams: refused, refresh: time.Hour, want: ListChangedNoStream},
			{name: "stream cut", streams: cut, want: ListChangedNoStream, moreListing: true},
			// The cap, and one the SDK asks for before its session ends.
			{name: "stream ends at once", streams: atOnce, want: ListChangedNoStream, mostStreams: briefStreams + 2},
			{name: "stream answered with an error", streams: asJSON, want: ListChangedNoStream, mostStreams: 1},
			{name: "stream not answered", streams: held, want: ListChangedNoStream, moreListing: true},
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
					var body []byte
					if r.Method == http.MethodPost {
						body, _ = io.ReadAll(r.Body)
						if bytes.Contains(body, []byte(`"method":"tools/list"`)) {
							lists.Add(1)
						}
						r.Body = io.NopCloser(bytes.NewReader(body))
					}
					if r.Method == http.MethodGet || r.Header.Get("Mcp-Method") == "subscriptions/listen" {
						n := streams.Add(1)
						switch {
						case tt.streams == cut && n == 1:
							ctx, cancel := context.WithTimeout(r.Context(), briefStream*3/2)
							defer cancel()
							r = r.WithContext(ctx)
						case tt.streams == held || (tt.streams == cut && r.Method == http.MethodGet):
							<-r.Context().Done()
							return
						case tt.streams == refused || tt.streams == cut:
							w.Header().Set("Allow", "POST, DELETE")
							http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
							return
						case tt.streams == atOnce:
							w.Header().Set("Content-Type", "text/event-stream")
							io.WriteString(w, ": at once\n\n")
							return
						case tt.streams == asJSON:
							var req struct{ ID json.RawMessage }
							if json.Unmarshal(body, &req) != nil || req.ID == nil {
								req.ID = json.RawMessage("null")
							}
							w.Header().Set("Content-Type", "application/json")
							w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"error":{"code":-32601,"message":"Method not found"}}`))
							return
						}
					}
					serve.ServeHTTP(w, r)
				})
				m := startWith(t, []Config{{Name: "u", URL: f.http.URL, Refresh: tt.refresh, Health: time.Hour}}, Options{unheard: unheard})
				waitFor(t, "list_changed "+tt.want, func() bool { return m.Status()[0].ListChanged == tt.want })
				if tt.mostStreams > 0 {
					// Long enough for the SDK's own asks (a second or two
					// apart) to pass the bound if nothing stopped them.
					const watch = 8 * time.Second
					time.Sleep(watch)
					if n := streams.Load(); n > tt.mostStreams {
						t.Errorf("the stream asked for %d times in %v; want at most %d", n, watch, tt.mostStreams)
					}
				}
				if tt.moreListing {
					f.add("brand_new", "A tool added at runtime.")
					waitFor(t, "the added tool, listed at the shorter refresh", func() bool { return slices.Contains(names(m), "u/brand_new") })
					return
				}
				if tt.refresh == 0 && tt.want != ListChangedHeard {
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
