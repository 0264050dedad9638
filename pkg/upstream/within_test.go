package upstream

import (
	"context"
	"errors"
	"testing"
	"time"
)

type fakeSession struct{ closed chan struct{} }

func (f *fakeSession) Close() error { close(f.closed); return nil }

// TestWithin: a connect that outlives its context (the SDK's Connect
// closing a half-made session on a context of its own, against an
// upstream that never answers) does not hold its caller: within answers
// ctx's error while connect still runs, and closes a session connect
// makes after that. Connect here ignores its context and returns only
// when the test lets it, after within has answered: a within that waited
// for it would never answer.
func TestWithin(t *testing.T) {
	errRefused := errors.New("refused")
	for _, tt := range []struct {
		name      string
		late      bool  // connect returns only after ctx is done and within has answered
		err       error // what connect returns
		wantErr   error
		wantClose bool // the session connect made is closed by within
	}{
		{name: "connected", wantErr: nil},
		{name: "failed", err: errRefused, wantErr: errRefused},
		{name: "connected after the deadline", late: true, wantErr: context.Canceled, wantClose: true},
		{name: "failed after the deadline", late: true, err: errRefused, wantErr: context.Canceled},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			release := make(chan struct{})
			made := &fakeSession{closed: make(chan struct{})}
			connect := func(context.Context) (*fakeSession, error) {
				if tt.late {
					<-release
				}
				if tt.err != nil {
					return nil, tt.err
				}
				return made, nil
			}
			type answer struct {
				s   *fakeSession
				err error
			}
			got := make(chan answer, 1)
			go func() {
				s, err := within(ctx, connect)
				got <- answer{s, err}
			}()
			if tt.late {
				cancel()
			}
			var a answer
			select {
			case a = <-got:
			case <-time.After(10 * time.Second): // a failure detector, not a measure: connect never returns unless released
				close(release)
				t.Fatal("within waited for a connect that outlived its context")
			}
			close(release)
			if !errors.Is(a.err, tt.wantErr) {
				t.Errorf("error %v, want %v", a.err, tt.wantErr)
			}
			if tt.wantErr == nil && a.s != made {
				t.Errorf("session %v, want the one connect made", a.s)
			}
			if tt.wantErr != nil && a.s != nil {
				t.Errorf("a session (%v) with the error", a.s)
			}
			if tt.wantClose {
				select {
				case <-made.closed:
				case <-time.After(10 * time.Second):
					t.Error("the session made after the deadline was never closed")
				}
				return
			}
			select {
			case <-made.closed:
				t.Error("within closed a session it did not abandon")
			default:
			}
		})
	}
}

type blockingCloser struct {
	release chan struct{}
	closed  chan struct{}
}

func (b *blockingCloser) Close() error {
	<-b.release
	close(b.closed)
	return nil
}

// TestCloseWithin: a close that answers at once is waited for; one held by
// a hung upstream is waited for no longer than the bound. The held close
// is released only after closeWithin has returned: one that waited for it
// would never return.
func TestCloseWithin(t *testing.T) {
	for _, tt := range []struct {
		name string
		held bool
		wait time.Duration
	}{{"answers", false, time.Minute}, {"held", true, 10 * time.Millisecond}} {
		t.Run(tt.name, func(t *testing.T) {
			c := &blockingCloser{release: make(chan struct{}), closed: make(chan struct{})}
			if !tt.held {
				close(c.release)
			}
			returned := make(chan struct{})
			go func() {
				closeWithin(c, tt.wait)
				close(returned)
			}()
			select {
			case <-returned:
			case <-time.After(10 * time.Second): // a failure detector: the held close never ends unless released
				close(c.release)
				t.Fatal("closeWithin waited for a close that never ended, or past its bound")
			}
			if tt.held {
				close(c.release)
			} else {
				select {
				case <-c.closed:
				default:
					t.Error("closeWithin returned before a close that answers at once had ended")
				}
			}
		})
	}
}
