package deploy

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// proc is a process run for the test's life, its output in a log file
// that is shown when the test fails.
type proc struct {
	cmd    *exec.Cmd
	log    string
	exited chan struct{} // closed once the process is gone
}

// start runs name with args (env, when not nil, is its environment).
func start(t *testing.T, env []string, name string, args ...string) *proc {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), filepath.Base(name)+".log")
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(name, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	p := &proc{cmd: cmd, log: logPath, exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		log.Close()
		close(p.exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.exited
		if t.Failed() {
			t.Logf("%s's log, last lines:\n%s", filepath.Base(name), p.tail(4000))
		}
	})
	return p
}

// tail is the end of the process's log, at most n bytes.
func (p *proc) tail(n int) string {
	b, _ := os.ReadFile(p.log)
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

// errPortTaken: the process exited because a port it was given was bound
// by then.
var errPortTaken = errors.New("a port it was given was taken")

// wait polls ready until it returns nil, the process exits or timeout
// passes.
func (p *proc) wait(timeout time.Duration, ready func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := ready()
		if err == nil {
			return nil
		}
		select {
		case <-p.exited:
			if strings.Contains(p.tail(1<<20), "address already in use") {
				return errPortTaken
			}
			return fmt.Errorf("it exited (%v): %s", p.cmd.ProcessState, p.tail(2000))
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready in %s: %v", timeout, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// startOnPorts starts a server on n loopback ports found free and waits
// until ready answers. A port found free may be bound by another process
// before the server binds it, which then exits saying so: it is started
// again on other ports, up to three times. args and ready are given the
// ports.
func startOnPorts(t *testing.T, n int, timeout time.Duration, env []string, name string, args func(ports []string) []string, ready func(ports []string) error) (*proc, []string) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		ports := make([]string, n)
		for i := range ports {
			ports[i] = pickPort(t)
		}
		p := start(t, env, name, args(ports)...)
		err := p.wait(timeout, func() error { return ready(ports) })
		if err == nil {
			return p, ports
		}
		if !errors.Is(err, errPortTaken) || attempt == 3 {
			t.Fatalf("%s on ports %v: %v", filepath.Base(name), ports, err)
		}
		t.Logf("%s on ports %v: %v; again on others", filepath.Base(name), ports, err)
	}
}

// serve starts toolsearch serve with args(addrs) on n loopback addresses
// found free, learning into the test's own directory rather than a
// toolsearch-learned.db beside the manifests, and waits until ready(addrs).
func serve(t *testing.T, n int, args func(addrs []string) []string, ready func(addrs []string) error) (*proc, []string) {
	t.Helper()
	env := append(os.Environ(), "TOOLSEARCH_LEARNING_PATH="+filepath.Join(t.TempDir(), "learned.db"))
	addrs := func(ports []string) []string {
		a := make([]string, len(ports))
		for i, p := range ports {
			a[i] = "127.0.0.1:" + p
		}
		return a
	}
	p, ports := startOnPorts(t, n, 30*time.Second, env, toolsearch(t), func(ports []string) []string {
		return append([]string{"serve"}, args(addrs(ports))...)
	}, func(ports []string) error { return ready(addrs(ports)) })
	return p, addrs(ports)
}

// listening is nil once addr takes connections.
func listening(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
	}
	return err
}

// readyz is nil once GET url answers 200; the client trusts any
// certificate, since it asks only whether the server is up.
func readyz(url string) error {
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}

// freeAddr is a loopback address with a port free a moment ago, never
// one it gave before: taken in a row before anything binds them (etcd's
// client and peer ports, a server's API and metrics), two ports found free
// could be the same one.
func freeAddr(t *testing.T) string {
	t.Helper()
	givenMu.Lock()
	defer givenMu.Unlock()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := l.Addr().String()
		l.Close()
		if !given[addr] {
			given[addr] = true
			return addr
		}
	}
	t.Fatal("no free port not given before")
	return ""
}

var (
	givenMu sync.Mutex
	given   = map[string]bool{}
)

// pickPort is port; TestServeOnTakenPort hands out a taken one.
var pickPort = port

func port(t *testing.T) string {
	_, p, _ := strings.Cut(freeAddr(t), ":")
	return p
}

// TestServeOnTakenPort: a server whose port another process bound after
// it was found free starts again on another.
func TestServeOnTakenPort(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	_, taken, _ := strings.Cut(held.Addr().String(), ":")
	pickPort = func(t *testing.T) string {
		pickPort = port
		return taken
	}
	defer func() { pickPort = port }()
	srv, addrs := serve(t, 1, func(addrs []string) []string {
		return []string{"-addr", addrs[0], "-metrics-addr", "off", "-catalog", "base/catalog.yaml", "-drain-delay", "0s"}
	}, func(addrs []string) error { return readyz("http://" + addrs[0] + "/readyz") })
	if addrs[0] == held.Addr().String() {
		t.Fatalf("served on %s, the port held", addrs[0])
	}
	if err := readyz("http://" + addrs[0] + "/readyz"); err != nil {
		t.Errorf("%v; log:\n%s", err, srv.tail(2000))
	}
}
