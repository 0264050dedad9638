// Command connmem measures what a connection to the API holds, in clear
// and over TLS (serve -tls-cert-file), as package sizing counts it per
// connection (limits.max_connections). For each round, mode and transport
// it starts the binary as its own process (serveproc) on the embedded
// catalog, opens -n connections that each hold a request unfinished, as
// slow clients do, and reports the resident set's growth divided by the
// connections: "body" sends a search's headers and 10 bytes of a
// 60,000-byte body, "headers" one header line of a request. Every figure
// is quoted beside the plain one of the same round, so the TLS ÷ plain
// ratio survives a shared machine. BENCHMARKS.md records the results.
//
//	go run ./cmd/connmem -bin bin/toolsearch -n 2048 -rounds 2
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/toolsearch/toolsearch/cmd/internal/serveproc"
	"github.com/toolsearch/toolsearch/pkg/testpki"
)

func main() {
	ctx, stop := serveproc.Interruptible()
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "connmem:", err)
		os.Exit(1)
	}
}

// The two ways a connection is held unfinished.
var modes = map[string]string{
	"body":    "POST /mcp/tool-search HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n\r\n{\"query\":\"",
	"headers": "POST /mcp/tool-search HTTP/1.1\r\nHost: localhost\r\n",
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("connmem", flag.ContinueOnError)
	fs.SetOutput(stderr)
	bin := fs.String("bin", "bin/toolsearch", "the toolsearch binary to measure")
	n := fs.Int("n", 2048, "connections held at once (the default limits.max_connections)")
	rounds := fs.Int("rounds", 2, "rounds; each measures every mode in clear and over TLS")
	hold := fs.Duration("hold", 3*time.Second, "how long the connections are held before the resident set is read")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *n < 1 || *rounds < 1 {
		return errors.New("-n and -rounds must be at least 1")
	}
	dir, err := os.MkdirTemp("", "connmem")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ca, err := testpki.NewCA("connmem CA")
	if err != nil {
		return err
	}
	certFile, keyFile, err := ca.ServerFiles(dir, "127.0.0.1")
	if err != nil {
		return err
	}
	clientTLS := &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"}
	// Every connection comes from one address, more of them and faster
	// than the limits per address let one: they are off, in both modes
	// alike.
	cfgFile := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgFile, []byte("limits: {tls_handshake_rate: -1, max_connections_per_address: -1}\n"), 0o600); err != nil {
		return err
	}

	fmt.Fprintf(stdout, "%d connections held %s; KiB of resident set a connection (peak a connection)\n", *n, *hold)
	fmt.Fprintf(stdout, "%-6s %-8s %18s %18s %12s\n", "round", "mode", "plain", "TLS", "TLS ÷ plain")
	for r := 1; r <= *rounds; r++ {
		for _, mode := range slices.Sorted(func(yield func(string) bool) {
			for m := range modes {
				if !yield(m) {
					return
				}
			}
		}) {
			var got [2]perConn
			for i, useTLS := range []bool{false, true} {
				args := []string{"-config", cfgFile, "-metrics-addr", "127.0.0.1:0"}
				var cfg *tls.Config
				if useTLS {
					metrics, err := serveproc.FreeAddr()
					if err != nil {
						return err
					}
					args = []string{"-config", cfgFile, "-metrics-addr", metrics, "-tls-cert-file", certFile, "-tls-key-file", keyFile}
					cfg = clientTLS
				}
				if got[i], err = measure(ctx, *bin, dir, args, cfg, modes[mode], *n, *hold); err != nil {
					return fmt.Errorf("round %d, %s, tls %v: %w", r, mode, useTLS, err)
				}
			}
			fmt.Fprintf(stdout, "%-6d %-8s %18s %18s %12.2f\n", r, mode, got[0], got[1], got[1].rss/got[0].rss)
		}
	}
	return nil
}

// perConn is the resident set's growth, now and at its peak, per
// connection, in KiB.
type perConn struct{ rss, peak float64 }

func (p perConn) String() string { return fmt.Sprintf("%.1f (%.1f)", p.rss, p.peak) }

// measure starts the binary with args, holds n connections that each sent
// what, and reads the growth of its resident set.
func measure(ctx context.Context, bin, dir string, args []string, cfg *tls.Config, what string, n int, hold time.Duration) (perConn, error) {
	env := []string{"TOOLSEARCH_LEARNING_PATH=" + filepath.Join(dir, "learned.db")}
	srv, err := serveproc.Start(ctx, bin, env, time.Minute, args...)
	if err != nil {
		return perConn{}, err
	}
	defer srv.Stop()
	idle, err := srv.Memory("VmRSS")
	if err != nil {
		return perConn{}, err
	}
	conns, err := open(ctx, srv.Addr, cfg, what, n)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	if err != nil {
		return perConn{}, err
	}
	time.Sleep(hold)
	rss, err := srv.Memory("VmRSS")
	if err != nil {
		return perConn{}, err
	}
	peak, err := srv.Memory("VmHWM")
	if err != nil {
		return perConn{}, err
	}
	kib := func(b int64) float64 { return float64(b-idle) / float64(n) / 1024 }
	return perConn{kib(rss), kib(peak)}, nil
}

// open makes n connections to addr (over TLS with cfg, when not nil), 32
// at a time, each having sent what.
func open(ctx context.Context, addr string, cfg *tls.Config, what string, n int) ([]net.Conn, error) {
	var (
		mu    sync.Mutex
		conns []net.Conn
		errs  []error
		wg    sync.WaitGroup
		slots = make(chan struct{}, 32)
	)
	d := net.Dialer{Timeout: 10 * time.Second}
	for range n {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			c, err := d.DialContext(ctx, "tcp", addr)
			if err == nil && cfg != nil {
				tc := tls.Client(c, cfg)
				if err = tc.HandshakeContext(ctx); err == nil {
					c = tc
				} else {
					c.Close()
				}
			}
			if err == nil {
				if _, err = io.WriteString(c, what); err != nil {
					c.Close()
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			conns = append(conns, c)
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return conns, fmt.Errorf("%d of %d connections failed, the first: %w", len(errs), n, errs[0])
	}
	return conns, nil
}
