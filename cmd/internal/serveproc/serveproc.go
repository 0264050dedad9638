// Package serveproc runs the toolsearch binary as its own process, as an
// operator would, for the measuring harnesses (cmd/scale, cmd/replay,
// cmd/hostile, cmd/reliability): on a free loopback port, until it answers
// /readyz; and reads its memory from /proc.
package serveproc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/toolsearch/toolsearch/pkg/logbuf"
)

// Server is a running `toolsearch serve`.
type Server struct {
	// Base is its API's URL (http://127.0.0.1:PORT), Addr its host and
	// port alone, for a test's own connections.
	Base, Addr string
	cmd        *exec.Cmd
	done       chan error
	logs       *logbuf.Buffer
}

// logTail is how much of the process's output is kept: what Logs
// shows when something fails.
const logTail = 4096

// Start runs bin serve with args on a free port (Start adds -addr), with
// env added to this process's environment, and returns once /readyz
// answers 200 (polled every millisecond, so a caller may time it), or
// fails when the process exits first or ready passes. With
// -tls-cert-file in args the API is served over HTTPS (Base says so), and
// /readyz is polled where probes read it, on -metrics-addr.
//
// A port found free is free only until something binds it: when the
// process exits because another took its port first, Start tries again
// on another, up to three times.
func Start(ctx context.Context, bin string, env []string, ready time.Duration, args ...string) (*Server, error) {
	for try := 1; ; try++ {
		s, err := start(ctx, bin, env, ready, args)
		if !errors.Is(err, errPortTaken) || try == 3 {
			return s, err
		}
	}
}

// errPortTaken is a server's exit for a port another process took.
var errPortTaken = errors.New("port taken")

func start(ctx context.Context, bin string, env []string, ready time.Duration, args []string) (*Server, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, bin, append([]string{"serve", "-addr", addr}, args...)...)
	cmd.Env = append(cmd.Environ(), env...)
	s := &Server{Base: "http://" + addr, Addr: addr, cmd: cmd, done: make(chan error, 1), logs: &logbuf.Buffer{Tail: logTail}}
	probe := s.Base
	if i := slices.Index(args, "-tls-cert-file"); i >= 0 {
		s.Base = "https://" + addr
		j := slices.Index(args, "-metrics-addr")
		if j < 0 || j+1 >= len(args) || args[j+1] == "off" {
			return nil, errors.New("serveproc: a server of HTTPS needs -metrics-addr, where its readiness is read")
		}
		probe = "http://" + args[j+1]
	}
	cmd.Stdout, cmd.Stderr = s.logs, s.logs
	DieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() { s.done <- cmd.Wait() }()
	client := &http.Client{Timeout: 10 * time.Second}
	deadline := time.Now().Add(ready)
	for {
		if resp, err := client.Get(probe + "/readyz"); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		select {
		case err := <-s.done:
			s.done <- err
			if strings.Contains(s.Logs(), "listen tcp "+addr+": bind: address already in use") {
				err = fmt.Errorf("%w: %v", errPortTaken, err)
			}
			return nil, fmt.Errorf("the server exited before it was ready (%w): %s", err, s.Logs())
		case <-time.After(time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("the server was not ready in %v: %s", ready, s.Logs())
		}
	}
}

// FreeAddr is a loopback address with a port free when asked, for a
// listener of the process's beyond its API's (-metrics-addr). It never
// gives a port it gave before: a caller's metrics port and Start's API
// port, found free in a row before either is bound, could be the same.
func FreeAddr() (string, error) {
	givenMu.Lock()
	defer givenMu.Unlock()
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		addr := ln.Addr().String()
		ln.Close()
		if !given[addr] {
			given[addr] = true
			return addr, nil
		}
	}
	return "", errors.New("serveproc: no free port not given before")
}

var (
	givenMu sync.Mutex
	given   = map[string]bool{}
)

// freeAddr is Start's FreeAddr; a test gives it a port already taken.
var freeAddr = FreeAddr

// Pid is the process's id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Logs is the end of what the process wrote (its last 4 KiB).
func (s *Server) Logs() string { return s.logs.String() }

// Stop kills the process and waits for it.
func (s *Server) Stop() {
	s.cmd.Process.Kill()
	err := <-s.done
	s.done <- err
}

// Memory reads one of the process's memory figures, in bytes, from
// /proc/PID/status: VmRSS (resident now) or VmHWM (the peak since start
// or ResetPeak).
func (s *Server) Memory(field string) (int64, error) { return memory(s.Pid(), field) }

func memory(pid int, field string) (int64, error) {
	v, err := status(pid, field)
	if err != nil {
		return 0, err
	}
	kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(v, "kB")), 10, 64)
	return kb << 10, err
}

// status is the value of one field of /proc/PID/status, trimmed.
func status(pid int, field string) (string, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			return strings.TrimSpace(v), nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", errors.New(field + " not in /proc status")
}

// CPU is the processor time the process has used so far, user and
// system, from /proc/PID/stat: on a machine shared with a fake provider
// and other work, what a change saved shows here when wall time hides it.
func (s *Server) CPU() (time.Duration, error) { return cpu(s.Pid()) }

func cpu(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return statCPU(b)
}

// statCPU reads utime and stime from a /proc/PID/stat line. The command's
// name, in parentheses, may hold spaces and parentheses: fields are
// counted after the last ')'. utime and stime are the 14th and 15th
// fields, in clock ticks, which Linux gives user space at 100 a second.
func statCPU(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("no command name in /proc stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, errors.New("/proc stat is short")
	}
	utime, err := strconv.ParseInt(f[11], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("/proc stat utime: %w", err)
	}
	stime, err := strconv.ParseInt(f[12], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("/proc stat stime: %w", err)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}

// ResetPeak starts VmHWM again from the resident set now, so that it
// measures what comes next (a rebuild, a scenario) alone.
func (s *Server) ResetPeak() error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", s.Pid()), []byte("5"), 0)
}
