package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sync/semaphore"
	"golang.org/x/time/rate"

	"github.com/toolsearch/toolsearch/pkg/internal/endpoint"
)

// Defaults for what an upstream's answers may cost.
const (
	// DefaultMaxResultBytes bounds one answer (a call's result, one page of
	// tools/list) as it is read: past it the read stops and the caller is
	// told the limit.
	DefaultMaxResultBytes = 4 << 20
	// DefaultResultBudgetBytes bounds the answer bytes being read from all
	// upstreams at once, so many large results together cannot exhaust the
	// pod's memory however each is sized.
	DefaultResultBudgetBytes = 32 << 20
)

// Errors a call returns when an answer is over its bounds. The upstream
// is healthy; the answer is what is refused.
var (
	ErrResultTooLarge = errors.New("result too large")
	ErrBudget         = errors.New("too many large results in flight")
)

// readLimit bounds what one operation reads back from an upstream: every
// response body of the requests made under its context, counted together
// and charged to the process-wide budget as the bytes arrive.
type readLimit struct {
	max    int64
	budget *semaphore.Weighted // nil: unbudgeted

	// onExceed, when set, is called once, as the first bound is crossed
	// and before the read fails.
	onExceed func()

	mu      sync.Mutex
	read    int64
	held    int64 // charged to budget, returned by release
	err     error // the first bound crossed
	ended   bool  // no more reads: see end
	resumes *rate.Limiter
}

// The pace of the GETs that resume one operation's streams: an upstream
// may close a call's stream and ask to be called back (SEP-1699), but one
// that did so in a loop, an event each time so the client saw progress,
// had toolsearch send 1,204 GETs in a 3 s call.
const (
	resumeRate  = rate.Limit(1) // a second
	resumeBurst = 3
)

// resumeWait waits for the operation's turn to resume a stream.
func (l *readLimit) resumeWait(ctx context.Context) error {
	l.mu.Lock()
	if l.resumes == nil {
		l.resumes = rate.NewLimiter(resumeRate, resumeBurst)
	}
	lim := l.resumes
	l.mu.Unlock()
	return lim.Wait(ctx)
}

// errEnded stops a read that goes on after its operation ended (a call
// ended by its session breaking): what it read would hold budget for good.
var errEnded = errors.New("the operation this answer was for has ended")

type readLimitKey struct{}

func withReadLimit(ctx context.Context, l *readLimit) context.Context {
	return context.WithValue(ctx, readLimitKey{}, l)
}

type repeatableKey struct{}

// repeatable marks the requests made under ctx safe to send twice (a
// listing, a ping: endpoint.Repeatable). A call never is: the upstream
// may have run it.
func repeatable(ctx context.Context) context.Context {
	return context.WithValue(ctx, repeatableKey{}, true)
}

type hopsKey struct{}

// withHops makes the requests made under ctx carry HopsHeader: n.
func withHops(ctx context.Context, n int) context.Context {
	return context.WithValue(ctx, hopsKey{}, n)
}

// charge counts n more bytes read and reports the bound they cross, if any.
func (l *readLimit) charge(n int) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.err
	}
	if l.ended {
		return errEnded
	}
	defer func() {
		if l.err != nil && l.onExceed != nil {
			l.onExceed()
		}
	}()
	l.read += int64(n)
	switch {
	case l.read > l.max:
		l.err = fmt.Errorf("%w: the upstream's answer is over the %d-byte limit (limits.upstream_max_result_bytes)", ErrResultTooLarge, l.max)
	case l.budget != nil && n > 0:
		if !l.budget.TryAcquire(int64(n)) {
			l.err = fmt.Errorf("%w: answers being read from upstreams are at the process's budget; retry shortly", ErrBudget)
			break
		}
		l.held += int64(n)
	}
	return l.err
}

// exceeded is the bound crossed, or nil.
func (l *readLimit) exceeded() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// release returns the budget this operation holds. The answer it read is
// decoded by then; what it becomes is the caller's to bound.
func (l *readLimit) release() { l.settle(false) }

// end releases the budget and stops any read still going on: the
// operation is over.
func (l *readLimit) end() { l.settle(true) }

// settle returns the budget held and, when ending, refuses later reads,
// in one hold of the lock: a read between the two would keep its charge.
func (l *readLimit) settle(ending bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.budget != nil && l.held > 0 {
		l.budget.Release(l.held)
	}
	l.held = 0
	l.ended = l.ended || ending
}

// limitedBody stops a response body at its operation's bound: the read
// fails, so the SDK gives up on the answer instead of buffering it whole.
type limitedBody struct {
	io.ReadCloser
	lim *readLimit
}

func (b *limitedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if lerr := b.lim.charge(n); lerr != nil {
		return 0, lerr
	}
	return n, err
}

// transport adds the upstream's configured headers (its credentials) to
// each request, a redirected one too (so redirects stay within the
// upstream's origin: endpoint.SameOrigin), and bounds the answer of any
// request made under a readLimit, and of every other request but the
// session stream to max: the SDK reads whole what it gets of its own
// accord (initialize's answer, an error status's body, the answer to a
// notification or to a response it posts), and an upstream answering
// initialize with an endless body had it read into memory until the
// process was killed.
type transport struct {
	headers  map[string]string
	base     http.RoundTripper
	max      int64  // limits.upstream_max_result_bytes
	instance string // Options.Instance
	// streams paces the resumes of the upstream's session streams
	// (streamReopenEvery).
	streams *rate.Limiter
	counts  *streamCounts
	// watch is told of the session's streams: set per session (connect).
	watch *sessionWatch
}

// streamCounts are an upstream's resumed streams and the calls that
// waited for it to listen again, for /metrics.
type streamCounts struct {
	callResumes, sessionResumes, redialed, sessionsLost atomic.Uint64
}

// The pace of the resumes of an upstream's session streams: the SDK asks
// for a session stream again when it ends (resumeRetries), at once if
// the upstream's retry field says so. An upstream ending it again and
// again, a new event id each time so that the SDK saw progress, had
// toolsearch ask 650 times in 2 s, for as long as the session lived.
const (
	streamReopenEvery = time.Second
	streamReopenBurst = 3
)

func (t transport) RoundTrip(r *http.Request) (*http.Response, error) {
	hops, _ := r.Context().Value(hopsKey{}).(int)
	repeat := r.Method == http.MethodPost && r.Context().Value(repeatableKey{}) != nil
	if len(t.headers) > 0 || hops > 0 || t.instance != "" || repeat {
		r = r.Clone(r.Context())
		if repeat {
			endpoint.Repeatable(r.Header)
		}
		for k, v := range t.headers {
			r.Header.Set(k, v)
		}
		if hops > 0 {
			r.Header.Set(HopsHeader, strconv.Itoa(hops))
		}
		if t.instance != "" {
			r.Header.Set(InstanceHeader, t.instance)
		}
	}
	// Resumes are paced: a call's by its own limit, the session stream's
	// by the upstream's. A session's first GET carries no Last-Event-ID
	// (nor does a reopening after events without ids, which the SDK gives
	// up on after resumeRetries), so connecting is never held up.
	lim, ok := r.Context().Value(readLimitKey{}).(*readLimit)
	if r.Method == http.MethodGet && (ok || r.Header.Get("Last-Event-ID") != "") {
		wait, n := t.streams.Wait, &t.counts.sessionResumes
		if ok {
			wait, n = lim.resumeWait, &t.counts.callResumes
		}
		n.Add(1)
		if err := wait(r.Context()); err != nil {
			return nil, err
		}
	}
	if r.Method == http.MethodGet && !ok && t.watch != nil && t.watch.held.Load() {
		// The upstream could not hold this session's stream open
		// (sessionWatch.atOnce): the SDK, which asks for it again and
		// ends the session, and every call it carries, when it cannot
		// have it, gets one that stays silent until the session closes,
		// and no request is sent. Made again each time, sessions (and
		// listings) came one every few seconds for as long as the
		// upstream served.
		return silentStream(r), nil
	}
	// A 2026-07-28 session's listening stream, which stands for the
	// session stream.
	listen := r.Header.Get("Mcp-Method") == "subscriptions/listen"
	var resp *http.Response
	var err error
	if t.watch != nil && !ok && ((r.Method == http.MethodGet && !t.watch.streamed.Load()) || listen) {
		resp, err = t.opening(r)
	} else {
		resp, err = t.base.RoundTrip(r)
	}
	if err == nil && silent(resp) {
		return resp, nil // no stream: nothing to read of it
	}
	if r.Method == http.MethodPost {
		noteAnswer(r.Context(), resp, err)
		if err == nil && t.watch != nil && blip(resp.StatusCode) && listen {
			t.watch.unopened()
		}
		if err == nil {
			if err = refusedAnswer(r, resp); err != nil {
				return nil, err
			}
		}
	}
	if err != nil {
		return nil, err
	}
	if r.Method == http.MethodGet {
		session := !ok && t.watch != nil
		if blip(resp.StatusCode) && (ok || r.Header.Get("Last-Event-ID") != "" || (session && t.watch.streamed.Load())) {
			// A stream asked for again (a call's, or the session's after
			// it ended) answered as a moment's failure (a proxy's 502
			// while the upstream restarts): an error of the transport,
			// which the SDK asks again after its wait (resumeRetries).
			// The SDK read the status as the session's end, failing
			// every call the session carried.
			resp.Body.Close()
			return nil, fmt.Errorf("answered %s", statusLine(resp.StatusCode))
		}
		switch {
		case session && (resp.StatusCode == http.StatusBadRequest || resp.StatusCode == http.StatusNotFound):
			t.watch.forgot.Store(true)
		case session && resp.StatusCode/100 == 2:
			t.watch.streamed.Store(true)
		case session && blip(resp.StatusCode):
			t.watch.unopened() // its first GET: the SDK goes on without the stream
		}
	}
	// A GET made under an operation's read limit resumes that call's
	// answer stream (Last-Event-ID): it is bounded, and its answer kept,
	// as the POST's was (and paced: resumeWait). Any other GET is the
	// session stream.
	switch {
	case ok:
		resp.Body = &limitedBody{ReadCloser: resp.Body, lim: lim}
	case r.Method == http.MethodGet || listen:
		// The session stream, or a 2026-07-28 session's listening stream,
		// which stands for it: its events are bounded one by one
		// (MaxEventSize) and paced, its length is the session's.
		paced := &pacedBody{ReadCloser: resp.Body, ctx: r.Context(), lim: rate.NewLimiter(streamRate, streamBurst)}
		resp.Body = paced
		// Only an event stream is one: a JSON answer to the listening
		// request is its refusal (method not found), which ended the
		// session as if its stream had been cut, two sessions a second.
		if t.watch != nil && resp.StatusCode/100 == 2 && eventStream(resp) {
			paced.watch, paced.listen = t.watch, listen
			t.watch.open()
		}
	default:
		resp.Body = &limitedBody{ReadCloser: resp.Body, lim: &readLimit{max: t.max}}
	}
	if k, ok := r.Context().Value(keptAnswerKey{}).(*keptAnswer); ok {
		resp.Body = k.keep(resp.Body, strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"))
	}
	return resp, nil
}

// refusalPeek bounds what is read of a refused request's answer to see
// whether it is a JSON-RPC error: error pages and JSON-RPC errors are
// small, and a larger body is read as neither.
const refusalPeek = 16 << 10

// refusedAnswer is a POST's answer outside 2xx, or a call's answered
// with a page, as an error of its request alone, when the answer is not
// a JSON-RPC error: the SDK's client (v1.8.0) closes the whole session
// over such an answer (over a page, its writes), failing every call it
// carried, and that end was counted as the upstream failing. A proxy
// answers so for one request (an error page for a body over its limit, a
// firewall's 403 or its block page sent as a 200) or for a moment (a
// CDN's 520 to 530, a 501 or 505 from a gateway, a 3xx that says nowhere
// to go), and the session is as good as before. An error from the
// transport fails its request only. What the SDK keeps the session over
// passes on: a JSON-RPC error (the upstream's answer), the statuses it
// holds transient (429, 500, 502, 503, 504) and a 404 to a session,
// which is the upstream forgetting it.
func refusedAnswer(r *http.Request, resp *http.Response) error {
	switch code := resp.StatusCode; {
	case page(resp) && wantsAnswer(r):
		// A web page where a call's answer should be (a firewall's
		// block page sent as a 200): the SDK read it as the session's
		// writes failing, so that the requests after it on the session
		// failed, and the upstream's own requests in flight (an
		// elicitation for another call) were cancelled. To a
		// notification it pays no heed.
		resp.Body.Close()
		return fmt.Errorf("answered %d with %s, not an MCP answer", code, mediaType(resp))
	case code >= 200 && code < 300,
		code == http.StatusTooManyRequests, code == http.StatusInternalServerError, code == http.StatusBadGateway,
		code == http.StatusServiceUnavailable, code == http.StatusGatewayTimeout,
		code == http.StatusNotFound && r.Header.Get("Mcp-Session-Id") != "",
		redirect(code) && resp.Header.Get("Location") != "": // for the client to follow (endpoint.SameOrigin)
		return nil
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, refusalPeek+1))
	if err == nil && len(b) <= refusalPeek {
		if msg, derr := jsonrpc.DecodeMessage(b); derr == nil {
			if res, ok := msg.(*jsonrpc.Response); ok && res.Error != nil {
				resp.Body = struct {
					io.Reader
					io.Closer
				}{bytes.NewReader(b), resp.Body}
				return nil
			}
		}
	}
	resp.Body.Close()
	return fmt.Errorf("answered %s", statusLine(resp.StatusCode))
}

// statusLine is a status code with its text, when Go knows one.
func statusLine(code int) string {
	return strings.TrimSuffix(fmt.Sprintf("%d %s", code, http.StatusText(code)), " ")
}

// blip reports whether a status says the upstream, or the proxy before
// it, failed for a moment: a timeout, too many requests, a server error.
func blip(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500
}

// wantsAnswer reports whether r carries a JSON-RPC request that wants
// an answer (not a notification). It reads the body again, which only a
// rare answer asks for.
func wantsAnswer(r *http.Request) bool {
	if r.GetBody == nil {
		return false
	}
	body, err := r.GetBody()
	if err != nil {
		return false
	}
	defer body.Close()
	b, err := io.ReadAll(body) // what toolsearch itself sent
	if err != nil {
		return false
	}
	msg, err := jsonrpc.DecodeMessage(b)
	req, ok := msg.(*jsonrpc.Request)
	return err == nil && ok && req.IsCall()
}

func redirect(code int) bool {
	switch code {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// The pace of an upstream's session stream: what the upstream sends of
// its own accord, notices and requests, which are few and small (a call's
// resumed stream is bounded as its answer instead). Unpaced, an upstream
// writing 100-byte log notices as fast as it could kept 1.6 of
// toolsearch's cores busy for a hundredth of one of its own, and a flood
// of pings as many replies.
const (
	streamRate  = rate.Limit(32 << 10) // bytes a second
	streamBurst = 64 << 10
)

// sessionWatch is told of one session's streams: when its
// subscriptions/listen stream ends while the session is in use, and when
// its session stream is answered as a session the upstream forgot
// (forgot). A 2026-07-28 upstream sends list_changed
// only on that stream, and the SDK, once the stream has ended (the
// upstream restarted, a proxy cut it), neither opens it again nor says
// so: toolsearch saw no change of tools until the next refresh, minutes
// later, with the upstream shown connected.
type sessionWatch struct {
	mu    sync.Mutex
	cs    *mcp.ClientSession
	ended bool
	lost  func(*mcp.ClientSession)
	// again reports whether a session whose stream did not open is to
	// be made again (once an episode: ended by a stream that opens,
	// opened), since the SDK goes on without the stream.
	again  func() bool
	opened func()
	// atOnce counts a stream that ended as soon as it opened, and
	// reports whether they have, one after another, too often to ask
	// for one again (briefStreams; the count is ended by a stream that
	// stays open, opened).
	atOnce func() bool
	// forgot is set when the session's stream (its GET, opened again
	// after it ended) is answered 400 or 404: the upstream restarted and
	// forgot the session (a 400 from servers built after the TypeScript
	// SDK's express example, such as server-everything), which the SDK
	// reports as a plain "Bad Request".
	forgot atomic.Bool
	// streamed is set once the session stream has been answered: a GET
	// for it after that opens it again.
	streamed atomic.Bool
	// listening is set while the session's stream (its GET, or at
	// 2026-07-28 its listening stream) is open: list_changed comes on no
	// other (Status.ListChanged).
	listening atomic.Bool
	// lasted is set once the stream last opened has stayed open for
	// briefStream; opens counts its openings, so that a timer knows its
	// own.
	lasted atomic.Bool
	opens  atomic.Int64
	// held is set when the upstream's streams have ended at once too
	// often (atOnce): the session goes on without one, and the SDK's
	// asks for it again are answered with a silent one (silentStream).
	held atomic.Bool
}

// A session's stream must stay open briefStream to count as one. An
// upstream (or a proxy) that ends it at once, briefStreams times in a
// row, cannot hold it: asking again, or making the session again (which
// lists every tool), looped, one to two sessions a second for as long
// as the upstream served. A stream cut at once now and then (a proxy
// restarting) is asked for again as before.
const (
	briefStream  = time.Second
	briefStreams = 2
)

// open is told that the session's stream opened. Once it has stayed open
// for briefStream, the episode of streams that would not open is over.
func (w *sessionWatch) open() {
	n := w.opens.Add(1)
	w.lasted.Store(false)
	w.listening.Store(true)
	time.AfterFunc(briefStream, func() {
		if w.opens.Load() == n && w.listening.Load() {
			w.lasted.Store(true)
			w.opened()
		}
	})
}

// closed is told that the session's stream ended, not by the session's
// own close; listen says it was a 2026-07-28 listening stream, read that
// it carried something.
func (w *sessionWatch) closed(listen, read bool) {
	w.listening.Store(false)
	switch {
	case listen && !read:
		// An upstream that cannot listen answers at once, with an empty
		// stream: the session goes on without one.
	case !w.lasted.Load() && w.atOnce():
		w.held.Store(true)
	case listen:
		// The SDK neither opens it again nor says it ended: the next
		// session opens it.
		w.end()
	}
}

// bind names the session the stream belongs to, once it is made: the
// stream may end before Connect returns.
func (w *sessionWatch) bind(cs *mcp.ClientSession) {
	w.mu.Lock()
	w.cs = cs
	ended := w.ended
	w.mu.Unlock()
	if ended {
		w.lost(cs)
	}
}

// unopened is told that the session's stream did not open for a
// moment's failure (a proxy's 502 page): the SDK went on without it, and
// list_changed, which comes on no other, went unheard until the refresh.
// The session is ended, as one whose stream ended is, so that the next
// opens it; once an episode, so an upstream whose stream never opens is
// not connected to again and again.
func (w *sessionWatch) unopened() {
	if w.again() {
		w.end()
	}
}

func (w *sessionWatch) end() {
	w.mu.Lock()
	cs, ended := w.cs, w.ended
	w.ended = true
	w.mu.Unlock()
	if !ended && cs != nil {
		w.lost(cs)
	}
}

// pacedBody reads a session stream no faster than its limiter allows
// and, if it has a watch, tells it when the stream ends by the
// upstream's doing (or the network's): not when the session's own close
// cancels it.
type pacedBody struct {
	io.ReadCloser
	ctx    context.Context
	lim    *rate.Limiter
	watch  *sessionWatch
	listen bool        // a 2026-07-28 listening stream
	read   atomic.Bool // it carried something
	ended  atomic.Bool
}

func (b *pacedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p[:min(len(p), b.lim.Burst())])
	if werr := b.lim.WaitN(b.ctx, n); werr != nil {
		err, n = werr, 0 // the session is closing
	}
	if n > 0 {
		b.read.Store(true)
	}
	if err != nil {
		b.end()
	}
	return n, err
}

// Close is an end too: the SDK stops reading a stream it cannot decode.
func (b *pacedBody) Close() error {
	b.end()
	return b.ReadCloser.Close()
}

func (b *pacedBody) end() {
	if b.watch == nil || !b.ended.CompareAndSwap(false, true) {
		return
	}
	if b.ctx.Err() != nil {
		b.watch.listening.Store(false)
		return
	}
	b.watch.closed(b.listen, b.read.Load())
}

// streamHeaders bounds how long a session's stream may take to be
// answered as it opens.
const streamHeaders = 2 * time.Second

// opening sends the request that opens a session's stream (its first
// GET, or a 2026-07-28 subscriptions/listen). The SDK's Connect waits
// for its answer: a proxy that holds an event stream's headers until
// its body is done, or an upstream that sends none before its first
// event, kept toolsearch from connecting at all ("connect: context
// deadline exceeded", every tool gone). Past streamHeaders the request
// is given up and the SDK answered with a silent stream: the session
// goes on without one (ListChangedNoStream).
func (t transport) opening(r *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(r.Context())
	type answer struct {
		resp *http.Response
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		resp, err := t.base.RoundTrip(r.WithContext(ctx))
		done <- answer{resp, err}
	}()
	timer := time.NewTimer(streamHeaders)
	defer timer.Stop()
	select {
	case a := <-done:
		if a.err != nil {
			cancel()
			return nil, a.err
		}
		a.resp.Body = &cancelBody{ReadCloser: a.resp.Body, cancel: cancel}
		return a.resp, nil
	case <-timer.C:
		cancel()
		go func() {
			if a := <-done; a.err == nil {
				a.resp.Body.Close()
			}
		}()
		return silentStream(r), nil
	}
}

// cancelBody ends its request's context once closed.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// silentStream is an answer to r that is an event stream carrying
// nothing, until r's context ends or the answer is closed.
func silentStream(r *http.Request) *http.Response {
	body := &silentBody{ctx: r.Context(), closed: make(chan struct{})}
	return &http.Response{Status: "200 OK", StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: body, ContentLength: -1, Request: r}
}

func silent(resp *http.Response) bool {
	_, ok := resp.Body.(*silentBody)
	return ok
}

type silentBody struct {
	ctx    context.Context
	once   sync.Once
	closed chan struct{}
}

func (b *silentBody) Read([]byte) (int, error) {
	select {
	case <-b.ctx.Done():
		return 0, b.ctx.Err()
	case <-b.closed:
		return 0, io.EOF
	}
}

func (b *silentBody) Close() error {
	b.once.Do(func() { close(b.closed) })
	return nil
}
