package serveproc

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// Interruptible is a harness's context: the first interrupt or SIGTERM
// ends it, so run returns through its deferred cleanup (its servers
// stopped, its temporary directory removed), and the next one kills the
// harness at once, as if it had not been caught.
func Interruptible() (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	return ctx, stop
}
