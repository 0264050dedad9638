package learn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/toolsearch/toolsearch/pkg/logbuf"
)

// startPostgres runs a real PostgreSQL server (Debian's postgresql
// package, whose binaries make test installs) in a temporary directory for
// the test's life and returns its connection string. PostgreSQL refuses to
// run as root: as root, the server runs as the postgres user. Without the
// binaries the test skips, unless TOOLSEARCH_REQUIRE_POSTGRES is set (make
// test sets it): then it fails.
func startPostgres(t *testing.T) string {
	t.Helper()
	return newPostgres(t).dsn
}

// freePort is a loopback port nothing listens on.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// pgServer is a PostgreSQL server of a test's own, which can be stopped
// and started again on its data, as an operator's restart or a failover
// does.
type pgServer struct {
	t       *testing.T
	command func(name string, args ...string) *exec.Cmd
	data    string
	dir     string
	port    int
	dsn     string
	srv     *exec.Cmd
	done    chan struct{}
	log     *logbuf.Buffer
}

// newPostgres makes a database and starts its server on a free port until
// the test ends. The port is found once the database is made (which takes
// seconds, in which another process could bind a port found free
// before), and found again should another process bind it first.
func newPostgres(t *testing.T) *pgServer {
	t.Helper()
	bin := os.Getenv("TOOLSEARCH_POSTGRES_BIN")
	if bin == "" {
		found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
		if len(found) > 0 {
			bin = filepath.Dir(found[len(found)-1])
		}
	}
	if _, err := os.Stat(filepath.Join(bin, "postgres")); bin == "" || err != nil {
		if os.Getenv("TOOLSEARCH_REQUIRE_POSTGRES") != "" {
			t.Fatalf("PostgreSQL's binaries are not installed (make test installs Debian's postgresql; or set TOOLSEARCH_POSTGRES_BIN)")
		}
		t.Skip("PostgreSQL is not installed here; make test installs it and runs this test")
	}
	dir, err := os.MkdirTemp("", "toolsearch-pg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// As root, everything runs as postgres, which must own the directory.
	// The credential is set on the process itself rather than through
	// runuser, so that a signal reaches the server and not a wrapper.
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root without a postgres user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	p := &pgServer{t: t, dir: dir, data: filepath.Join(dir, "data")}
	p.command = func(name string, args ...string) *exec.Cmd {
		cmd := exec.Command(filepath.Join(bin, name), args...)
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Setpgid: true}
		// A server's children may hold its output open after it exits.
		cmd.WaitDelay = 5 * time.Second
		return cmd
	}
	if out, err := p.command("initdb", "-D", p.data, "-U", "toolsearch", "--auth", "trust", "-E", "UTF8").CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	for try := 1; ; try++ {
		p.port = freePort(t)
		p.dsn = fmt.Sprintf("postgres://toolsearch@127.0.0.1:%d/postgres?sslmode=disable", p.port)
		err := p.start()
		if err == nil {
			break
		}
		if !errors.Is(err, errPortTaken) || try == 3 {
			t.Fatal(err)
		}
	}
	t.Cleanup(p.stop)
	return p
}

// errPortTaken is a server's exit for a port another process bound.
var errPortTaken = errors.New("port taken")

// start runs the server and returns once it answers queries.
func (p *pgServer) start() error {
	p.srv = p.command("postgres", "-D", p.data, "-h", "127.0.0.1", "-p", strconv.Itoa(p.port), "-k", p.dir, "-F")
	p.log = &logbuf.Buffer{}
	p.srv.Stdout, p.srv.Stderr = p.log, p.log
	if err := p.srv.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	p.done = done
	srv := p.srv
	go func() { srv.Wait(); close(done) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", p.port))
		if err == nil {
			c.Close()
			// Accepting connections is not yet accepting queries.
			s, err := OpenPostgres(context.Background(), p.dsn, Config{}, nil)
			if s != nil {
				s.Close()
			}
			if err == nil {
				return nil
			}
		}
		select {
		case <-done:
			p.srv = nil
			err := errors.New("postgres exited")
			if strings.Contains(p.log.String(), "Address already in use") {
				err = errPortTaken
			}
			return fmt.Errorf("%w:\n%s", err, p.log.String())
		default:
		}
		if time.Now().After(deadline) {
			p.stop()
			return fmt.Errorf("postgres did not start in 30s:\n%s", p.log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop ends the server as a fast shutdown does (its clients' connections
// closed), and returns once it has exited; a stopped server is left be.
func (p *pgServer) stop() {
	if p.srv == nil {
		return
	}
	p.srv.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		syscall.Kill(-p.srv.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
	p.srv = nil
}

// TestPostgresStore holds the PostgreSQL store to the same contract as the
// file, on a real server; and two stores on one database (two replicas)
// each read what both recorded.
func TestPostgresStore(t *testing.T) {
	dsn := startPostgres(t)
	storeContract(t, func(now func() time.Time) Store {
		s, err := OpenPostgres(context.Background(), dsn, Config{}, now)
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
	ctx := context.Background()
	a, err := OpenPostgres(ctx, dsn, Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	storeBounds(t, a, func(table string) int {
		var n int
		if err := a.pool.QueryRow(ctx, "SELECT count(*) FROM toolsearch_learned_"+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	})
	a.Close()
	a, err = OpenPostgres(ctx, dsn, Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := OpenPostgres(ctx, dsn, Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	a.Reset(ctx, "")
	var wg sync.WaitGroup
	for i, s := range []Store{a, b, a, b} {
		wg.Go(func() {
			if err := s.Record(ctx, Event{Caller: strconv.Itoa(i), Terms: []string{"sheet"}, Used: []string{"files/read_file", "files/stat"}}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	// Replicas recording for the same tools in either order, bounds and
	// all, never deadlock (PostgreSQL would abort one with an error).
	var race sync.WaitGroup
	for i := range 16 {
		used := []string{"x/one", "x/two", "x/three"}
		if i%2 == 1 {
			slices.Reverse(used)
		}
		race.Go(func() {
			if err := []Store{a, b}[i%2].Record(ctx, Event{Caller: strconv.Itoa(i), Terms: []string{"alpha", "beta"}, Used: used}); err != nil {
				t.Errorf("concurrent Record: %v", err)
			}
		})
	}
	race.Wait()
	for _, s := range []Store{a, b} {
		l, err := s.Load(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if w := l.Terms["files/read_file"]; len(w) != 1 || w[0].Weight < 3.99 {
			t.Errorf("a replica reads %+v, want sheet from all four sessions of both", w)
		}
	}
}

// A database that is down at start-up is no failure: the store comes back
// with ErrUnreachable, each call fails with an error naming no password
// and never hangs past its context, and once the server is up the store
// works, creating its tables.
func TestPostgresDown(t *testing.T) {
	// The server is made and stopped first, so that the port it comes
	// back on is free for the moments the calls below take, not for the
	// seconds a database takes to make.
	p := newPostgres(t)
	ctx := context.Background()
	// Its tables, made by the start's probe, go: the store must make them.
	conn, err := pgx.Connect(ctx, p.dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "DROP TABLE toolsearch_learned_terms, toolsearch_learned_pairs"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	p.stop()
	dsn := fmt.Sprintf("postgres://toolsearch:s3cret-pass@127.0.0.1:%d/postgres?sslmode=disable&connect_timeout=2", p.port)
	s, err := OpenPostgres(ctx, dsn, Config{}, nil)
	if !errors.Is(err, ErrUnreachable) || s == nil {
		t.Fatalf("open on a closed port: %v (store %v), want ErrUnreachable and a store", err, s)
	}
	defer s.Close()
	ev := Event{Caller: "a", Terms: []string{"sheet"}, Used: []string{"files/read_file"}}
	for _, call := range []func() error{
		func() error { return err },
		func() error { return s.Record(ctx, ev) },
		func() error { _, err := s.Load(ctx); return err },
		func() error { return s.Reset(ctx, "") },
	} {
		err := call()
		if err == nil {
			t.Fatal("a call succeeded with the server down")
		}
		if errors.Is(err, ErrMaybeRecorded) {
			t.Errorf("with the server down, %v is taken for a write that may have happened", err)
		}
		if strings.Contains(err.Error(), "s3cret-pass") {
			t.Errorf("the error shows the password: %v", err)
		}
	}
	// The server comes up (trusting local connections: the password is
	// not checked), and the same store works.
	if err := p.start(); err != nil {
		t.Fatal(err)
	}
	if err := s.Record(ctx, ev); err != nil {
		t.Fatalf("record once the server is up: %v", err)
	}
	if _, err := s.Load(ctx); err != nil {
		t.Fatalf("load once the server is up: %v", err)
	}
}

// TestPostgresRestart: the server restarts (an operator's restart, a
// managed database's failover) between two events, here in about 120 ms.
// The pool's idle connections died with it, and pgx pings only those
// idle a second: the first write after the restart was lost to one
// ("terminating connection due to administrator command").
func TestPostgresRestart(t *testing.T) {
	p := newPostgres(t)
	ctx := context.Background()
	s, err := OpenPostgres(ctx, p.dsn, Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ev := Event{Caller: "a", Terms: []string{"sheet"}, Used: []string{"files/read_file"}}
	if err := s.Record(ctx, ev); err != nil {
		t.Fatalf("record before the restart: %v", err)
	}
	p.stop()
	if err := p.start(); err != nil {
		t.Fatal(err)
	}
	if err := s.Record(ctx, ev); err != nil {
		t.Errorf("the first record after the restart: %v", err)
	}
	if _, err := s.Load(ctx); err != nil {
		t.Errorf("the first load after the restart: %v", err)
	}
}
