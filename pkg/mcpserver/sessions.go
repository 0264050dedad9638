package mcpserver

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolsearch/toolsearch/pkg/access"
	"github.com/toolsearch/toolsearch/pkg/config"
)

// Session limits' defaults. A session costs a few kilobytes and lives
// until it idles out, so without a cap 20,000 initialize calls from one key
// held 280 MB for good.
const (
	DefaultSessionIdle   = config.DefaultSessionIdle
	DefaultMaxSessions   = 1000
	DefaultMaxKeySession = 100
)

// SessionLimits bound the MCP sessions held in memory. Zero values take
// the defaults above.
type SessionLimits struct {
	// Idle closes a session that has had no request for this long and has
	// no GET stream open: a client that only listens keeps its session.
	// (The SDK's own timeout counts only POSTs; the TypeScript SDK does
	// not re-initialise a session closed under it, so its calls then fail
	// with "session not found" and list_changed stops reaching it.)
	Idle time.Duration
	// Max is the most sessions in total, MaxPerKey the most per API key,
	// or without keys per client address (an IPv6 one's /64): one
	// anonymous client holding its sessions busy must not shut the others
	// out. At a limit, the session idle longest is closed to admit the new
	// one; when none is idle, the new one is refused with 503.
	Max       int
	MaxPerKey int
}

const sessionHeader = "Mcp-Session-Id"

// sessions tracks the SDK's sessions by caller, so that they can be
// capped and bound to the key that opened them (a session id presented
// with another key is unknown, as the SDK's own check would make it with
// OAuth token info, which bearer API keys do not carry).
type sessions struct {
	lim SessionLimits
	srv *mcp.Server
	now func() time.Time

	// listing names what a key's tools/list draws on (Server.listing).
	listing func(key string) string
	// searchDone is told of a session's last search when a newer one
	// replaces it or the session ends: what the session used after it is
	// then all it teaches (learning from use).
	searchDone func(searchID string)

	// live lists the ids of the SDK's open sessions (srv's; a test's
	// stand-in).
	live func() map[string]bool

	mu      sync.Mutex
	byID    map[string]*sessionEntry
	byOwner map[owner]int
	added   uint64 // sessions added so far: each entry's seq
}

// owner is whom a session counts against: its key, or without one its
// opener's address.
type owner struct{ key, addr string }

func ownerOf(key, addr string) owner {
	if key != "" {
		return owner{key: key}
	}
	return owner{addr: addr}
}

type sessionEntry struct {
	seq       uint64 // its place in the order sessions were added
	key       string
	addr      string // an anonymous opener's client address: whose evidence it teaches
	search    string // the last search_tools answer's search id, for learning
	heard     string // the key's listing when the session last heard of a change, or opened
	lastUsed  time.Time
	busy      int // requests in flight, an open GET stream included
	listening int // open GET streams
}

func newSessions(srv *mcp.Server, lim SessionLimits) *sessions {
	if lim.Idle <= 0 {
		lim.Idle = DefaultSessionIdle
	}
	if lim.Max <= 0 {
		lim.Max = DefaultMaxSessions
	}
	if lim.MaxPerKey <= 0 {
		lim.MaxPerKey = DefaultMaxKeySession
	}
	s := &sessions{lim: lim, srv: srv, now: time.Now, byID: map[string]*sessionEntry{}, byOwner: map[owner]int{}}
	s.live = func() map[string]bool {
		live := map[string]bool{}
		for ss := range srv.Sessions() {
			live[ss.ID()] = true
		}
		return live
	}
	return s
}

// register has reg export the sessions held and those listening (a GET
// stream open), beside mcp_max_sessions: how near the cap a pod runs, and
// how its clients spread over the replicas.
func (s *sessions) register(reg prometheus.Registerer) {
	if reg == nil {
		return
	}
	count := func(listening bool) func() float64 {
		return func() float64 {
			s.mu.Lock()
			defer s.mu.Unlock()
			n := 0
			for _, e := range s.byID {
				if !listening || e.listening > 0 {
					n++
				}
			}
			return float64(n)
		}
	}
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "toolsearch_mcp_sessions", Help: "MCP sessions held (limits.mcp_max_sessions bounds them)."}, count(false)),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "toolsearch_mcp_sessions_listening", Help: "MCP sessions with a GET stream open."}, count(true)),
	)
}

// serve runs next for one HTTP request of caller key, admitting a new
// session (an initialize without a session id) or checking an existing
// one. env is a POST's message, zero for GET and DELETE.
func (s *sessions) serve(w http.ResponseWriter, r *http.Request, key string, env envelope, next http.Handler) {
	id := r.Header.Get(sessionHeader)
	if id == "" {
		switch {
		case r.Method != http.MethodPost:
			writeRPCError(w, r, http.StatusBadRequest, nil, jsonrpc.CodeInvalidRequest, "no Mcp-Session-Id: send initialize first, then its session id with every request")
			return
		case env.method != "initialize":
			writeRPCError(w, r, http.StatusBadRequest, env.id, jsonrpc.CodeInvalidRequest, "no Mcp-Session-Id: send initialize first, then its session id with every request")
			return
		}
		addr := access.CallerFrom(r.Context()).Address
		if !s.admit(ownerOf(key, addr)) {
			w.Header().Set("Retry-After", "5")
			writeRPCError(w, r, http.StatusServiceUnavailable, env.id, codeServerBusy, "too many MCP sessions in use: close one (DELETE) or retry later")
			return
		}
		// The session is registered as its id goes out, before the client
		// can read it and send its next request, not after the handler
		// returns: that request would otherwise race the registration.
		aw := &admitWriter{ResponseWriter: w, register: func(h http.Header) {
			if nid := h.Get(sessionHeader); nid != "" {
				s.add(nid, key, addr)
			}
		}}
		next.ServeHTTP(aw, r)
		aw.admit()
		return
	}
	if env.method == "initialize" {
		writeRPCError(w, r, http.StatusBadRequest, env.id, jsonrpc.CodeInvalidRequest, "this session is already initialized: initialize without Mcp-Session-Id opens a new one")
		return
	}
	get := r.Method == http.MethodGet
	if !s.enter(id, key, get) {
		writeRPCError(w, r, http.StatusNotFound, env.id, codeSessionNotFound, "session not found: it was closed or never existed; initialize a new one")
		return
	}
	defer s.leave(id, get)
	next.ServeHTTP(w, r)
	if r.Method == http.MethodDelete {
		s.forget(id)
	}
}

// JSON-RPC codes of the transport's own errors, as the TypeScript SDK
// uses them: a server-defined range, not a protocol error's.
const (
	codeServerBusy      = -32000
	codeSessionNotFound = -32001
)

// listening reports whether session id has a GET stream open.
func (s *sessions) listening(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.byID[id]
	return e != nil && e.listening > 0
}

// run closes sessions idle longer than the limit (nothing in flight, no
// GET stream, no request for Idle) until ctx is done.
func (s *sessions) run(ctx context.Context) {
	t := time.NewTicker(min(max(s.lim.Idle/4, time.Second), time.Minute))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.reap(s.now())
		}
	}
}

func (s *sessions) reap(now time.Time) {
	s.reconcile()
	s.mu.Lock()
	var idle []string
	for id, e := range s.byID {
		if e.busy == 0 && now.Sub(e.lastUsed) > s.lim.Idle {
			idle = append(idle, id)
			s.dropLocked(id)
		}
	}
	s.mu.Unlock()
	s.close(idle...)
}

// close closes the SDK's sessions of ids. Close waits on the session's
// connection, so it is never called under mu.
func (s *sessions) close(ids ...string) {
	if len(ids) == 0 {
		return
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	for ss := range s.srv.Sessions() {
		if want[ss.ID()] {
			_ = ss.Close()
		}
	}
}

// admit makes room for one more session of o, closing the sessions idle
// longest as the limits require. It reports false when every session that
// would have to go is busy.
func (s *sessions) admit(o owner) bool {
	s.reconcile()
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.byOwner[o] >= s.lim.MaxPerKey {
		if !s.evictLocked(&o) {
			return false
		}
	}
	for len(s.byID) >= s.lim.Max {
		if !s.evictLocked(nil) {
			return false
		}
	}
	return true
}

// evictLocked closes the idle session of o (anyone's when nil) that was
// used longest ago.
func (s *sessions) evictLocked(o *owner) bool {
	var oldest string
	var at time.Time
	for id, e := range s.byID {
		if e.busy > 0 || (o != nil && ownerOf(e.key, e.addr) != *o) {
			continue
		}
		if oldest == "" || e.lastUsed.Before(at) {
			oldest, at = id, e.lastUsed
		}
	}
	if oldest == "" {
		return false
	}
	s.dropLocked(oldest)
	go s.close(oldest) // under mu here: Close must not be
	return true
}

// reconcile forgets sessions the SDK has closed on its own (idle timeout,
// a broken connection). Only sessions added before the SDK's list was
// read can be missing from it: one added while it was read (another
// caller's initialize, answered meanwhile) is live, and forgetting it
// answered that caller's next request "session not found".
func (s *sessions) reconcile() {
	s.mu.Lock()
	listed := s.added
	s.mu.Unlock()
	live := s.live()
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, e := range s.byID {
		if e.seq <= listed && !live[id] {
			s.dropLocked(id)
		}
	}
}

func (s *sessions) add(id, key, addr string) {
	var heard string
	if s.listing != nil {
		heard = s.listing(key) // outside mu: it reads the service
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.byID[id]; !ok {
		s.added++
		s.byID[id] = &sessionEntry{seq: s.added, key: key, addr: addr, heard: heard, lastUsed: s.now()}
		s.byOwner[ownerOf(key, addr)]++
	}
}

// announce reports whether session id's key's listing changed since the
// session last heard, and records that it hears now.
func (s *sessions) announce(id string) bool {
	s.mu.Lock()
	e := s.byID[id]
	if e == nil {
		s.mu.Unlock()
		return false
	}
	key := e.key
	s.mu.Unlock()
	now := s.listing(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.heard == now {
		return false
	}
	e.heard = now
	return true
}

// callerOf is who opened session id: its key, or an anonymous opener's
// address.
func (s *sessions) callerOf(id string) (access.Caller, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.byID[id]; e != nil {
		return access.Caller{Key: e.key, Address: e.addr}, true
	}
	return access.Caller{}, false
}

// searched makes searchID session id's last search; the one it replaces
// is done.
func (s *sessions) searched(id, searchID string) {
	s.mu.Lock()
	var prev string
	if e := s.byID[id]; e != nil {
		prev, e.search = e.search, searchID
	}
	s.mu.Unlock()
	if prev != "" && s.searchDone != nil {
		s.searchDone(prev)
	}
}

// lastSearch is session id's last search id ("" for none).
func (s *sessions) lastSearch(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.byID[id]; e != nil {
		return e.search
	}
	return ""
}

// enter marks a request (get: a GET stream) on session id; false when id
// is unknown or was opened with another key.
func (s *sessions) enter(id, key string, get bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.byID[id]
	if e == nil || e.key != key {
		return false
	}
	e.busy++
	if get {
		e.listening++
	}
	e.lastUsed = s.now()
	return true
}

func (s *sessions) leave(id string, get bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.byID[id]; e != nil {
		e.busy--
		if get {
			e.listening--
		}
		e.lastUsed = s.now()
	}
}

func (s *sessions) forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropLocked(id)
}

func (s *sessions) dropLocked(id string) {
	if e := s.byID[id]; e != nil {
		if e.search != "" && s.searchDone != nil {
			s.searchDone(e.search)
		}
		delete(s.byID, id)
		o := ownerOf(e.key, e.addr)
		if s.byOwner[o]--; s.byOwner[o] <= 0 {
			delete(s.byOwner, o)
		}
	}
}

// admitWriter calls register with the response headers once, just before
// they are written.
type admitWriter struct {
	http.ResponseWriter
	register func(http.Header)
	done     bool
}

func (w *admitWriter) admit() {
	if !w.done {
		w.done = true
		w.register(w.Header())
	}
}

func (w *admitWriter) WriteHeader(code int) {
	w.admit()
	w.ResponseWriter.WriteHeader(code)
}

func (w *admitWriter) Write(b []byte) (int, error) {
	w.admit()
	return w.ResponseWriter.Write(b)
}

func (w *admitWriter) Flush() {
	w.admit()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *admitWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
