// Package upstream discovers tools live from upstream MCP servers: it keeps
// a session to each, lists their tools (every page) at start-up, on every
// refresh interval and promptly on notifications/tools/list_changed,
// protects callers with a circuit breaker per upstream, keeps an
// unreachable upstream's last good tools (marked stale), and forwards tool
// calls with their progress and cancellation. What an upstream sends back
// is bounded as it is read (bounds.go).
package upstream

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/net/http/httpguts"
	"golang.org/x/sync/semaphore"
	"golang.org/x/time/rate"

	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/internal/breaker"
	"github.com/toolsearch/toolsearch/pkg/internal/endpoint"
	"github.com/toolsearch/toolsearch/pkg/redact"
	"github.com/toolsearch/toolsearch/pkg/tlsfiles"
)

// Defaults for Config's zero values.
const (
	DefaultRefresh = 5 * time.Minute
	// DefaultUnheardRefresh is the refresh, when none is set, of an
	// upstream whose list changes toolsearch cannot hear (ListChanged
	// other than ListChangedHeard): its tools added or changed showed only
	// at the next 5-minute refresh, and status did not say why.
	DefaultUnheardRefresh  = 30 * time.Second
	DefaultBreakerFailures = 2
	DefaultBreakerCooldown = 30 * time.Second
	DefaultTimeout         = 15 * time.Second
	DefaultHealth          = 15 * time.Second
)

// idleConn is how long a connection to an upstream is kept for the next
// request. Node's http server and uvicorn, which most MCP servers run on,
// close a connection idle for 5 s (keepAliveTimeout, timeout_keep_alive;
// Node 20 closed server-everything's 6.0 s after its answer): a request
// sent on it as the close crosses it fails unanswered (EOF, a reset), and
// the transport cannot send a tools/call again, since the upstream may
// have run it. Dropping the connection first costs a new one for
// requests more than 4 s apart.
const idleConn = 4 * time.Second

// The breaker's first open period, and how often a failing upstream is
// probed in the background (so an upstream back after an outage serves
// again within about this long, whatever the breaker's cooldown has grown
// to: a successful probe closes it), unless it refuses or asks for a wait
// (prober).
const (
	firstCooldown = time.Second
	probeInterval = time.Second
	// Listings that a change notice or a failed call asks for (those come
	// as fast as an upstream sends them) are made at most one a listGap,
	// after a burst of listBurst: a few changes in a row are each listed
	// at once.
	listGap   = time.Second
	listBurst = 3
	// pingTimeout bounds the ping that tells a slow tool from a hung
	// upstream after a call times out; healthTimeout the ping between
	// listings (or the upstream's timeout, if shorter): a busy upstream
	// may answer slowly without being gone.
	pingTimeout   = time.Second
	healthTimeout = 5 * time.Second
	// pingBytes bounds a ping's answer, which is {} in JSON-RPC.
	pingBytes = 64 << 10
)

// The breaker's states, as Status.Breaker reads them.
const (
	Closed   = breaker.Closed
	Open     = breaker.Open
	HalfOpen = breaker.HalfOpen
)

// Config describes one upstream MCP server.
type Config struct {
	Name    string
	URL     string            // its Streamable HTTP endpoint
	Headers map[string]string // sent on every request (tokens); never reported
	Refresh time.Duration     // DefaultRefresh when 0
	// BreakerFailures consecutive failed operations (a call or a listing,
	// however many transport steps each took) open the breaker. It stays
	// open for a second at first, doubling on each failed probe up to
	// BreakerCooldown, then lets one call through (half-open).
	BreakerFailures int
	BreakerCooldown time.Duration
	Timeout         time.Duration // of one connect, list or call; DefaultTimeout when 0
	// Health is how often a session between listings is pinged
	// (DefaultHealth when 0): a ping with no answer counts as a failure
	// and the upstream is listed at once, so status and the breaker learn
	// of an upstream gone quiet within about this long, not at the next
	// refresh.
	Health time.Duration
	// TLS, when set, is the upstream's own CA, client certificate or
	// server name; without it the system's CAs check an https upstream.
	TLS *TLS
}

// TLS is an upstream's own TLS settings.
type TLS = tlsfiles.Config

// Status is one upstream's health, without secrets. The tool list and the
// calls are reported apart: a listing that failed makes the tools stale,
// a call that failed makes calls failing, and neither implies the other.
type Status struct {
	Name        string     `json:"name"`
	URL         string     `json:"url"`
	State       string     `json:"state"` // connected, connecting, failing
	Tools       int        `json:"tools"`
	Stale       bool       `json:"stale"` // the tools are from the last good listing: the latest failed
	LastSuccess *time.Time `json:"last_success"`
	LastError   string     `json:"last_error"` // of the latest failed listing or connection
	LastErrorAt *time.Time `json:"last_error_at"`
	// NextRetry is when a failing upstream is listed again at the latest
	// (a failed call asks for a listing sooner); absent while it answers.
	NextRetry *time.Time `json:"next_retry_at,omitempty"`
	// CallsFailing is set while the latest call that reached a verdict on
	// the upstream's health failed in transport; a slow tool's timeout or
	// an oversized answer does not set it.
	CallsFailing    bool       `json:"calls_failing"`
	LastCallError   string     `json:"last_call_error"`
	LastCallErrorAt *time.Time `json:"last_call_error_at"`
	Breaker         string     `json:"breaker"`
	Failures        int        `json:"consecutive_failures"`
	// Clipped counts this upstream's tools whose description or schemas
	// were over the bounds and were clipped (see the catalog's warnings).
	Clipped int `json:"clipped_tools"`
	// ListChanged is how the upstream's changes to its tools reach
	// toolsearch: one of the ListChanged constants.
	ListChanged string `json:"list_changed"`
}

// How an upstream's tool changes reach toolsearch (Status.ListChanged).
// Only a heard upstream's changes show at once; the others' at the next
// refresh, DefaultUnheardRefresh when none is set.
const (
	// ListChangedHeard: the upstream offers notifications/tools/list_changed
	// and its session has the stream that carries them open.
	ListChangedHeard = "heard"
	// ListChangedNoStream: it offers them, but its session has no stream
	// to carry them: the upstream, or a proxy or gateway before it,
	// refused or failed the stream (a GET answered 405, say).
	ListChangedNoStream = "no_stream"
	// ListChangedNotOffered: its capabilities declare no tools.listChanged.
	ListChangedNotOffered = "not_offered"
	// ListChangedUnknown: there is no session to tell by (connecting,
	// failing).
	ListChangedUnknown = "unknown"
)

// Options configure a Manager. Zero values are the documented defaults.
type Options struct {
	// OnChange is called, from the manager's goroutines, whenever the set
	// of upstream tools changes.
	OnChange func()
	Logger   *slog.Logger // nil discards
	// MaxResultBytes bounds one answer read from an upstream
	// (DefaultMaxResultBytes when 0); ResultBudgetBytes the answer bytes
	// being read from all upstreams at once (DefaultResultBudgetBytes when
	// 0, and never under MaxResultBytes: it is raised to it, and the
	// raise logged, since one answer must fit).
	MaxResultBytes    int64
	ResultBudgetBytes int64
	// Instance, when set, names this process on every request to an
	// upstream (InstanceHeader), for an upstream that is this process to
	// refuse.
	Instance string

	idle time.Duration // a pooled connection's life; idleConn when 0 (tests shorten it)
	// probe and probeMax pace a failing upstream's listings: probeInterval
	// and maxProbeGap when 0 (tests shorten them).
	probe, probeMax time.Duration
	// unheard is DefaultUnheardRefresh when 0 (tests shorten it).
	unheard time.Duration
}

// InstanceHeader carries Options.Instance.
const InstanceHeader = "Toolsearch-Instance"

// Instance is Options.Instance.
func (m *Manager) Instance() string { return m.instance }

// Manager runs every upstream. It is safe for concurrent use.
type Manager struct {
	ups      []*upstream
	byName   map[string]*upstream
	onChange func()
	logger   *slog.Logger
	now      func() time.Time
	maxRead  int64
	budget   *semaphore.Weighted
	instance string
	conns    *http.Transport // every upstream's connections but those with TLS of their own
	tlsConns []*http.Transport
	// probe and probeMax: Options' (prober)
	probe, probeMax time.Duration
}

type upstream struct {
	cfg     Config
	secrets []string // what errors must not show: header values, URL user info and query
	client  *mcp.Client
	// transport is what every session's HTTP client is made of, with a
	// watch of its own listening stream (connect).
	transport transport
	tls       *tlsfiles.Client // its own TLS, when the config gives one (nil: the shared pool's)
	// maxEvent bounds one server-sent event on any of the session's
	// streams at the result limit: the GET stream, which no operation's
	// readLimit covers, took 16 MiB events otherwise (the SDK's bound), and
	// one upstream sending them held 127-156 MiB of a 256 MiB pod.
	maxEvent int
	changed  chan struct{} // list_changed arrived
	check    chan ending   // the SDK ended the session (ended)
	asked    *rate.Limiter // the listings changed asks for
	// relisten is set when a session ended under toolsearch (ended) or a
	// health ping was refused: the listing that follows waits for an
	// upstream that is restarting, as a call does, rather than count its
	// refusal as a failure.
	relisten atomic.Bool
	// unopened is set when a session was ended because its stream did
	// not open (sessionWatch.unopened), until one opens.
	unopened atomic.Bool
	// briefs counts the streams that ended at once, one after another
	// (sessionWatch.atOnce).
	briefs atomic.Int32
	first  chan struct{} // closed after the first attempt, good or bad
	// unheard is the refresh while the upstream's list changes are not
	// heard (Status.ListChanged).
	unheard time.Duration

	mu      sync.Mutex
	session *mcp.ClientSession
	watch   *sessionWatch // session's
	// protocol is the version the last session negotiated, when older than
	// the SDK's latest and the session has an id: the next connect asks
	// initialize alone with it, rather than server/discover first (one
	// request less for each reconnect). A failed connect forgets it, and
	// so does one that finds the upstream without sessions (connect).
	protocol      string
	tools         []catalog.Tool
	hash          [32]byte
	state         string
	stale         bool
	lastSuccess   time.Time
	lastErr       string
	lastErrAt     time.Time
	nextListing   time.Time // while listings fail
	callsFailing  bool
	lastCallErr   string
	lastCallErrAt time.Time
	br            breaker.Breaker
	// progress routes the upstream's progress notifications to the calls
	// that asked for them, by the token toolsearch gave each call.
	progress  map[string]func(context.Context, *mcp.ProgressNotificationParams)
	nextToken uint64
	// broken is the last session closed under the calls it carried, and
	// why: an answer over its bound (the SDK fails the connection) or the
	// upstream asking too much of it (toolsearch closes it).
	broken struct {
		cs  *mcp.ClientSession
		err error
	}
	onCalls map[*callOn]struct{} // calls in flight, for breaks
	// asks paces the requests the upstream makes of toolsearch (pings,
	// roots/list): each is answered with a POST.
	asks *rate.Limiter
	// counts for /metrics: tools/list attempts and forwarded calls by result
	lists   map[string]uint64 // listResults
	calls   map[string]uint64 // callResults
	streams *streamCounts
}

// New returns a manager for cfgs.
func New(cfgs []Config, opts Options) (*Manager, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.MaxResultBytes <= 0 {
		opts.MaxResultBytes = DefaultMaxResultBytes
	}
	if opts.ResultBudgetBytes <= 0 {
		opts.ResultBudgetBytes = DefaultResultBudgetBytes
	}
	if opts.idle <= 0 {
		opts.idle = idleConn
	}
	if opts.probe <= 0 {
		opts.probe = probeInterval
	}
	if opts.probeMax <= 0 {
		opts.probeMax = maxProbeGap
	}
	if opts.unheard <= 0 {
		opts.unheard = DefaultUnheardRefresh
	}
	conns := http.DefaultTransport.(*http.Transport).Clone()
	conns.IdleConnTimeout = opts.idle
	m := &Manager{byName: map[string]*upstream{}, onChange: opts.OnChange, logger: opts.Logger.With("component", "upstream"), now: time.Now, instance: opts.Instance,
		maxRead: opts.MaxResultBytes, budget: semaphore.NewWeighted(max(opts.ResultBudgetBytes, opts.MaxResultBytes)), conns: conns,
		probe: opts.probe, probeMax: opts.probeMax}
	if opts.ResultBudgetBytes < opts.MaxResultBytes {
		// Config refuses the two written so; this is the budget left at its
		// default under a raised answer bound, which the operator may size
		// memory by.
		m.logger.Info("the budget of upstream answers read at once is raised to one answer's bound",
			"upstream_result_budget_bytes", opts.MaxResultBytes, "upstream_max_result_bytes", opts.MaxResultBytes)
	}
	for _, c := range cfgs {
		urlErr := endpoint.Check(c.URL, false)
		switch {
		case c.Name == "":
			return nil, errors.New("upstream: name is required")
		case m.byName[c.Name] != nil:
			return nil, fmt.Errorf("upstream %q: name repeated", c.Name)
		case urlErr != nil:
			return nil, fmt.Errorf("upstream %q: url %w", c.Name, urlErr)
		case c.BreakerFailures < 0:
			return nil, fmt.Errorf("upstream %q: breaker_failures must not be negative", c.Name)
		case c.Health < 0:
			return nil, fmt.Errorf("upstream %q: health_interval must not be negative", c.Name)
		}
		if err := checkHeaders(c.Headers); err != nil {
			return nil, fmt.Errorf("upstream %q: %w", c.Name, err)
		}
		var base http.RoundTripper = m.conns
		var tlsClient *tlsfiles.Client
		if c.TLS != nil {
			var err error
			if tlsClient, err = tlsfiles.NewClient(c.URL, *c.TLS, m.logger.With("upstream", c.Name)); err != nil {
				return nil, fmt.Errorf("upstream %q: %w", c.Name, err)
			}
			t := tlsClient.Transport(m.conns)
			base = t
			m.tlsConns = append(m.tlsConns, t)
		}
		if c.Health == 0 {
			c.Health = DefaultHealth
		}
		unheard := c.Refresh // an operator's refresh stands as set
		if c.Refresh <= 0 {
			c.Refresh, unheard = DefaultRefresh, min(opts.unheard, DefaultRefresh)
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
		u := &upstream{cfg: c, secrets: secrets, maxEvent: int(m.maxRead), changed: make(chan struct{}, 1), check: make(chan ending, 1), asked: rate.NewLimiter(rate.Every(listGap), listBurst), asks: rate.NewLimiter(asksRate, asksBurst), onCalls: map[*callOn]struct{}{}, first: make(chan struct{}), state: "connecting",
			lists: map[string]uint64{}, calls: map[string]uint64{}, br: breaker.New(c.BreakerFailures, firstCooldown, c.BreakerCooldown),
			progress: map[string]func(context.Context, *mcp.ProgressNotificationParams){},
			streams:  &streamCounts{}, tls: tlsClient, unheard: unheard}
		u.transport = transport{headers: c.Headers, base: base, max: m.maxRead, instance: opts.Instance,
			streams: rate.NewLimiter(rate.Every(streamReopenEvery), streamReopenBurst), counts: u.streams}
		u.client = mcp.NewClient(clientInfo, &mcp.ClientOptions{
			ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { u.poke() },
			ProgressNotificationHandler: func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
				u.relayProgress(ctx, req.Params)
			},
			// A call answered "input required" (2026-07-28) is answered
			// so, not fulfilled and sent again: toolsearch relays no
			// elicitation or sampling and has no roots, and the SDK sent
			// a call asking for roots ten times over (needsInput).
			MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		})
		u.client.AddReceivingMiddleware(u.boundAsks)
		u.client.AddSendingMiddleware(uncached, discovers)
		m.ups = append(m.ups, u)
		m.byName[c.Name] = u
	}
	return m, nil
}

// transportHeaders are the headers the MCP transport sets itself: set from
// the config, on every request, they would undo it (Accept without
// text/event-stream, another session's id).
var transportHeaders = []string{"Accept", "Connection", "Content-Encoding", "Content-Length", "Content-Type", "Host",
	"Last-Event-Id", "Mcp-Protocol-Version", "Mcp-Session-Id", "Te", "Transfer-Encoding", "Upgrade"}

// checkHeaders refuses a configured header that every request to the
// upstream would fail on (a name that is no token, a value with a newline:
// a secret file's, say) or that the transport sets itself. It was found at
// each connection instead, the upstream failing for good, "invalid header
// field name". A value is never quoted: it is usually a token.
func checkHeaders(h map[string]string) error {
	for k, v := range h {
		switch {
		case !httpguts.ValidHeaderFieldName(k):
			return fmt.Errorf("headers: %s is not a valid header name", redact.Echo(k))
		case slices.Contains(transportHeaders, textproto.CanonicalMIMEHeaderKey(k)):
			return fmt.Errorf("headers: %s is the MCP transport's own, not the config's to set", textproto.CanonicalMIMEHeaderKey(k))
		case !httpguts.ValidHeaderFieldValue(v):
			return fmt.Errorf("headers: %s's value is not a valid header value (a newline or a control character)", k)
		}
	}
	return nil
}

// poke asks the refresh loop for a listing now: the tools changed, or a
// call failed and the upstream's health is in doubt.
func (u *upstream) poke() {
	select {
	case u.changed <- struct{}{}:
	default: // a listing is already due
	}
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
	m.conns.CloseIdleConnections()
	for _, t := range m.tlsConns {
		t.CloseIdleConnections()
	}
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

// loop lists u's tools at start-up, on every refresh and when poked. It is
// also the upstream's health probe: while listings fail it tries again,
// one attempt at a time, every probeInterval, or less and less often
// while the upstream refuses (prober); a success closes the breaker, so
// calls resume as soon as the upstream is back.
func (m *Manager) loop(ctx context.Context, u *upstream) {
	defer u.closeSession()
	firstDone := false
	pace := newProber(m.probe, m.probeMax)
	warned := false // of this episode of refusals
	for {
		var last lastAnswer
		tools, err := m.refresh(withLastAnswer(ctx, &last), u)
		if ctx.Err() != nil {
			return
		}
		next := u.refresh()
		if err == nil {
			pace.succeeded()
			warned = false
		} else {
			why, wait := last.get()
			next = pace.failed(why != "", wait)
			if why != "" && !warned {
				warned = true
				m.logger.Warn("upstream refuses toolsearch's requests: listed again less and less often, at least once a minute, until it accepts them",
					"upstream", u.cfg.Name, "refusal", why, "err", u.scrub(err.Error()))
			}
		}
		changed := m.listed(u, tools, err, next)
		if !firstDone {
			firstDone = true
			close(u.first)
		}
		if changed && m.onChange != nil {
			m.onChange()
		}
		if !m.wait(ctx, u, next, err == nil) {
			return
		}
	}
}

// wait returns after d, or sooner when u is poked or its session stops
// answering pings, or, after a good listing (listed), when the changes
// that d counted on hearing are no longer heard; false once ctx is done.
func (m *Manager) wait(ctx context.Context, u *upstream, d time.Duration, listed bool) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	health := time.NewTicker(u.cfg.Health)
	defer health.Stop()
	var unheard <-chan time.Time
	if listed && d > u.unheard {
		tick := time.NewTicker(u.unheard)
		defer tick.Stop()
		unheard = tick.C
	}
	for {
		select {
		case <-unheard:
			if !u.heard() {
				return true // the stream that carried them ended, and was not given again
			}
		case <-ctx.Done():
			return false
		case <-u.changed:
			// An upstream that floods list_changed, or calls failing one
			// after another, would otherwise be listed back to back.
			return u.asked.Wait(ctx) == nil
		case <-t.C:
			return true
		case <-health.C:
			if !m.healthy(ctx, u) {
				return true
			}
		case e := <-u.check:
			// Paced as the listings list_changed asks for: an upstream
			// ending sessions again and again.
			if u.asked.Wait(ctx) != nil {
				return false
			}
			if !u.dropSession(e.cs) {
				continue // replaced meanwhile, by a call that asked for a listing
			}
			if !sessionGone(e.err) && !errors.Is(e.err, errListenEnded) {
				// Over a stream the SDK could not read or resume: a
				// failure, in status with why, as the ping found it
				// while the session was still open (after, a ping reads
				// only "connection closed").
				m.record(u, fmt.Errorf("session: %w", e.err))
			}
			u.relisten.Store(true) // the listing waits for an upstream restarting
			return true
		}
	}
}

// healthy pings u's session, if it has one. A session that does not
// answer is a failure, in status and for the breaker, at once; it is
// dropped, and the listing that follows reconnects or fails in turn. Any
// answer counts, an error too: the upstream is there; but a session it
// forgot is dropped, without a failure. A ping refused (nothing listens:
// most often the upstream restarting) is no failure yet: the listing
// waits for the upstream, as after a session that ended, and fails if it
// does not come back.
func (m *Manager) healthy(ctx context.Context, u *upstream) bool {
	u.mu.Lock()
	cs := u.session
	u.mu.Unlock()
	if cs == nil {
		return true // the next listing connects
	}
	var last lastAnswer
	err := m.ping(withLastAnswer(ctx, &last), cs, min(u.cfg.Timeout, healthTimeout))
	// This session has served: its 400 is the upstream forgetting it,
	// though the SDK may read the 400's body as a JSON-RPC error.
	switch forgot := forgotten(err, &last, cs, true); {
	case err == nil || ctx.Err() != nil || (answered(err) && !forgot):
		return true
	case errors.Is(err, syscall.ECONNREFUSED):
		u.relisten.Store(true)
	case !forgot:
		m.record(u, fmt.Errorf("ping: %w", err))
	}
	// A session the upstream forgot (it restarted) is no failure, as for
	// a call: the listing that follows connects afresh.
	u.dropSession(cs)
	return false
}

// ping asks cs for a ping within timeout, reading at most pingBytes back;
// at protocol 2026-07-28 it asks server/discover (discovers), whose
// answer carries the upstream's instructions, read at connect within
// maxRead.
func (m *Manager) ping(ctx context.Context, cs *mcp.ClientSession, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	lim := &readLimit{max: pingBytes, budget: m.budget}
	if stateless(cs) {
		lim.max = m.maxRead
	}
	defer lim.end()
	err := cs.Ping(repeatable(withReadLimit(ctx, lim)), pingParams(cs))
	if errors.Is(err, errDiscovered) {
		return nil
	}
	return err
}

// stateless reports whether cs speaks protocol 2026-07-28 or later.
func stateless(cs *mcp.ClientSession) bool {
	r := cs.InitializeResult()
	return r != nil && r.ProtocolVersion >= statelessProtocol
}

// pingParams are a ping's at cs's protocol. From 2026-07-28 every request
// names the protocol and the client's capabilities in its _meta, and the
// go-sdk's client (v1.8.0) adds them to every request it sends but a
// ping: the upstream answered each ping 400, so every health ping took
// the session for forgotten (a reconnect and a listing every 15 s), and
// every slow tool's timeout counted as an outage (its ping failed) and
// opened the breaker. A ping asks nothing of the client's capabilities.
func pingParams(cs *mcp.ClientSession) *mcp.PingParams {
	if !stateless(cs) {
		return nil
	}
	return &mcp.PingParams{Meta: mcp.Meta{
		mcp.MetaKeyProtocolVersion:    cs.InitializeResult().ProtocolVersion,
		mcp.MetaKeyClientInfo:         clientInfo,
		mcp.MetaKeyClientCapabilities: map[string]any{},
	}}
}

// errDiscovered is discovers' answer to a ping it sent as server/discover.
var errDiscovered = errors.New("the upstream answered server/discover")

// discovers sends toolsearch's pings on a session at protocol 2026-07-28
// as server/discover, the probe that protocol has. Ping is no method
// there: the upstream answered "method not found", and the go-sdk's
// server logs each as an error, so every health ping (every 15 s) and
// every probe after a slow call put an error in the upstream's log. The
// SDK's client has no call for server/discover and Ping takes no other
// method's result, so the answer is errDiscovered, which ping reads as
// success.
func discovers(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		cs, ok := req.GetSession().(*mcp.ClientSession)
		p, isPing := req.GetParams().(*mcp.PingParams)
		if method != "ping" || !isPing || p == nil || !ok || !stateless(cs) {
			return next(ctx, method, req)
		}
		if _, err := next(ctx, "server/discover", &mcp.DiscoverRequest{Session: cs, Params: &mcp.DiscoverParams{Meta: p.Meta}}); err != nil {
			return nil, err
		}
		return nil, errDiscovered
	}
}

// clientInfo is how toolsearch names itself to its upstreams.
var clientInfo = &mcp.Implementation{Name: "toolsearch", Version: "1"}

// answered reports whether err is the upstream's own JSON-RPC error (an
// upstream without ping, say), as opposed to no answer: a transport
// failure the SDK dresses as one (codeRejected). A session gone on either
// side is never one: the SDK reports a missing session as a plain error,
// and wraps its local closing errors with %v.
func answered(err error) bool {
	var werr *jsonrpc.Error
	return errors.As(err, &werr) && werr.Code != codeRejected
}

// refresh lists u's tools through every page (listed keeps them). A
// session the upstream has forgotten is replaced once within the same
// listing. A listing refused a connection by an upstream that
// last answered (a refresh meeting a deploy), or after a session ended
// under toolsearch or a refused health ping, waits for the upstream to
// listen again, as a call does (redialWait), before its refusal is a
// failure: most often the upstream is restarting. An upstream already
// failing is not waited for, so its listings keep the prober's pace.
func (m *Manager) refresh(ctx context.Context, u *upstream) ([]catalog.Tool, error) {
	ctx, cancel := context.WithTimeout(ctx, u.cfg.Timeout)
	defer cancel()
	var tools []catalog.Tool
	var err error
	last, _ := ctx.Value(lastAnswerKey{}).(*lastAnswer)
	redial := redialer{}
	u.mu.Lock()
	answering := u.state == "connected"
	u.mu.Unlock()
	if u.relisten.Swap(false) || answering {
		redial = u.redialer()
	}
	for attempt := 0; attempt < 2; attempt++ {
		u.mu.Lock()
		had := u.session
		u.mu.Unlock()
		var cs *mcp.ClientSession
		if cs, err = u.connect(ctx); err != nil {
			if errors.Is(err, syscall.ECONNREFUSED) && redial.wait(ctx, time.Now()) {
				attempt--
				continue
			}
			return nil, err
		}
		if tools, err = m.list(ctx, cs); err == nil {
			break
		}
		u.dropSession(cs)
		if last != nil && last.refused() && redial.wait(ctx, time.Now()) {
			attempt-- // the upstream stopped listening after the connect
			continue
		}
		if !forgotten(err, last, cs, cs == had) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("tools/list: %w", err)
	}
	for i := range tools {
		tools[i].Server = u.cfg.Name
	}
	return tools, nil
}

// list reads every page of cs's tools. All pages together may read
// listPages results' worth of bytes, and each tool's texts are clipped to
// the catalog's bounds for untrusted tools as it arrives.
func (m *Manager) list(ctx context.Context, cs *mcp.ClientSession) ([]catalog.Tool, error) {
	var tools []catalog.Tool
	params := &mcp.ListToolsParams{}
	lim := &readLimit{max: listPages * m.maxRead, budget: m.budget}
	defer lim.end()
	kept := &keptAnswer{}
	for pages := 1; ; pages++ {
		res, err := cs.ListTools(withKeptAnswer(repeatable(withReadLimit(ctx, lim)), kept), params)
		lim.release() // the page is decoded: only the total stays counted
		if lerr := lim.exceeded(); lerr != nil {
			return nil, lerr
		}
		if err != nil {
			return nil, err
		}
		// Every page counts, the last and an only one too: the listing's
		// bytes (listPages results) hold 600,000 tools of a few bytes,
		// each a vector to make and keep.
		if len(tools)+len(res.Tools) > maxListedTools {
			return nil, fmt.Errorf("%w: the upstream lists over %d tools", ErrResultTooLarge, maxListedTools)
		}
		exact := kept.schemas()
		if len(exact) != len(res.Tools) {
			exact = nil
		}
		for i, t := range res.Tools {
			var schemas *listedSchemas
			if exact != nil && exact[i].Name == t.Name {
				schemas = &exact[i]
			}
			tools = append(tools, catalog.Bound(convert(t, schemas)))
		}
		if res.NextCursor == "" {
			return tools, nil
		}
		if pages >= len(tools)+emptyPages {
			// Pages of a few bytes each, with a cursor that never ends,
			// stayed under the bytes' bound for 30,000 requests, until the
			// listing's timeout.
			return nil, fmt.Errorf("%w: the upstream's listing goes on: %d pages for %d tools", ErrResultTooLarge, pages, len(tools))
		}
		params.Cursor = res.NextCursor
	}
}

// A listing's bounds: its pages together may read listPages times the
// result limit, and hold at most maxListedTools tools (a cursor that
// never ends stops there, or, with pages of no tools, at emptyPages
// more pages than tools).
const (
	listPages      = 8
	maxListedTools = 10_000
	// emptyPages is how many more pages than tools a listing may take: a
	// page of none now and then is the upstream's affair, one after
	// another is a cursor that does not end.
	emptyPages = 8
)

// redialWait bounds how long a call waits for an upstream that refuses
// connections (at most half its timeout): a process restarting, as on a
// deploy, listens again within a second or two, and a refused connection
// carried nothing, so the call is sent once it does. A call made during
// a 1 s restart was lost, and its failure and the listing it asked for
// opened the breaker (two failures, the default) for the calls after it.
// Past the bound the call fails as before, and the breaker answers the
// calls of a longer outage at once.
const redialWait = 2 * time.Second

// redialer paces a call's attempts to reach an upstream that refuses
// connections: 100 ms apart at first, doubling to 500 ms, until until.
type redialer struct {
	until  time.Time
	gap    time.Duration
	waited bool
}

// redialer waits for u restarting from now, for redialWait or half u's
// timeout, whichever is shorter.
func (u *upstream) redialer() redialer {
	return redialer{until: time.Now().Add(min(redialWait, u.cfg.Timeout/2))}
}

// wait sleeps before the next attempt and reports whether to make it:
// false once it would pass until or ctx ends.
func (r *redialer) wait(ctx context.Context, now time.Time) bool {
	r.gap = min(max(2*r.gap, 100*time.Millisecond), 500*time.Millisecond)
	if now.Add(r.gap).After(r.until) {
		return false
	}
	r.waited = true
	t := time.NewTimer(r.gap)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// statelessProtocol is the first protocol version the SDK connects to
// with server/discover rather than initialize (SEP-2575).
const statelessProtocol = "2026-07-28"

// resumeRetries is how many times a stream that ended early is asked for
// again with Last-Event-ID, while it makes no progress: a call's answer
// stream that the upstream closed (SEP-1699: a server may, to free the
// connection during a long call) or the network dropped, and the session
// stream. The SDK waits what the upstream's retry field asks, else 1 to 2
// s, then 1.5 to 3: an upstream's blip of a few seconds loses no answer,
// and a call in flight on an upstream that died fails within about 5 s
// (within its timeout) rather than at once. Streams without event ids
// (an upstream that keeps no events) are not resumed: their calls fail
// at once, as before.
const resumeRetries = 2

func (u *upstream) connect(ctx context.Context) (*mcp.ClientSession, error) {
	u.mu.Lock()
	cs, protocol := u.session, u.protocol
	u.mu.Unlock()
	if cs != nil {
		return cs, nil
	}
	var opts *mcp.ClientSessionOptions
	if protocol != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: protocol}
	}
	watch := &sessionWatch{
		lost:   func(cs *mcp.ClientSession) { u.ended(cs, errListenEnded) },
		again:  func() bool { return u.unopened.CompareAndSwap(false, true) },
		opened: func() { u.unopened.Store(false); u.briefs.Store(0) },
		atOnce: func() bool { return u.briefs.Add(1) > briefStreams },
	}
	tr := u.transport
	tr.watch = watch
	httpc := &http.Client{Transport: tr, CheckRedirect: endpoint.SameOrigin}
	cs, err := within(ctx, func(ctx context.Context) (*mcp.ClientSession, error) {
		return u.client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: u.cfg.URL, HTTPClient: httpc, MaxRetries: resumeRetries, MaxEventSize: u.maxEvent}, opts)
	})
	u.mu.Lock()
	u.protocol = ""
	if err != nil {
		u.mu.Unlock()
		return nil, fmt.Errorf("connect: %w", err)
	}
	sessionless := cs.ID() == ""
	if r := cs.InitializeResult(); r != nil && r.ProtocolVersion < statelessProtocol && !sessionless {
		u.protocol = r.ProtocolVersion
	}
	// A concurrent caller connected first: use its session. Or the pinned
	// version reached an upstream that now serves without sessions (a new
	// version of it, likely speaking 2026-07-28 as well): at the old
	// version such an upstream sends no list_changed at all, and
	// toolsearch, pinned, never asked it server/discover again. Connect
	// afresh, asking it.
	if u.session != nil || (protocol != "" && sessionless) {
		u.mu.Unlock()
		// Not waited for: Close tells the upstream with a DELETE, which a
		// hung upstream holds for the SDK's 5 s bound, past this call's
		// own timeout (a reliability run saw a 2 s call take 7).
		go cs.Close()
		return u.connect(ctx)
	}
	u.session, u.watch = cs, watch
	u.mu.Unlock()
	watch.bind(cs)
	go func() {
		err := cs.Wait()
		if err != nil && watch.forgot.Load() {
			err = fmt.Errorf("%w: %w", mcp.ErrSessionMissing, err) // no failure: the upstream restarted
		}
		u.ended(cs, err)
	}()
	return cs, nil
}

// ending is a session that ended under toolsearch, and why.
type ending struct {
	cs  *mcp.ClientSession
	err error
}

// errListenEnded is why a 2026-07-28 session ended whose listening stream
// the upstream or the network ended: the SDK neither opens that stream
// again nor says it ended (sessionWatch), and list_changed comes on no
// other. It is no failure of the upstream.
var errListenEnded = errors.New("the listening stream ended")

// ended has the loop look at cs now, if it is still u's session when it
// ends (err says why): the SDK ends a session whose session stream it
// cannot resume (the upstream restarted and answers 404, or no longer
// serves that stream) or read, and a 2026-07-28 session's listening
// stream may end (errListenEnded). Left to the next health ping, a
// restarted upstream's new tools were found 14.1 s after it was back, at
// either protocol, and a listening stream cut alone (a proxy) left them
// unseen until the refresh. The loop drops the session, counting a
// failure unless the upstream forgot it or its listening stream ended,
// and lists at once: connecting afresh opens that stream again. The
// calls a 2026-07-28 session carries are still answered: closing it
// waits for them.
func (u *upstream) ended(cs *mcp.ClientSession, err error) {
	u.mu.Lock()
	current := u.session == cs
	u.mu.Unlock()
	if err == nil || !current {
		return // closed by toolsearch, or dropped already
	}
	u.streams.sessionsLost.Add(1)
	select {
	case u.check <- ending{cs, err}:
	default: // one is already due
	}
}

// within runs connect and returns what it makes, or ctx's error as soon
// as ctx is done, whether or not connect has returned; a session it makes
// after that is closed. The SDK's Connect, when initialize fails at ctx's
// deadline, closes the half-made session before returning, and that close
// runs on a context of its own: against an upstream that accepts
// connections and never answers, a call with a 2 s timeout took 7
// (modelcontextprotocol/go-sdk#1189; cmd/reliability's hang scenario).
// A connect left behind ends within the SDK's and the dialer's own
// bounds (5 s against a hung upstream, the dial's 30 s against one that
// drops packets); the breaker, and the probe's pace (a second between
// attempts while the upstream fails), keep few of them running at once.
func within[S interface{ Close() error }](ctx context.Context, connect func(context.Context) (S, error)) (S, error) {
	type made struct {
		s   S
		err error
	}
	done := make(chan made, 1)
	go func() {
		s, err := connect(ctx)
		done <- made{s, err}
	}()
	select {
	case m := <-done:
		return m.s, m.err
	case <-ctx.Done():
		go func() {
			if m := <-done; m.err == nil {
				_ = m.s.Close()
			}
		}()
		var zero S
		return zero, ctx.Err()
	}
}

// closeSession ends the session as the loop stops (at shutdown), telling
// the upstream. That DELETE waits for a hung upstream up to the SDK's 5 s:
// past a short drain, a process stopped 5.0 s after SIGTERM with
// -drain-delay 1s. It is waited for at most closeWait.
func (u *upstream) closeSession() {
	u.mu.Lock()
	cs := u.session
	u.session = nil
	u.mu.Unlock()
	if cs != nil {
		closeWithin(cs, closeWait)
	}
}

// closeWait bounds how long a stopping loop waits to tell its upstream.
const closeWait = time.Second

// closeWithin closes s, returning when it is closed or after wait,
// whichever is first; a close still running then ends on its own.
func closeWithin(s interface{ Close() error }, wait time.Duration) {
	done := make(chan struct{})
	go func() {
		_ = s.Close()
		close(done)
	}()
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
}

// listed keeps a listing's tools, updates health and the breaker, and
// the next listing's time (next from now) while listings fail, in one
// step: status read between the tools and the outcome showed the tools
// of a listing beside the failures it ended. It reports whether the
// tools changed.
func (m *Manager) listed(u *upstream, tools []catalog.Tool, err error, next time.Duration) (changed bool) {
	var h [32]byte
	if err == nil {
		h = hashTools(tools)
	}
	now := m.now()
	u.mu.Lock()
	defer u.mu.Unlock()
	if err == nil {
		changed = h != u.hash
		u.tools, u.hash = tools, h
	}
	u.lists[listResult(err)]++
	u.nextListing = time.Time{}
	if err != nil {
		u.nextListing = now.Add(next)
	}
	m.recordLocked(u, err, now)
	return changed
}

// record updates health and the breaker after an operation that says
// whether the upstream is there: a listing, or a health ping.
func (m *Manager) record(u *upstream, err error) {
	now := m.now()
	u.mu.Lock()
	defer u.mu.Unlock()
	m.recordLocked(u, err, now)
}

// recordLocked is record with u.mu held.
func (m *Manager) recordLocked(u *upstream, err error, now time.Time) {
	if err == nil {
		u.state, u.stale, u.lastSuccess = "connected", false, now
		u.br.Success()
		return
	}
	msg := u.scrub(err.Error())
	u.state, u.lastErr, u.lastErrAt = "failing", msg, now
	u.stale = len(u.tools) > 0 // keep the last good tools, marked stale
	if u.br.Failure(now) {
		m.logger.Warn("upstream breaker open", "upstream", u.cfg.Name, "failures", u.br.Failures(), "err", msg)
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
			LastSuccess: timePtr(u.lastSuccess), LastError: u.lastErr, LastErrorAt: timePtr(u.lastErrAt), NextRetry: timePtr(u.nextListing),
			CallsFailing: u.callsFailing, LastCallError: u.lastCallErr, LastCallErrorAt: timePtr(u.lastCallErrAt),
			Breaker: u.br.State(now), Failures: u.br.Failures(), ListChanged: u.listChanged()}
		for _, t := range u.tools {
			if catalog.Clipped(t) {
				st.Clipped++
			}
		}
		u.mu.Unlock()
		out = append(out, st)
	}
	return out
}

// listChanged is how u's tool changes reach toolsearch now
// (Status.ListChanged). u.mu is held.
func (u *upstream) listChanged() string {
	if u.session == nil {
		return ListChangedUnknown
	}
	r := u.session.InitializeResult()
	switch {
	case r == nil || r.Capabilities == nil || r.Capabilities.Tools == nil || !r.Capabilities.Tools.ListChanged:
		return ListChangedNotOffered
	case !u.watch.listening.Load():
		return ListChangedNoStream
	}
	return ListChangedHeard
}

// refresh is how long u's listing stands before the next: an upstream
// whose changes are not heard is listed more often, unless the operator
// set its refresh.
func (u *upstream) refresh() time.Duration {
	if u.heard() {
		return u.cfg.Refresh
	}
	return u.unheard
}

func (u *upstream) heard() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.listChanged() == ListChangedHeard
}

// ErrUnavailable is returned by Call when the upstream's breaker is open or
// it cannot be reached.
var ErrUnavailable = errors.New("upstream unavailable")

// errBreakerOpen is the ErrUnavailable of a call the breaker refused.
var errBreakerOpen = fmt.Errorf("%w: circuit breaker open after repeated failures; it is tried again shortly", ErrUnavailable)

// ErrTimeout is returned by Call when the tool gave no result in time
// while the upstream itself still answers: a slow tool, not a sick server.
var ErrTimeout = errors.New("no result in time")

// CallOptions carry what a forwarded call relays besides its result.
type CallOptions struct {
	// Progress, when set, receives the upstream's progress notifications
	// for this call (the call is sent with a progress token of its own).
	Progress func(context.Context, *mcp.ProgressNotificationParams)
	// Hops is how many toolsearch services the call has come through
	// already (HopsHeader on the request that asked for it).
	Hops int
}

// HopsHeader carries, on each call toolsearch forwards, how many
// toolsearch services it has come through, itself included; MaxHops is
// the most a call may have come through and still be forwarded. An
// upstream that is this service, or another that leads back to it, made
// each call_tool nested in a call's arguments one more request held open,
// a hundred deep before the throttle stopped it; past MaxHops the call is
// refused, saying why.
const (
	HopsHeader = "Toolsearch-Hops"
	MaxHops    = 8
)

// ErrLoop is returned by Call for a call that has come through MaxHops
// toolsearch services.
var ErrLoop = errors.New("the call has come through toolsearch too many times: an upstream is this service, or leads back to it")

// Hops reads HopsHeader's value: 0 when absent or not a count, and at
// most MaxHops, as is a count too large to parse.
func Hops(v string) int {
	n, err := strconv.ParseUint(v, 10, 16)
	switch {
	case errors.Is(err, strconv.ErrRange):
		return MaxHops
	case err != nil:
		return 0
	}
	return int(min(n, MaxHops))
}

// Call forwards tools/call to the upstream named server and returns its
// result unchanged (an isError result is a result, not an error). The
// call is cancelled upstream when ctx is.
func (m *Manager) Call(ctx context.Context, server, tool string, args json.RawMessage, opts CallOptions) (*mcp.CallToolResult, error) {
	if opts.Hops >= MaxHops {
		return nil, fmt.Errorf("%w (%d hops)", ErrLoop, opts.Hops)
	}
	u := m.byName[server]
	if u == nil {
		return nil, fmt.Errorf("no upstream %q", server)
	}
	res, outcome, err := m.call(ctx, u, tool, args, opts)
	m.called(u, outcome, err)
	if err != nil {
		return nil, fmt.Errorf("%s: tools/call %s: %w", server, tool, err)
	}
	return res, nil
}

// The results of listings and calls, as counted in /metrics. A call's
// outcome also decides what the breaker learns from it.
const (
	resultOK          = "ok"          // answered (an isError result included)
	resultRPCError    = "rpc_error"   // the upstream answered with a JSON-RPC error: it is up
	resultRejected    = "rejected"    // turned away with an HTTP 4xx (callRejected): says nothing of its health
	resultError       = "error"       // transport failure: counts against the upstream
	resultUnavailable = "unavailable" // the breaker was open, or the upstream could not be reached
	resultTimeout     = "timeout"     // no result in time, but the upstream answers a ping
	resultTooLarge    = "too_large"   // the answer was over a bound
	resultCancelled   = "cancelled"   // the caller went away
)

var (
	listResults = []string{resultOK, resultError, resultTooLarge}
	callResults = []string{resultOK, resultRPCError, resultRejected, resultError, resultUnavailable, resultTimeout, resultTooLarge, resultCancelled}
)

func listResult(err error) string {
	switch {
	case err == nil:
		return resultOK
	case errors.Is(err, ErrResultTooLarge), errors.Is(err, ErrBudget):
		return resultTooLarge
	}
	return resultError
}

// call makes one logical call: a session the upstream forgot is replaced
// and the call sent again (it never ran there), all as one outcome.
func (m *Manager) call(ctx context.Context, u *upstream, tool string, args json.RawMessage, opts CallOptions) (*mcp.CallToolResult, string, error) {
	u.mu.Lock()
	allowed := u.br.Allow(m.now())
	u.mu.Unlock()
	if !allowed {
		return nil, resultUnavailable, errBreakerOpen
	}
	cctx, cancel := context.WithTimeout(ctx, u.cfg.Timeout)
	defer cancel()
	// A session closed under its calls (breaks) ends them at once: an
	// upstream flooding a call's own answer with requests would
	// otherwise hold it to its timeout.
	cctx, abort := context.WithCancelCause(cctx)
	defer abort(nil)
	params := &mcp.CallToolParams{Name: tool}
	if len(args) > 0 {
		params.Arguments = args
	}
	kept := &keptAnswer{}
	if opts.Progress != nil {
		relay := &progressRelay{f: opts.Progress, more: make(chan struct{}, 1)}
		token := u.track(relay.handle)
		defer u.untrack(token)
		params.SetProgressToken(token)
		kept.token = token
		defer func() { relay.drain(ctx, kept.progressSeen()) }() // before untrack: deferred later, run first
	}
	lim := &readLimit{max: m.maxRead, budget: m.budget}
	defer lim.end()
	var cs *mcp.ClientSession
	var res *mcp.CallToolResult
	var err error
	var last lastAnswer
	// At most two sends of the call (the second on a new session, when
	// the first met a session the upstream forgot); the waits for an
	// upstream that refuses connections are not sends, and are bounded
	// by their own clock.
	redial := u.redialer()
	primed := false // the session listed for the call's headers (headerMismatch)
	var watch *aliveWatch
	defer func() {
		if redial.waited {
			u.streams.redialed.Add(1)
		}
	}()
	for attempt := 0; attempt < 2; attempt++ {
		u.mu.Lock()
		had := u.session
		u.mu.Unlock()
		if cs, err = u.connect(cctx); err != nil {
			if errors.Is(err, syscall.ECONNREFUSED) && redial.wait(cctx, time.Now()) {
				attempt-- // the upstream is restarting: nothing was sent
				continue
			}
			if ctx.Err() != nil {
				return nil, resultCancelled, ctx.Err()
			}
			return nil, resultUnavailable, fmt.Errorf("%w: %s", ErrUnavailable, u.scrub(err.Error()))
		}
		if cs != had {
			// A session made under a call: the last one was dropped, the
			// upstream may have restarted with other tools, and only the
			// loop lists them.
			u.poke()
		}
		lim.onExceed = func() {
			u.breaks(cs, fmt.Errorf("%w: the session this call shared was closed by another answer over the %d-byte limit (limits.upstream_max_result_bytes); it may have run upstream", ErrResultTooLarge, m.maxRead))
		}
		stop := u.onBreak(cs, abort)
		watch = m.watchAlive(ctx, cctx, cs)
		res, err = cs.CallTool(withLastAnswer(withKeptAnswer(withHops(withReadLimit(cctx, lim), opts.Hops+1), kept), &last), params)
		watch.stop()
		stop()
		if err != nil && !primed && headerMismatch(err) && lim.exceeded() == nil {
			// At 2026-07-28 a tool's x-mcp-header arguments travel as
			// headers too, which the SDK's client adds only for the tools
			// its session has listed: a call on a session made since the
			// last listing (a reconnect) went without them and was
			// refused 400, so it ran nowhere. List on the session, and
			// send it once more.
			primed = true
			if _, lerr := m.list(cctx, cs); lerr == nil {
				attempt--
				continue
			}
		}
		gone := forgotten(err, &last, cs, cs == had)
		if err != nil && last.refused() && lim.exceeded() == nil && u.brokenBy(cs) == nil && redial.wait(cctx, time.Now()) {
			// The call's connection was refused: it carried nothing, and
			// the session went with the process that held it.
			u.dropSession(cs)
			attempt--
			continue
		}
		if err == nil || lim.exceeded() != nil || !gone || u.brokenBy(cs) != nil || last.accepted() {
			break
		}
		// The upstream restarted or dropped the session before it took
		// the call (a resumed stream's 404 comes after it did): the call
		// never ran there, so it is safe to reconnect and send it once more.
		u.dropSession(cs)
	}
	switch broken := u.brokenBy(cs); {
	case lim.exceeded() != nil:
		// The session's connection failed reading the answer: the next
		// call connects afresh.
		u.dropSession(cs)
		return nil, resultTooLarge, lim.exceeded()
	case err == nil && res.NeedsInput():
		return nil, resultRPCError, needsInput(res)
	case err == nil:
		kept.exactResult(res)
		// At 2026-07-28 an upstream names itself in every result's _meta:
		// the hop's, not the answer's. Passed on, a caller read the
		// upstream's name as that of the server it spoke to, toolsearch.
		delete(res.Meta, mcp.MetaKeyServerInfo)
		return res, resultOK, nil
	case ctx.Err() != nil:
		return nil, resultCancelled, ctx.Err()
	case broken != nil:
		// The session was closed under this call, by another call's
		// answer over the limit or by the upstream's own requests:
		// whether it ran upstream cannot be known, so it is not sent
		// again. An answer over the limit says nothing of the upstream's
		// health; a flood of requests does.
		if errors.Is(broken, ErrResultTooLarge) {
			return nil, resultTooLarge, broken
		}
		return nil, resultError, broken
	case answered(err):
		// The upstream answered: a protocol error is its verdict, not a
		// failure of the connection.
		return nil, resultRPCError, errors.New(u.scrub(err.Error()))
	case last.callRejected() && !sessionGone(err):
		// Turned away by status, this call alone: a caller sending calls
		// a proxy refuses (a body over its limit) opened the breaker for
		// every caller.
		return nil, resultRejected, errors.New(u.scrub(err.Error()))
	case cctx.Err() != nil && watch.alive():
		return nil, resultTimeout, fmt.Errorf("%w: the tool gave no result within %s; the upstream is up, so it is slow, and the call was cancelled", ErrTimeout, u.cfg.Timeout)
	}
	// A transport failure: counted by the breaker, and shown in status.
	// The call may have reached the upstream, so it is not retried; when
	// the upstream took it, the caller is told it may have run.
	u.dropSession(cs)
	msg := u.scrub(err.Error())
	if last.accepted() {
		msg += "; the upstream took the call, so it may have run there, and it is not sent again"
	}
	return nil, resultError, errors.New(msg)
}

// headerMismatch reports whether err is the upstream refusing a request
// whose Mcp-* headers do not match its body (protocol 2026-07-28).
func headerMismatch(err error) bool {
	var werr *jsonrpc.Error
	return errors.As(err, &werr) && werr.Code == mcp.CodeHeaderMismatch
}

// needsInput is the answer to a call the upstream answered "input
// required" (multi round-trip requests, protocol 2026-07-28): it names
// what was asked, by kind. The upstream answered, so it is no failure of
// it; a looping upstream had the SDK send the call ten times and the
// breaker count the give-up as one.
func needsInput(res *mcp.CallToolResult) error {
	kinds := map[string]bool{}
	for _, r := range res.InputRequests {
		switch r.(type) {
		case *mcp.ElicitParams:
			kinds["elicitation"] = true
		//lint:ignore SA1019 deprecated at 2026-07-28, and upstreams still ask
		case *mcp.CreateMessageParams, *mcp.CreateMessageWithToolsParams:
			kinds["sampling"] = true
		//lint:ignore SA1019 deprecated at 2026-07-28, and upstreams still ask
		case *mcp.ListRootsParams:
			kinds["roots"] = true
		default:
			kinds["input"] = true
		}
	}
	if len(kinds) == 0 {
		return errors.New("the upstream is busy (it answered input required, asking for nothing): try again later")
	}
	asked := slices.Sorted(maps.Keys(kinds))
	return fmt.Errorf("the tool asked the caller for %s before it answers, which toolsearch does not relay: call it on its server directly", strings.Join(asked, " and "))
}

// aliveWatch tells a slow tool from a hung upstream when a call times
// out: an answer to a ping means the tool was slow, not that the
// upstream is down. Any answer, an error too, as for the health ping: at
// protocol 2026-07-28 ping is no method, and its "method not found" had
// every slow tool counted as an outage. The ping goes out while the call
// still runs, pingTimeout before its deadline (halfway, for a call of
// less than twice that): sent after it, as it was, a call to a hung
// upstream answered its caller a second past the timeout the operator
// set (3.0 s for 2 s, cmd/reliability hang). The ping keeps its whole
// pingTimeout, so a busy upstream is not taken for a hung one when calls
// are short.
type aliveWatch struct {
	timer *time.Timer
	sent  bool // the ping was sent: the call outlasted its wait
	done  chan struct{}
	up    atomic.Bool
}

// watchAlive pings cs before the deadline of cctx, the call's context
// under ctx, unless the call has ended (alive) first.
func (m *Manager) watchAlive(ctx, cctx context.Context, cs *mcp.ClientSession) *aliveWatch {
	deadline, _ := cctx.Deadline()
	left := time.Until(deadline)
	w := &aliveWatch{done: make(chan struct{})}
	w.timer = time.AfterFunc(max(left/2, left-pingTimeout), func() {
		defer close(w.done)
		err := m.ping(context.WithoutCancel(ctx), cs, pingTimeout)
		w.up.Store(err == nil || answered(err))
	})
	return w
}

// stop is called as the call ends: one that ended before the ping was
// due needs none.
func (w *aliveWatch) stop() { w.sent = !w.timer.Stop() }

// alive reports whether the watch's ping was answered, waiting for it
// (at most until the call's deadline, or pingTimeout past its start for
// a short call); false when no ping was sent.
func (w *aliveWatch) alive() bool {
	if w == nil || !w.sent {
		return false
	}
	<-w.done
	return w.up.Load()
}

// called records a call's outcome in health, breaker and counters. A
// failure also pokes the refresh loop, which probes until the upstream
// answers and closes the breaker then.
func (m *Manager) called(u *upstream, outcome string, err error) {
	now := m.now()
	u.mu.Lock()
	defer u.mu.Unlock()
	u.calls[outcome]++
	switch outcome {
	case resultOK, resultRPCError:
		u.br.Success()
		u.state, u.callsFailing, u.lastSuccess = "connected", false, now
	case resultError, resultUnavailable:
		if errors.Is(err, errBreakerOpen) {
			return // refused without trying: nothing new was learned
		}
		u.callsFailing, u.lastCallErr, u.lastCallErrAt = true, u.scrub(err.Error()), now
		if u.br.Failure(now) {
			m.logger.Warn("upstream breaker open", "upstream", u.cfg.Name, "failures", u.br.Failures(), "err", u.lastCallErr)
		}
		u.poke()
	default:
		// Timeout, too large, cancelled, or turned away by status (a
		// proxy's 413 is not the upstream answering): the upstream's
		// health is not in question, and status keeps what listings and
		// other calls found. A refusal counted as a success: during an
		// outage it set state connected beside stale tools and reset
		// the failures.
		u.br.Neutral()
	}
}

// breaks notes that cs is being closed under its calls, for err, and
// ends those calls.
func (u *upstream) breaks(cs *mcp.ClientSession, err error) {
	var aborts []context.CancelCauseFunc
	u.mu.Lock()
	u.broken.cs, u.broken.err = cs, err
	for c := range u.onCalls {
		if c.cs == cs {
			aborts = append(aborts, c.abort)
		}
	}
	u.mu.Unlock()
	for _, abort := range aborts {
		abort(err)
	}
}

// onBreak has abort called if cs breaks before stop is.
func (u *upstream) onBreak(cs *mcp.ClientSession, abort context.CancelCauseFunc) (stop func()) {
	c := &callOn{cs: cs, abort: abort}
	u.mu.Lock()
	u.onCalls[c] = struct{}{}
	u.mu.Unlock()
	return func() {
		u.mu.Lock()
		delete(u.onCalls, c)
		u.mu.Unlock()
	}
}

// callOn is a call in flight on a session.
type callOn struct {
	cs    *mcp.ClientSession
	abort context.CancelCauseFunc
}

// brokenBy is why cs was closed under its calls, or nil.
func (u *upstream) brokenBy(cs *mcp.ClientSession) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.broken.cs != cs {
		return nil
	}
	return u.broken.err
}

// The requests an upstream may make of toolsearch: a few a minute is
// usual (a ping to check on the client). 50,000 pings in one call's
// answer cost 2.9 s of CPU, each answered with a POST.
const (
	asksRate  = rate.Limit(10) // a second
	asksBurst = 30
)

// uncached keeps the SDK's client from answering toolsearch's listings
// from its cache of list results (SEP-2549, protocol 2026-07-28), by
// telling it each page is stale at once. A listing passes the upstream's
// schemas on exact, from the bytes it read; from the cache came no bytes,
// so schemas the SDK had re-encoded (numbers rounded, keys reordered),
// unlike the last listing's: with a ttlMs of 1 s and a refresh of 200 ms
// a listing in two was a change, and a rebuild (10 in 5 s). toolsearch
// lists on its own schedule: refresh, list_changed, a listening stream
// opened again.
func uncached(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if r, ok := res.(*mcp.ListToolsResult); ok {
			r.TTLMs = 0
		}
		return res, err
	}
}

// boundAsks closes the session of an upstream that makes more requests
// of toolsearch than asksRate allows; its notifications pass (the
// session stream's pace bounds those, and a call's answer its size).
func (u *upstream) boundAsks(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if strings.HasPrefix(method, "notifications/") || u.asks.Allow() {
			return next(ctx, method, req)
		}
		err := fmt.Errorf("the upstream asked more than %d requests of toolsearch at once (%s and the like): its session was closed; a call on it may have run upstream", asksBurst, method)
		if cs, ok := req.GetSession().(*mcp.ClientSession); ok {
			u.breaks(cs, err)
			u.dropSession(cs)
		}
		return nil, err
	}
}

// track registers a call's progress receiver under a fresh token.
func (u *upstream) track(f func(context.Context, *mcp.ProgressNotificationParams)) string {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.nextToken++
	token := "toolsearch-" + strconv.FormatUint(u.nextToken, 10)
	u.progress[token] = f
	return token
}

func (u *upstream) untrack(token string) {
	u.mu.Lock()
	delete(u.progress, token)
	u.mu.Unlock()
}

// relayProgress hands an upstream's progress notification to the call
// whose token it carries; one for no call of ours is dropped.
func (u *upstream) relayProgress(ctx context.Context, p *mcp.ProgressNotificationParams) {
	token, _ := p.ProgressToken.(string)
	u.mu.Lock()
	f := u.progress[token]
	u.mu.Unlock()
	if f != nil {
		f(ctx, p)
	}
}

// progressRelay passes one call's progress notifications on and counts
// them. The SDK hands a notification to its handler on a goroutine of
// its own and the response to the waiting call at once, so the
// notification an upstream sends just before its result (the last step's)
// was relayed after the call had answered, and lost: server-everything's
// five steps reached the caller as four.
type progressRelay struct {
	f       func(context.Context, *mcp.ProgressNotificationParams)
	handled atomic.Int64
	more    chan struct{}
}

func (r *progressRelay) handle(ctx context.Context, p *mcp.ProgressNotificationParams) {
	r.f(ctx, p)
	r.handled.Add(1)
	select {
	case r.more <- struct{}{}:
	default:
	}
}

// drain waits until the relay has handled seen notifications (those the
// upstream sent before its answer), at most progressDrain: an upstream
// that announces notices its client does not take holds its own answer
// that long, no longer.
func (r *progressRelay) drain(ctx context.Context, seen int) {
	if r.handled.Load() >= int64(seen) {
		return
	}
	t := time.NewTimer(progressDrain)
	defer t.Stop()
	for r.handled.Load() < int64(seen) {
		select {
		case <-r.more:
		case <-t.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

const progressDrain = 500 * time.Millisecond

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

// forgotten reports whether a request on cs failed because the upstream
// no longer has the session: sessionGone, or, on a session that had
// served (served), a 400 (lastAnswer.forgot), which is far more often an
// upstream that restarted and forgot it than a request it cannot read.
// On a session just made, a 400 is the request's own answer; so it is on
// a session without an id (protocol 2026-07-28), which the upstream
// never had to forget.
func forgotten(err error, last *lastAnswer, cs *mcp.ClientSession, served bool) bool {
	return err != nil && (sessionGone(err) || (served && cs.ID() != "" && last.forgot()))
}

// dropSession closes cs if it is still u's session, so the next call
// connects afresh (and a concurrent caller's new session is kept), and
// reports whether it was.
func (u *upstream) dropSession(cs *mcp.ClientSession) bool {
	if cs == nil {
		return false
	}
	u.mu.Lock()
	if u.session != cs {
		u.mu.Unlock()
		return false
	}
	u.session = nil
	u.mu.Unlock()
	// Close tells the upstream with a DELETE, which a hung upstream never
	// answers: the SDK bounds it (closeDeleteTimeout), and the call that
	// dropped the session does not wait for it.
	go cs.Close()
	return true
}

// convert turns an MCP tool into a catalog tool. Its schemas are taken
// from exact, as the upstream wrote them, when given; else re-encoded
// from what the SDK decoded (which always re-encodes, numbers rounded
// through float64s).
func convert(t *mcp.Tool, exact *listedSchemas) catalog.Tool {
	marshal := func(v any) json.RawMessage {
		b, err := json.Marshal(v)
		if err != nil || string(b) == "null" {
			return nil
		}
		return b
	}
	var annotations json.RawMessage
	if t.Annotations != nil {
		annotations = marshal(t.Annotations)
	}
	in, out := marshal(t.InputSchema), marshal(t.OutputSchema)
	var tasks catalog.TaskSupport
	if exact != nil {
		in, out = exactJSON(exact.InputSchema), exactJSON(exact.OutputSchema)
		// A value the spec does not name reads as none: the tool is
		// called plainly, and its upstream says if it minds.
		tasks, _ = catalog.ParseTaskSupport(exact.Execution.TaskSupport)
	}
	return catalog.Tool{Name: t.Name, Title: t.Title, Description: t.Description,
		Schemas: catalog.BoundSchemas(in, out, annotations), Tasks: tasks}
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
func (u *upstream) scrub(msg string) string {
	return redact.Clip(redact.Text(msg, u.secrets...), maxErrorBytes, "… (cut)")
}

// maxErrorBytes bounds an error message made of what an upstream sent, as
// status, the log and a caller get it: an error status's body is the
// upstream's to fill, and one of 4 MiB was each of those whole.
const maxErrorBytes = 1024

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
