// Package serveproc runs the toolsearch binary as its own process, as an
// operator would, for the measuring harnesses (cmd/scale, cmd/replay): on
// a free loopback port, until it answers /readyz.
package serveproc

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"time"

	"github.com/toolsearch/toolsearch/pkg/logbuf"
)

// Server is a running `toolsearch serve`.
type Server struct {
	// Base is its API's URL (http://127.0.0.1:PORT).
	Base string
	cmd  *exec.Cmd
	done chan error
	logs *logbuf.Buffer
}

// Start runs bin serve with args on a free port (Start adds -addr), with
// env added to this process's environment, and returns once /readyz
// answers 200 (polled every millisecond, so a caller may time it), or
// fails when the process exits first or ready passes.
func Start(ctx context.Context, bin string, env []string, ready time.Duration, args ...string) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.CommandContext(ctx, bin, append([]string{"serve", "-addr", addr}, args...)...)
	cmd.Env = append(cmd.Environ(), env...)
	s := &Server{Base: "http://" + addr, cmd: cmd, done: make(chan error, 1), logs: &logbuf.Buffer{}}
	cmd.Stdout, cmd.Stderr = s.logs, s.logs
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() { s.done <- cmd.Wait() }()
	client := &http.Client{Timeout: 10 * time.Second}
	deadline := time.Now().Add(ready)
	for {
		if resp, err := client.Get(s.Base + "/readyz"); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		select {
		case err := <-s.done:
			s.done <- err
			return nil, fmt.Errorf("the server exited before it was ready (%v): %s", err, s.Logs())
		case <-time.After(time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("the server was not ready in %v: %s", ready, s.Logs())
		}
	}
}

// Pid is the process's id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Logs is the end of what the process wrote (its last 4 KiB).
func (s *Server) Logs() string {
	out := s.logs.String()
	if len(out) > 4096 {
		out = "…" + out[len(out)-4096:]
	}
	return out
}

// Stop kills the process and waits for it.
func (s *Server) Stop() {
	s.cmd.Process.Kill()
	err := <-s.done
	s.done <- err
}
