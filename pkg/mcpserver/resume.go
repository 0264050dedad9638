package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolsearch/toolsearch/pkg/sizing"
)

// What the event store keeps, in all and per session. A streamed call's
// events are its progress, any question it asks, and its result (up to
// limits.upstream_max_result_bytes): kept so that a client whose
// connection broke mid-call reconnects with Last-Event-ID and reads the
// rest, where before it never had the result (the SDK's client waits
// for it until its own deadline). Past these bounds the oldest streams
// go first: a client resuming one of those is answered 400, and would
// have lost the result without a store anyway.
const (
	resumeBytes          = sizing.ResumeBytes // the memory rule counts it
	resumeStreamsSession = 8                  // the latest streamed calls of a session; its GET stream besides
	resumeEventMax       = resumeBytes / 2    // an event over this is not kept, nor is its stream
)

// errNotKept is After's answer for a stream the store does not hold: one
// answered as plain JSON, which no client resumes, or one let go.
var errNotKept = errors.New("the stream's events are not kept")

// resumeStore is the MCP event store (mcp.EventStore). The SDK's
// MemoryEventStore bounds its bytes but keeps an entry for every stream
// of a session until the session ends, so a long session of searches
// grew it without bound. This one keeps only what can be resumed:
// streamed calls (Handler marks them in the request's context) and each
// session's GET stream, a few streams a session, and lets the oldest
// stream go first, whichever session holds it. Finding that stream reads
// every stream held, at most resumeStreamsSession+1 for each of the
// sessions the registry allows (sessions.go): a few thousand pointers,
// read only when the store is full.
type resumeStore struct {
	mu       sync.Mutex
	bytes    int // of events held, in all
	seq      uint64
	sessions map[string][]*keptStream // oldest first
	resumes  *prometheus.CounterVec   // by outcome: replayed, not_kept, let_go
}

type keptStream struct {
	id    string
	seq   uint64 // opening order, across sessions
	first int    // the stream index of data[0]
	data  [][]byte
	size  int
}

// Outcomes of a resume: the events after its Last-Event-ID replayed,
// its stream not kept, or its events let go.
var resumeOutcomes = []string{"replayed", "not_kept", "let_go"}

// newResumeStore registers its metrics with reg, when not nil.
func newResumeStore(reg prometheus.Registerer) *resumeStore {
	s := &resumeStore{sessions: map[string][]*keptStream{}}
	s.resumes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "toolsearch_mcp_resumes_total",
		Help: "MCP streams a client resumed with Last-Event-ID, by outcome: replayed, or refused 400 because the stream was not kept (not_kept) or its events were let go (let_go).",
	}, []string{"outcome"})
	for _, o := range resumeOutcomes {
		s.resumes.WithLabelValues(o)
	}
	held := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "toolsearch_mcp_resume_bytes",
		Help: "Bytes of MCP stream events kept for clients to resume, of the store's bound.",
	}, func() float64 {
		s.mu.Lock()
		defer s.mu.Unlock()
		return float64(s.bytes)
	})
	if reg != nil {
		reg.MustRegister(s.resumes, held)
	}
	return s
}

var _ mcp.EventStore = (*resumeStore)(nil)

type resumableKey struct{}

// resumable marks ctx as a request whose stream is kept for resuming.
func resumable(ctx context.Context) context.Context {
	return context.WithValue(ctx, resumableKey{}, true)
}

// Open keeps the stream when it can be resumed: a streamed call's, or
// the session's GET stream (id ""), whose list_changed notifications a
// client reconnecting after a break would otherwise miss.
func (s *resumeStore) Open(ctx context.Context, session, stream string) error {
	if keep, _ := ctx.Value(resumableKey{}).(bool); !keep && stream != "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	streams := s.sessions[session]
	if slices.ContainsFunc(streams, func(k *keptStream) bool { return k.id == stream }) {
		return nil
	}
	calls := 0
	for _, k := range streams {
		if k.id != "" {
			calls++
		}
	}
	if calls >= resumeStreamsSession && stream != "" {
		at := slices.IndexFunc(streams, func(k *keptStream) bool { return k.id != "" })
		s.bytes -= streams[at].size
		streams = slices.Delete(streams, at, at+1)
	}
	s.seq++
	s.sessions[session] = append(streams, &keptStream{id: stream, seq: s.seq})
	return nil
}

// Append keeps data as the stream's next event, if the stream is kept,
// tamed as the POST's own stream writes it (tamingWriter): a resume's GET
// is written as the SDK replays it.
func (s *resumeStore) Append(_ context.Context, session, stream string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, at := s.find(session, stream)
	if k == nil {
		return nil
	}
	data = tameResponse(data)
	if len(data) > resumeEventMax {
		// Kept without it, the stream would replay with a hole.
		s.bytes -= k.size
		s.sessions[session] = slices.Delete(s.sessions[session], at, at+1)
		return nil
	}
	k.data = append(k.data, data)
	k.size += len(data)
	s.bytes += len(data)
	for s.bytes > resumeBytes && s.dropOldest() {
	}
	return nil
}

// dropOldest lets go of the oldest event held, of the stream opened
// first among those holding any; false when none holds any.
func (s *resumeStore) dropOldest() bool {
	var oldest *keptStream
	for _, streams := range s.sessions {
		for _, k := range streams {
			if k.size > 0 && (oldest == nil || k.seq < oldest.seq) {
				oldest = k
			}
		}
	}
	if oldest == nil {
		return false
	}
	for len(oldest.data) > 0 {
		n := len(oldest.data[0])
		oldest.data[0] = nil
		oldest.data = oldest.data[1:]
		oldest.first++
		oldest.size -= n
		s.bytes -= n
		if n > 0 {
			break
		}
	}
	return true
}

// After yields the stream's events after index, or an error when they
// are not all held.
func (s *resumeStore) After(_ context.Context, session, stream string, index int) iter.Seq2[[]byte, error] {
	s.mu.Lock()
	var (
		data [][]byte
		err  error
	)
	outcome := "replayed"
	switch k, _ := s.find(session, stream); {
	case k == nil:
		err, outcome = errNotKept, "not_kept"
	case index+1 < k.first:
		err, outcome = fmt.Errorf("events up to %d were let go: %w", k.first-1, mcp.ErrEventsPurged), "let_go"
	case index+1-k.first < len(k.data):
		data = slices.Clone(k.data[index+1-k.first:])
	}
	s.mu.Unlock()
	if index >= 0 { // a Last-Event-ID; the SDK asks for -1 on every GET stream it opens
		s.resumes.WithLabelValues(outcome).Inc()
	}
	return func(yield func([]byte, error) bool) {
		if err != nil {
			yield(nil, err)
			return
		}
		for _, d := range data {
			if !yield(d, nil) {
				return
			}
		}
	}
}

// SessionClosed lets go of the session's streams.
func (s *resumeStore) SessionClosed(_ context.Context, session string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range s.sessions[session] {
		s.bytes -= k.size
	}
	delete(s.sessions, session)
	return nil
}

func (s *resumeStore) find(session, stream string) (*keptStream, int) {
	streams := s.sessions[session]
	at := slices.IndexFunc(streams, func(k *keptStream) bool { return k.id == stream })
	if at < 0 {
		return nil, -1
	}
	return streams[at], at
}
