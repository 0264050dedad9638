package mcpserver

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// dedup is the SDK's log handler: each distinct message is written once a
// window, and its first line of the next window says how many of the
// window before were left out. The SDK logs per
// session (a list_changed that a session without a GET stream cannot
// receive is one line per session per change), which made forty lines of
// one event; a caller must not be able to make the log grow per request.
type dedup struct {
	next   slog.Handler
	window time.Duration
	now    func() time.Time
	state  *dedupState // shared by the handlers WithAttrs and WithGroup derive
}

type dedupState struct {
	mu      sync.Mutex
	started time.Time
	seen    map[string]int // message -> lines left out this window
	prev    map[string]int // the same, of the window before
}

// maxDedupKeys bounds the messages remembered in one window; past it a
// new message is written and not remembered.
const maxDedupKeys = 256

func newDedup(next slog.Handler, window time.Duration) *dedup {
	return &dedup{next: next, window: window, now: time.Now, state: &dedupState{seen: map[string]int{}, prev: map[string]int{}}}
}

func (d *dedup) Enabled(ctx context.Context, l slog.Level) bool { return d.next.Enabled(ctx, l) }

func (d *dedup) Handle(ctx context.Context, r slog.Record) error {
	st := d.state
	st.mu.Lock()
	now := d.now()
	if now.Sub(st.started) > d.window {
		st.started, st.prev, st.seen = now, st.seen, map[string]int{}
	}
	left, seen := st.seen[r.Message]
	switch {
	case seen:
		st.seen[r.Message] = left + 1
		st.mu.Unlock()
		return nil
	case len(st.seen) < maxDedupKeys:
		st.seen[r.Message] = 0
	}
	before := st.prev[r.Message]
	st.mu.Unlock()
	if before > 0 {
		r = r.Clone()
		r.AddAttrs(slog.Int("left_out_before", before), slog.Duration("window", d.window))
	}
	return d.next.Handle(ctx, r)
}

func (d *dedup) WithAttrs(as []slog.Attr) slog.Handler {
	return &dedup{next: d.next.WithAttrs(as), window: d.window, now: d.now, state: d.state}
}

func (d *dedup) WithGroup(name string) slog.Handler {
	return &dedup{next: d.next.WithGroup(name), window: d.window, now: d.now, state: d.state}
}
