// Package wait is a pause that ends early when its context does: the
// pacing of the services' background loops.
package wait

import (
	"context"
	"time"
)

// Sleep waits d (not at all when d <= 0) and reports whether ctx is
// still live.
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
