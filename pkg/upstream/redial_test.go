package upstream

import (
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestCallWaitsOutAQuickRestart: a call made while its upstream is
// restarting (its port refuses connections for a moment) waits for it,
// within a bound, rather than failing: a refused connection carried
// nothing, so nothing ran. It was lost, and its failure and the listing
// it asked for opened the breaker (two failures, the default), so the
// calls of the next second were refused too.
func TestCallWaitsOutAQuickRestart(t *testing.T) {
	f := newFake(t, 0, 1)
	// Each request its own connection: a pooled one the test closes under
	// the client races the call (a real process's death resets them at
	// once; here the client may not have read the close yet).
	f.http.Config.SetKeepAlivesEnabled(false)
	addr := f.http.Listener.Addr().String()
	m := start(t, []Config{{Name: "u", URL: f.http.URL, Refresh: time.Hour, Health: time.Hour}}, nil)
	if _, err := m.Call(t.Context(), "u", "tool_0", nil, CallOptions{}); err != nil {
		t.Fatal(err)
	}
	// The process dies: its port refuses, its sessions are gone.
	f.http.Listener.Close()
	f.http.CloseClientConnections()
	f.restart()
	back := make(chan *httptest.Server, 1)
	time.AfterFunc(300*time.Millisecond, func() {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Error(err)
			back <- nil
			return
		}
		s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { f.handler.Load().ServeHTTP(w, r) }))
		s.Config.SetKeepAlivesEnabled(false)
		s.Listener.Close()
		s.Listener = ln
		s.Start()
		back <- s
	})
	t.Cleanup(func() {
		if s := <-back; s != nil {
			s.CloseClientConnections() // the session stream: the manager stops after this
			s.Close()
		}
	})
	res, err := m.Call(t.Context(), "u", "tool_0", nil, CallOptions{})
	if err != nil || res.IsError {
		t.Fatalf("a call while the upstream restarted: %v, %v", res, err)
	}
	if st := m.Status()[0]; st.Breaker != Closed || st.Failures != 0 || st.CallsFailing {
		t.Errorf("status after the restart: %+v; want nothing counted against the upstream", st)
	}
	if n := metric(t, m, "toolsearch_upstream_redialed_calls_total", map[string]string{"upstream": "u"}); n != 1 {
		t.Errorf("toolsearch_upstream_redialed_calls_total = %v, want 1", n)
	}
}
