// Package pause waits for a while unless the work it pauses is called
// off: the one way the packages under pkg sleep in their retries,
// backoffs and paced loops (cmd, outside internal's reach, has its own).
package pause

import (
	"context"
	"time"
)

// For waits d, or until ctx is done, and then says which: nil, or ctx's
// error.
func For(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
