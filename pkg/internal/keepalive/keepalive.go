// Package keepalive makes, for tests, the race a server's keep-alive
// timeout sets its clients: a request sent on a connection as the server
// closes it for being idle is lost unanswered. Node's http server and
// uvicorn close at 5 s; a client that keeps its connections longer meets
// the race now and then, which a test could not count on meeting.
package keepalive

import (
	"io"
	"net"
	"sync"
	"time"
)

// Listener wraps l so that a request arriving on a connection idle for
// longer than idle (since the server's last write) finds it closed: the
// request is read, dropped, and the connection closed unanswered, always.
func Listener(l net.Listener, idle time.Duration) net.Listener {
	return listener{Listener: l, idle: idle}
}

type listener struct {
	net.Listener
	idle time.Duration
}

func (l listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &conn{Conn: c, idle: l.idle}, nil
}

type conn struct {
	net.Conn
	idle time.Duration
	mu   sync.Mutex
	last time.Time // the server's last write
}

func (c *conn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.last = time.Now()
	c.mu.Unlock()
	return c.Conn.Write(p)
}

func (c *conn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	stale := n > 0 && !c.last.IsZero() && time.Since(c.last) > c.idle
	c.mu.Unlock()
	if stale {
		c.Conn.Close()
		return 0, io.EOF
	}
	return n, err
}
