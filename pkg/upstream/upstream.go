// Package upstream discovers tools live from upstream MCP servers: it keeps
// a session to each, lists their tools (every page) at start-up, on every
// refresh interval and promptly on notifications/tools/list_changed,
// protects itself with a circuit breaker per upstream, keeps an unreachable
// upstream's last good tools (marked stale), and forwards tool calls.
package upstream

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/redact"
)

// Defaults for Config's zero values.
const (
	DefaultRefresh         = 5 * time.Minute
	DefaultBreakerFailures = 2
	DefaultBreakerCooldown = 60 * time.Second
	DefaultTimeout         = 15 * time.Second
)

// Config describes one upstream MCP server.
type Config struct {
	Name    string
	URL     string            // its Streamable HTTP endpoint
	Headers map[string]string // sent on every request (tokens); never reported
	Refresh time.Duration     // DefaultRefresh when 0
	// BreakerFailures consecutive failures open the breaker, which stays
	// open for BreakerCooldown, then lets one attempt through (half-open).
	BreakerFailures int
	BreakerCooldown time.Duration
	Timeout         time.Duration // of one connect, list or call; DefaultTimeout when 0
}

// Breaker states.
const (
	Closed   = "closed"
	Open     = "open"
	HalfOpen = "half-open"
)

// Status is one upstream's health, without secrets.
type Status struct {
	Name        string     `json:"name"`
	URL         string     `json:"url"`
	State       string     `json:"state"` // connected, connecting, failing
	Tools       int        `json:"tools"`
	Stale       bool       `json:"stale"` // the tools are from the last good listing, not the current one
	LastSuccess *time.Time `json:"last_success"`
	LastError   string     `json:"last_error"`
	LastErrorAt *time.Time `json:"last_error_at"`
	Breaker     string     `json:"breaker"`
	Failures    int        `json:"consecutive_failures"`
}

// Manager runs every upstream. It is safe for concurrent use.
type Manager struct {
	ups      []*upstream
	byName   map[string]*upstream
	onChange func()
	logger   *slog.Logger
	now      func() time.Time
}

type upstream struct {
	cfg     Config
	secrets []string // what errors must not show: header values, URL user info and query
	client  *mcp.Client
	httpc   *http.Client
	changed chan struct{} // list_changed arrived
	first   chan struct{} // closed after the first attempt, good or bad

	mu          sync.Mutex
	session     *mcp.ClientSession
	tools       []catalog.Tool
	hash        [32]byte
	state       string
	stale       bool
	lastSuccess time.Time
	lastErr     string
	lastErrAt   time.Time
	failures    int
	openUntil   time.Time
	halfOpen    bool
	// counts for /metrics: tools/list attempts and forwarded calls by result
	lists map[string]uint64 // ok, error
	calls map[string]uint64 // ok, error, unavailable
}

// count adds one to a metrics counter under u.mu.
func (u *upstream) count(m map[string]uint64, result string) {
	u.mu.Lock()
	m[result]++
	u.mu.Unlock()
}

// New returns a manager for cfgs. onChange is called, from the manager's
// goroutines, whenever the set of upstream tools changes.
func New(cfgs []Config, onChange func(), logger *slog.Logger) (*Manager, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m := &Manager{byName: map[string]*upstream{}, onChange: onChange, logger: logger.With("component", "upstream"), now: time.Now}
	for _, c := range cfgs {
		switch {
		case c.Name == "":
			return nil, errors.New("upstream: name is required")
		case m.byName[c.Name] != nil:
			return nil, fmt.Errorf("upstream %q: name repeated", c.Name)
		case !strings.HasPrefix(c.URL, "http://") && !strings.HasPrefix(c.URL, "https://"):
			return nil, fmt.Errorf("upstream %q: url must be http:// or https://, got %q", c.Name, redact.URL(c.URL))
		case c.BreakerFailures < 0:
			return nil, fmt.Errorf("upstream %q: breaker_failures must not be negative", c.Name)
		}
		if c.Refresh <= 0 {
			c.Refresh = DefaultRefresh
		}
		if c.BreakerFailures <= 0 {
			c.BreakerFailures = DefaultBreakerFailures
		}
		if c.BreakerCooldown <= 0 {
			c.BreakerCooldown = DefaultBreakerCooldown
		}
		if c.Timeout <= 0 {
			c.Timeout = DefaultTimeout
		}
		secrets := redact.URLSecrets(c.URL)
		for _, v := range c.Headers {
			secrets = append(secrets, v)
		}
		u := &upstream{cfg: c, secrets: secrets, changed: make(chan struct{}, 1), first: make(chan struct{}), state: "connecting", lists: map[string]uint64{}, calls: map[string]uint64{},
			httpc: &http.Client{Transport: headerTransport{headers: c.Headers, base: http.DefaultTransport}}}
		u.client = mcp.NewClient(&mcp.Implementation{Name: "toolsearch", Version: "1"}, &mcp.ClientOptions{
			ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
				select {
				case u.changed <- struct{}{}:
				default: // a re-list is already due
				}
			},
		})
		m.ups = append(m.ups, u)
		m.byName[c.Name] = u
	}
	return m, nil
}

// headerTransport adds the upstream's configured headers to each request.
type headerTransport struct {
	headers map[string]string
	base    http.RoundTripper
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range t.headers {
			r.Header.Set(k, v)
		}
	}
	return t.base.RoundTrip(r)
}

// Run keeps every upstream's tools current until ctx is done.
func (m *Manager) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	for _, u := range m.ups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.loop(ctx, u)
		}()
	}
	wg.Wait()
	return ctx.Err()
}

// WaitFirst blocks until every upstream has made its first attempt, or ctx
// is done: start-up indexes what is reachable then, and the rest joins
// when it comes up.
func (m *Manager) WaitFirst(ctx context.Context) {
	for _, u := range m.ups {
		select {
		case <-u.first:
		case <-ctx.Done():
			return
		}
	}
}

func (m *Manager) loop(ctx context.Context, u *upstream) {
	defer u.closeSession()
	firstDone := false
	for {
		if wait := u.breakerWait(m.now()); wait > 0 {
			if !sleep(ctx, wait) {
				return
			}
			u.mu.Lock()
			u.halfOpen = true
			u.mu.Unlock()
		}
		changed, err := m.refresh(ctx, u)
		if ctx.Err() != nil {
			return
		}
		m.record(u, err)
		u.count(u.lists, result(err))
		if !firstDone {
			firstDone = true
			close(u.first)
		}
		if changed && m.onChange != nil {
			m.onChange()
		}
		next := u.cfg.Refresh
		if err != nil {
			next = min(next, 2*time.Second) // the breaker decides when to stop trying
		}
		t := time.NewTimer(next)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-u.changed:
			t.Stop()
		case <-t.C:
		}
	}
}

// refresh lists u's tools through every page and reports whether they
// changed.
func (m *Manager) refresh(ctx context.Context, u *upstream) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, u.cfg.Timeout)
	defer cancel()
	cs, err := u.connect(ctx)
	if err != nil {
		return false, err
	}
	var tools []catalog.Tool
	for t, err := range cs.Tools(ctx, nil) { // follows nextCursor to the last page
		if err != nil {
			u.closeSession()
			return false, fmt.Errorf("tools/list: %w", err)
		}
		tools = append(tools, convert(u.cfg.Name, t))
	}
	h := hashTools(tools)
	u.mu.Lock()
	defer u.mu.Unlock()
	changed := h != u.hash
	u.tools, u.hash, u.stale = tools, h, false
	return changed, nil
}

func (u *upstream) connect(ctx context.Context) (*mcp.ClientSession, error) {
	u.mu.Lock()
	cs := u.session
	u.mu.Unlock()
	if cs != nil {
		return cs, nil
	}
	cs, err := u.client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: u.cfg.URL, HTTPClient: u.httpc, MaxRetries: -1}, nil)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	u.mu.Lock()
	u.session = cs
	u.mu.Unlock()
	return cs, nil
}

func (u *upstream) closeSession() {
	u.mu.Lock()
	cs := u.session
	u.session = nil
	u.mu.Unlock()
	if cs != nil {
		_ = cs.Close()
	}
}

// record updates health and the breaker after an attempt.
func (m *Manager) record(u *upstream, err error) {
	now := m.now()
	u.mu.Lock()
	defer u.mu.Unlock()
	if err == nil {
		u.state, u.failures, u.lastSuccess, u.halfOpen, u.openUntil = "connected", 0, now, false, time.Time{}
		return
	}
	msg := u.scrub(err.Error())
	u.state, u.lastErr, u.lastErrAt = "failing", msg, now
	u.failures++
	u.stale = len(u.tools) > 0 // keep the last good tools, marked stale
	if u.halfOpen || u.failures >= u.cfg.BreakerFailures {
		u.openUntil, u.halfOpen = now.Add(u.cfg.BreakerCooldown), false
		m.logger.Warn("upstream breaker open", "upstream", u.cfg.Name, "failures", u.failures, "err", msg)
	}
}

func (u *upstream) breakerWait(now time.Time) time.Duration {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.openUntil.After(now) {
		return u.openUntil.Sub(now)
	}
	return 0
}

func (u *upstream) breaker(now time.Time) string {
	switch {
	case u.openUntil.After(now):
		return Open
	case u.halfOpen || !u.openUntil.IsZero():
		return HalfOpen
	}
	return Closed
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Parts returns each upstream's current tools as lenient catalog parts
// (invalid upstream tools are skipped and reported, not fatal).
func (m *Manager) Parts() []catalog.Part {
	var parts []catalog.Part
	for _, u := range m.ups {
		u.mu.Lock()
		tools := u.tools
		u.mu.Unlock()
		if len(tools) == 0 {
			continue
		}
		parts = append(parts, catalog.Part{Source: "upstream:" + u.cfg.Name, Lenient: true,
			Servers: []catalog.Server{{Name: u.cfg.Name, Tools: tools}}})
	}
	return parts
}

// Has reports whether server is an upstream's name.
func (m *Manager) Has(server string) bool { return m.byName[server] != nil }

// Status reports every upstream's health.
func (m *Manager) Status() []Status {
	now := m.now()
	out := make([]Status, 0, len(m.ups))
	for _, u := range m.ups {
		u.mu.Lock()
		st := Status{Name: u.cfg.Name, URL: redact.URL(u.cfg.URL), State: u.state, Tools: len(u.tools), Stale: u.stale,
			LastSuccess: timePtr(u.lastSuccess), LastError: u.lastErr, LastErrorAt: timePtr(u.lastErrAt),
			Breaker: u.breaker(now), Failures: u.failures}
		u.mu.Unlock()
		out = append(out, st)
	}
	return out
}

// ErrUnavailable is returned by Call when the upstream's breaker is open or
// it has no session.
var ErrUnavailable = errors.New("upstream unavailable")

// Call forwards tools/call to the upstream named server and returns its
// result unchanged (an isError result is a result, not an error).
func (m *Manager) Call(ctx context.Context, server, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
	u := m.byName[server]
	if u == nil {
		return nil, fmt.Errorf("no upstream %q", server)
	}
	res, err := m.call(ctx, u, tool, args)
	u.count(u.calls, result(err))
	return res, err
}

// result is an attempt's label in the list and call counters.
func result(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, ErrUnavailable):
		return "unavailable"
	}
	return "error"
}

func (m *Manager) call(ctx context.Context, u *upstream, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
	server := u.cfg.Name
	if u.breakerWait(m.now()) > 0 {
		return nil, fmt.Errorf("%w: %s: circuit breaker open after repeated failures", ErrUnavailable, server)
	}
	ctx, cancel := context.WithTimeout(ctx, u.cfg.Timeout)
	defer cancel()
	cs, err := u.connect(ctx)
	if err != nil {
		m.record(u, err)
		return nil, fmt.Errorf("%w: %s: %s", ErrUnavailable, server, u.scrub(err.Error()))
	}
	var arguments any
	if len(args) > 0 {
		arguments = args
	}
	params := &mcp.CallToolParams{Name: tool, Arguments: arguments}
	res, err := cs.CallTool(ctx, params)
	if err != nil && sessionGone(err) {
		// The upstream restarted or dropped the session: the call never
		// ran there, so it is safe to reconnect and send it once more.
		m.record(u, err)
		u.dropSession(cs)
		if cs, err = u.connect(ctx); err != nil {
			m.record(u, err)
			return nil, fmt.Errorf("%w: %s: %s", ErrUnavailable, server, u.scrub(err.Error()))
		}
		res, err = cs.CallTool(ctx, params)
	}
	var rpcErr *jsonrpc.Error
	switch {
	case err == nil:
		m.record(u, nil)
	case errors.As(err, &rpcErr) && rpcErr.Code != codeRejected:
		// The upstream answered: a protocol error is its verdict, not a
		// failure of the connection.
	default:
		// A transport failure: counted by the breaker, and shown in status.
		// The call may have reached the upstream, so it is not retried.
		m.record(u, err)
		u.dropSession(cs)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: tools/call %s: %s", server, tool, u.scrub(err.Error()))
	}
	return res, nil
}

// codeRejected is the code the SDK's client transport gives a request it
// could not deliver (an HTTP error, a write to a closed stream): a
// transport failure dressed as a JSON-RPC error (jsonrpc2.ErrRejected,
// internal to the SDK).
const codeRejected = -32005

// sessionGone reports whether err says the session no longer exists on
// either side, before the request was handled.
func sessionGone(err error) bool {
	return errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, mcp.ErrSessionMissing)
}

// dropSession closes cs if it is still u's session, so the next call
// connects afresh (and a concurrent caller's new session is kept).
func (u *upstream) dropSession(cs *mcp.ClientSession) {
	u.mu.Lock()
	if u.session != cs {
		u.mu.Unlock()
		return
	}
	u.session = nil
	u.mu.Unlock()
	_ = cs.Close()
}

// convert turns an MCP tool into a catalog tool of server. Its schemas
// arrive decoded from JSON, so they always re-encode.
func convert(server string, t *mcp.Tool) catalog.Tool {
	marshal := func(v any) json.RawMessage {
		b, err := json.Marshal(v)
		if err != nil || string(b) == "null" {
			return nil
		}
		return b
	}
	ct := catalog.Tool{Server: server, Name: t.Name, Title: t.Title, Description: t.Description,
		InputSchema: marshal(t.InputSchema), OutputSchema: marshal(t.OutputSchema)}
	if t.Annotations != nil {
		ct.Annotations = marshal(t.Annotations)
	}
	return ct
}

func hashTools(tools []catalog.Tool) [32]byte {
	h := sha256.New()
	enc := json.NewEncoder(h)
	for _, t := range tools {
		_ = enc.Encode(t)
	}
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

// scrub removes what may be secret from an error message.
func (u *upstream) scrub(msg string) string { return redact.Text(msg, u.secrets...) }

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
