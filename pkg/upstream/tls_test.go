package upstream

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolsearch/toolsearch/pkg/testpki"
	"github.com/toolsearch/toolsearch/pkg/tlsfiles"
)

// issue is a certificate of ca, for the TLS tests.
func issue(t *testing.T, ca *testpki.CA, cn string, names ...string) (certPEM, keyPEM []byte) {
	t.Helper()
	certPEM, keyPEM, err := ca.Issue(cn, names...)
	if err != nil {
		t.Fatal(err)
	}
	return certPEM, keyPEM
}

// mtlsUpstream is an MCP server over HTTPS that asks every client for a
// certificate of ca, and notes whose it was.
type mtlsUpstream struct {
	http *httptest.Server
	cert atomic.Pointer[tls.Certificate] // the server's own, for each handshake
	mu   sync.Mutex
	// seen is each accepted handshake's client certificate's common
	// name: a request on a connection kept alive makes none, so a test
	// that rotates a certificate waits for a handshake, not a request.
	seen []string
}

func newMTLSUpstream(t *testing.T, ca *testpki.CA, names ...string) *mtlsUpstream {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "internal", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "rotate_certificate", Description: "Rotate a service's TLS certificate.", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "rotated"}}}, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	u := &mtlsUpstream{}
	u.http = httptest.NewUnstartedServer(h)
	var err error
	if u.http.TLS, err = ca.MutualTLS(names...); err != nil {
		t.Fatal(err)
	}
	u.cert.Store(&u.http.TLS.Certificates[0])
	// Each handshake presents the certificate of the moment (a client
	// sends no name to pick one by when it dials an address), in the
	// config StartTLS completes (its clone of this one).
	u.http.TLS.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		c := u.http.TLS.Clone()
		c.GetConfigForClient = nil
		c.Certificates = []tls.Certificate{*u.cert.Load()}
		c.VerifyConnection = func(cs tls.ConnectionState) error {
			u.mu.Lock()
			defer u.mu.Unlock()
			u.seen = append(u.seen, cs.PeerCertificates[0].Subject.CommonName)
			return nil
		}
		return c, nil
	}
	u.http.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes refused on purpose
	u.http.StartTLS()
	t.Cleanup(u.http.Close)
	return u
}

// serveAs makes the upstream present a certificate of ca for names from
// its next handshake, as a server reissued by a rotated CA does; clients
// keep needing certificates of the CA it started with.
func (u *mtlsUpstream) serveAs(t *testing.T, ca *testpki.CA, names ...string) {
	t.Helper()
	pair, err := tls.X509KeyPair(issue(t, ca, "server", names...))
	if err != nil {
		t.Fatal(err)
	}
	u.cert.Store(&pair)
	u.http.CloseClientConnections()
}

// handshakes is how many the upstream accepted, and the last one's
// client's common name.
func (u *mtlsUpstream) handshakes() (n int, last string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.seen) == 0 {
		return 0, ""
	}
	return len(u.seen), u.seen[len(u.seen)-1]
}

// writeFile writes b to path whole (testpki.Put), and returns the path.
func writeFile(t *testing.T, path string, b []byte) string {
	t.Helper()
	if err := testpki.Put(path, b); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestMutualTLS: an upstream behind a private CA that asks for a client
// certificate is listed with its CA and a certificate of that CA, and
// with neither, or a certificate of another CA, is failing with what TLS
// said; server_name checks a certificate whose names the URL does not
// carry.
func TestMutualTLS(t *testing.T) {
	ca, other := testpki.MustCA(t, "cluster CA"), testpki.MustCA(t, "another CA")
	dir := t.TempDir()
	caFile := writeFile(t, filepath.Join(dir, "ca.crt"), ca.PEM)
	certPEM, keyPEM := issue(t, ca, "toolsearch")
	certFile, keyFile := writeFile(t, filepath.Join(dir, "tls.crt"), certPEM), writeFile(t, filepath.Join(dir, "tls.key"), keyPEM)
	otherPEM, otherKey := issue(t, other, "stranger")
	otherFile, otherKeyFile := writeFile(t, filepath.Join(dir, "other.crt"), otherPEM), writeFile(t, filepath.Join(dir, "other.key"), otherKey)

	byIP := newMTLSUpstream(t, ca, "127.0.0.1")
	byName := newMTLSUpstream(t, ca, "mcp.internal") // reached at 127.0.0.1 all the same
	for _, tt := range []struct {
		name    string
		url     string
		tls     *TLS
		wantErr string // "" is connected, with the upstream's tool
	}{
		{"no tls", byIP.http.URL, nil, "certificate signed by unknown authority"},
		{"the CA alone", byIP.http.URL, &TLS{CAFile: caFile}, "certificate required"},
		{"a certificate of another CA", byIP.http.URL, &TLS{CAFile: caFile, CertFile: otherFile, KeyFile: otherKeyFile}, "remote error: tls"},
		{"the CA and a certificate", byIP.http.URL, &TLS{CAFile: caFile, CertFile: certFile, KeyFile: keyFile}, ""},
		{"a name the URL does not carry", byName.http.URL, &TLS{CAFile: caFile, CertFile: certFile, KeyFile: keyFile}, "127.0.0.1"},
		{"server_name", byName.http.URL, &TLS{CAFile: caFile, CertFile: certFile, KeyFile: keyFile, ServerName: "mcp.internal"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := start(t, []Config{{Name: "internal", URL: tt.url, TLS: tt.tls}}, nil)
			st := m.Status()[0]
			if tt.wantErr != "" {
				if st.State != "failing" || !strings.Contains(st.LastError, tt.wantErr) {
					t.Fatalf("status %s, %q; want failing with %q", st.State, st.LastError, tt.wantErr)
				}
				return
			}
			if st.State != "connected" || st.Tools != 1 {
				t.Fatalf("status %s with %d tools, %q; want connected with its tool", st.State, st.Tools, st.LastError)
			}
			res, err := m.Call(t.Context(), "internal", "rotate_certificate", json.RawMessage(`{}`), CallOptions{})
			if err != nil || res.IsError {
				t.Fatalf("Call = %+v, %v", res, err)
			}
		})
	}
	if _, got := byIP.handshakes(); got != "toolsearch" {
		t.Errorf("the upstream last saw %q; want toolsearch's certificate", got)
	}
}

// TestClientCertificateRotates: a certificate rotated in its files (as
// the kubelet updates a Secret's) is presented at the next new
// connection, without a restart; a pair caught halfway through a
// rotation (the certificate new, the key old) keeps the last good one
// and is logged once, not at every connection.
func TestClientCertificateRotates(t *testing.T) {
	ca := testpki.MustCA(t, "cluster CA")
	up := newMTLSUpstream(t, ca, "127.0.0.1")
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	// Each certificate valid an hour longer than the one before, so the
	// expiry exported tells them apart.
	start := time.Now().Truncate(time.Second)
	until := func(n int) time.Time { return start.Add(time.Duration(n) * time.Hour) }
	rotate := func(cn string, n int) {
		certPEM, keyPEM, err := ca.IssueUntil(cn, until(n))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, keyFile, keyPEM)
		writeFile(t, certFile, certPEM)
	}
	rotate("first", 1)
	var warned atomic.Int32
	logs := slog.New(&warnCounter{n: &warned})
	m := startWith(t, []Config{{Name: "internal", URL: up.http.URL, TLS: &TLS{CAFile: writeFile(t, filepath.Join(dir, "ca.crt"), ca.PEM), CertFile: certFile, KeyFile: keyFile}}}, Options{Logger: logs})
	// callAs calls until a handshake after the connections are cut
	// presents cn: the cut may fail a call, and the next dials anew. The
	// metric then gives that certificate's expiry.
	callAs := func(cn string, n int) {
		t.Helper()
		up.http.CloseClientConnections()
		before, _ := up.handshakes()
		waitFor(t, "a call presenting "+cn, func() bool {
			m.Call(t.Context(), "internal", "rotate_certificate", json.RawMessage(`{}`), CallOptions{})
			after, last := up.handshakes()
			return after > before && last == cn
		})
		if got, want := metric(t, m, tlsfiles.ExpiryMetric, map[string]string{"server": "upstream/internal"}), float64(until(n).Unix()); got != want {
			t.Errorf("presenting %s, %s = %v; want %v", cn, tlsfiles.ExpiryMetric, got, want)
		}
	}
	callAs("first", 1)
	rotate("second", 2)
	callAs("second", 2)

	// Halfway: the next certificate is written, its key not yet. (The
	// prober's own connections may have met the rotations above halfway
	// too, the key written first: those warnings are not counted.)
	warned.Store(0)
	next, _ := issue(t, ca, "third")
	writeFile(t, certFile, next)
	for range 3 {
		callAs("second", 2)
	}
	if n := warned.Load(); n != 1 {
		t.Errorf("%d warnings for one half-rotated pair over three connections; want 1", n)
	}
	rotate("fourth", 4)
	callAs("fourth", 4)
}

// TestCARotates: when the upstream's certificate comes from a rotated CA,
// the CA file updated (a trust bundle of both, then the new CA alone) is
// what checks it at the next new connection, without a restart; a CA file
// that stops reading keeps the CAs read before, with one warning.
func TestCARotates(t *testing.T) {
	old, next := testpki.MustCA(t, "cluster CA"), testpki.MustCA(t, "cluster CA, rotated")
	up := newMTLSUpstream(t, old, "127.0.0.1")
	dir := t.TempDir()
	certPEM, keyPEM := issue(t, old, "toolsearch")
	tlsCfg := &TLS{
		CAFile:   writeFile(t, filepath.Join(dir, "ca.crt"), old.PEM),
		CertFile: writeFile(t, filepath.Join(dir, "tls.crt"), certPEM),
		KeyFile:  writeFile(t, filepath.Join(dir, "tls.key"), keyPEM),
	}
	var warned atomic.Int32
	m := startWith(t, []Config{{Name: "internal", URL: up.http.URL, TLS: tlsCfg}}, Options{Logger: slog.New(&warnCounter{n: &warned})})
	call := func() error {
		res, err := m.Call(t.Context(), "internal", "rotate_certificate", json.RawMessage(`{}`), CallOptions{})
		if err == nil && res.IsError {
			err = errors.New("the call's result is an error")
		}
		return err
	}
	// calls waits for a call to go through (the connection cut under a
	// request may fail it, and the next dials anew).
	calls := func(when string) {
		t.Helper()
		waitFor(t, "a call "+when, func() bool { return call() == nil })
	}
	calls("to the upstream as started")

	up.serveAs(t, next, "127.0.0.1")
	for range 3 { // the first may meet the connection being cut
		if err := call(); err == nil {
			t.Fatal("a server of a CA not in the CA file was trusted")
		} else if strings.Contains(err.Error(), "unknown authority") {
			break
		}
	}
	writeFile(t, tlsCfg.CAFile, append(slices.Clone(old.PEM), next.PEM...))
	calls("with the bundle of both CAs")
	writeFile(t, tlsCfg.CAFile, next.PEM)
	up.http.CloseClientConnections()
	calls("with the rotated CA alone")

	warned.Store(0)
	writeFile(t, tlsCfg.CAFile, []byte("not a certificate"))
	for range 3 {
		up.http.CloseClientConnections()
		calls("with the CA file unreadable")
	}
	if n := warned.Load(); n != 1 {
		t.Errorf("%d warnings for one unreadable CA file over three connections; want 1", n)
	}
	up.serveAs(t, old, "127.0.0.1")
	if err := call(); err == nil {
		if err = call(); err == nil {
			t.Error("the old CA, no longer in the CA file read last, is still trusted")
		}
	}
}

// warnCounter counts the warnings logged.
type warnCounter struct{ n *atomic.Int32 }

func (w *warnCounter) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }
func (w *warnCounter) Handle(_ context.Context, r slog.Record) error {
	if r.Level == slog.LevelWarn && strings.Contains(r.Message, "not read again") {
		w.n.Add(1)
	}
	return nil
}
func (w *warnCounter) WithAttrs([]slog.Attr) slog.Handler { return w }
func (w *warnCounter) WithGroup(string) slog.Handler      { return w }

// TestNewRefusesBadTLS: a TLS setting that cannot work is refused at
// start-up, naming the upstream and the file.
func TestNewRefusesBadTLS(t *testing.T) {
	ca := testpki.MustCA(t, "cluster CA")
	dir := t.TempDir()
	caFile := writeFile(t, filepath.Join(dir, "ca.crt"), ca.PEM)
	certPEM, keyPEM := issue(t, ca, "toolsearch")
	certFile, keyFile := writeFile(t, filepath.Join(dir, "tls.crt"), certPEM), writeFile(t, filepath.Join(dir, "tls.key"), keyPEM)
	_, otherKey := issue(t, ca, "another")
	otherKeyFile := writeFile(t, filepath.Join(dir, "other.key"), otherKey)
	notPEM := writeFile(t, filepath.Join(dir, "notes.txt"), []byte("not a certificate"))
	huge := writeFile(t, filepath.Join(dir, "huge.pem"), make([]byte, 1<<20+1)) // over tlsfiles.maxPEMBytes
	const https = "https://127.0.0.1:1/mcp"
	for _, tt := range []struct {
		url  string
		tls  TLS
		want string
	}{
		{"http://127.0.0.1:1/mcp", TLS{CAFile: caFile}, `upstream "u": tls needs an https url`},
		{https, TLS{}, `upstream "u": tls is empty`},
		{https, TLS{CertFile: certFile}, "cert_file and key_file go together"},
		{https, TLS{KeyFile: keyFile}, "cert_file and key_file go together"},
		{https, TLS{CAFile: filepath.Join(dir, "missing.crt")}, "tls ca_file: open " + filepath.Join(dir, "missing.crt")},
		{https, TLS{CAFile: notPEM}, "tls ca_file " + notPEM + ": no PEM certificate in it"},
		{https, TLS{CAFile: huge}, huge + ": file too large: larger than 1 MiB"},
		{https, TLS{CertFile: certFile, KeyFile: filepath.Join(dir, "missing.key")}, "tls key_file: open " + filepath.Join(dir, "missing.key")},
		{https, TLS{CertFile: certFile, KeyFile: otherKeyFile}, "tls cert_file " + certFile + ", key_file " + otherKeyFile + ": tls: private key does not match public key"},
		{https, TLS{CertFile: caFile, KeyFile: notPEM}, "key_file " + notPEM},
	} {
		_, err := New([]Config{{Name: "u", URL: tt.url, TLS: &tt.tls}}, Options{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%+v) = %v; want an error saying %q", tt.tls, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "PRIVATE KEY") {
			t.Errorf("New(%+v) = %v: the key's text in an error", tt.tls, err)
		}
	}
}
