package mcpserver

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/toolsearch/toolsearch/pkg/redact"
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

// maxLogText bounds the SDK's message and each of its values in a line.
// The SDK formats errors into its messages and logs what a caller sent
// (a log level, a resource's URI, a method) as it came: up to the 1 MiB
// body, in the log and, as a message, remembered for a window.
const maxLogText = 256

// bounded is r with its message and values clipped to maxLogText bytes,
// a value of any other kind than a number, a bool, a time or a duration
// written as text first.
func bounded(r slog.Record) slog.Record {
	out := slog.NewRecord(r.Time, r.Level, redact.Clip(r.Message, maxLogText, "…"), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(boundedAttr(a))
		return true
	})
	return out
}

func boundedAttr(a slog.Attr) slog.Attr {
	a.Key = redact.Clip(a.Key, maxLogText, "…")
	switch v := a.Value.Resolve(); v.Kind() {
	case slog.KindInt64, slog.KindUint64, slog.KindFloat64, slog.KindBool, slog.KindDuration, slog.KindTime:
		a.Value = v
	case slog.KindGroup:
		group := v.Group()
		as := make([]slog.Attr, len(group))
		for i, g := range group {
			as[i] = boundedAttr(g)
		}
		a.Value = slog.GroupValue(as...)
	case slog.KindString:
		a.Value = slog.StringValue(redact.Clip(v.String(), maxLogText, "…"))
	default:
		a.Value = slog.StringValue(redact.Clip(fmt.Sprint(v.Any()), maxLogText, "…"))
	}
	return a
}

func newDedup(next slog.Handler, window time.Duration) *dedup {
	return &dedup{next: next, window: window, now: time.Now, state: &dedupState{seen: map[string]int{}, prev: map[string]int{}}}
}

func (d *dedup) Enabled(ctx context.Context, l slog.Level) bool { return d.next.Enabled(ctx, l) }

func (d *dedup) Handle(ctx context.Context, r slog.Record) error {
	r = bounded(r)
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
	bs := make([]slog.Attr, len(as))
	for i, a := range as {
		bs[i] = boundedAttr(a)
	}
	return &dedup{next: d.next.WithAttrs(bs), window: d.window, now: d.now, state: d.state}
}

func (d *dedup) WithGroup(name string) slog.Handler {
	return &dedup{next: d.next.WithGroup(name), window: d.window, now: d.now, state: d.state}
}
