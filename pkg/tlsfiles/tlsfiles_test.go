package tlsfiles

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolsearch/toolsearch/pkg/testpki"
)

// TestClientFollowsItsFiles: the certificate a new connection presents is
// the files' own, read again when they change and kept when they do not
// pair; Expiry says which one it is.
func TestClientFollowsItsFiles(t *testing.T) {
	ca := testpki.MustCA(t, "cluster CA")
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	start := time.Now().Truncate(time.Second)
	// put writes the files as the kubelet does (renamed into place), the
	// key only when given.
	put := func(certPEM, keyPEM []byte) {
		for _, f := range []struct {
			path string
			b    []byte
		}{{certFile, certPEM}, {keyFile, keyPEM}} {
			if f.b == nil {
				continue
			}
			if err := testpki.Put(f.path, f.b); err != nil {
				t.Fatal(err)
			}
		}
	}
	issue := func(hours int) (certPEM, keyPEM []byte) {
		certPEM, keyPEM, err := ca.IssueUntil("toolsearch", start.Add(time.Duration(hours)*time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		return certPEM, keyPEM
	}
	put(issue(1))
	var logs bytes.Buffer
	cl, err := NewClient("https://mcp.internal/mcp", Config{CertFile: certFile, KeyFile: keyFile}, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	presents := func(when string, hours int) {
		t.Helper()
		cert, err := cl.cfg.GetClientCertificate(nil)
		if err != nil {
			t.Fatal(err)
		}
		want := start.Add(time.Duration(hours) * time.Hour)
		if !cert.Leaf.NotAfter.Equal(want) {
			t.Errorf("%s: presents a certificate valid until %v; want %v", when, cert.Leaf.NotAfter, want)
		}
		if exp, ok := cl.Expiry(); !ok || !exp.Equal(want) {
			t.Errorf("%s: Expiry() = %v, %v; want %v", when, exp, ok, want)
		}
	}
	presents("as started", 1)
	presents("unchanged", 1)
	put(issue(2))
	presents("rotated", 2)
	halfway, _ := issue(3)
	put(halfway, nil)
	presents("the certificate written, not its key", 2)
	presents("still halfway", 2)
	if n := strings.Count(logs.String(), "not read again"); n != 1 {
		t.Errorf("%d warnings for one half-written pair read twice; want 1:\n%s", n, &logs)
	}
	if err := os.Remove(keyFile); err != nil {
		t.Fatal(err)
	}
	presents("the key gone", 2)
	if !strings.Contains(logs.String(), "tls key_file: open "+keyFile) {
		t.Errorf("the log does not name the missing key:\n%s", &logs)
	}
	put(issue(4))
	presents("rotated again", 4)
}

// TestNewClientRefuses: settings that cannot work are refused before any
// connection, naming the file.
func TestNewClientRefuses(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		url  string
		c    Config
		want string
	}{
		{"http://mcp.internal/mcp", Config{ServerName: "mcp"}, "tls needs an https url"},
		{"https://mcp.internal/mcp", Config{}, "tls is empty"},
		{"https://mcp.internal/mcp", Config{CertFile: notPEM}, "cert_file and key_file go together"},
		{"https://mcp.internal/mcp", Config{CAFile: notPEM}, "tls ca_file " + notPEM + ": no PEM certificate in it"},
		{"https://mcp.internal/mcp", Config{CertFile: notPEM, KeyFile: notPEM}, "tls cert_file " + notPEM + ", key_file " + notPEM + ": tls: failed to find any PEM data"},
	} {
		if _, err := NewClient(tt.url, tt.c, slog.New(slog.DiscardHandler)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("NewClient(%s, %+v) = %v; want an error saying %q", tt.url, tt.c, err, tt.want)
		}
	}
	if cl, err := NewClient("https://mcp.internal/mcp", Config{ServerName: "mcp"}, nil); err != nil {
		t.Errorf("a server name alone: %v", err)
	} else if _, ok := cl.Expiry(); ok {
		t.Error("Expiry without a client certificate reports one")
	}
}

// TestClientFollowsItsCAFile: a server's certificate is checked against
// the CA file as it is at each handshake (a CA rotated, a trust bundle
// updated), for its chain and its name as crypto/tls checks them; a file
// that no longer reads keeps the CAs read before, said once.
func TestClientFollowsItsCAFile(t *testing.T) {
	old, next := testpki.MustCA(t, "cluster CA"), testpki.MustCA(t, "cluster CA, rotated")
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.crt")
	put := func(b []byte) {
		if err := testpki.Put(caFile, b); err != nil {
			t.Fatal(err)
		}
	}
	put(old.PEM)
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	byName, err := NewClient("https://mcp.internal/mcp", Config{CAFile: caFile}, logger)
	if err != nil {
		t.Fatal(err)
	}
	byIP, err := NewClient("https://10.0.0.7:8443/mcp", Config{CAFile: caFile}, logger)
	if err != nil {
		t.Fatal(err)
	}
	type server struct {
		ca    *testpki.CA
		names []string
	}
	for _, step := range []struct {
		name   string
		caFile []byte // nil: as the step before left it
		cl     *Client
		sni    string // what the handshake sent: no IP address is sent
		server server
		want   string // "" is verified
	}{
		{"the CA read at start", nil, byName, "mcp.internal", server{old, []string{"mcp.internal"}}, ""},
		{"a name the certificate lacks", nil, byName, "mcp.internal", server{old, []string{"other.internal"}}, "x509: certificate is valid for other.internal, not mcp.internal"},
		{"an address sent as no name", nil, byIP, "", server{old, []string{"10.0.0.7"}}, ""},
		{"an address the certificate lacks", nil, byIP, "", server{old, []string{"mcp.internal"}}, "cannot validate certificate for 10.0.0.7"},
		{"a server of the rotated CA, not yet trusted", nil, byName, "mcp.internal", server{next, []string{"mcp.internal"}}, "x509: certificate signed by unknown authority"},
		{"the bundle of both", append(slices.Clone(old.PEM), next.PEM...), byName, "mcp.internal", server{next, []string{"mcp.internal"}}, ""},
		{"the old CA's server, in the bundle", nil, byName, "mcp.internal", server{old, []string{"mcp.internal"}}, ""},
		{"the rotated CA alone", next.PEM, byName, "mcp.internal", server{old, []string{"mcp.internal"}}, "x509: certificate signed by unknown authority"},
		{"the rotated CA alone, its server", nil, byName, "mcp.internal", server{next, []string{"mcp.internal"}}, ""},
		{"a file that no longer reads", []byte("not a certificate"), byName, "mcp.internal", server{next, []string{"mcp.internal"}}, ""},
		{"still not", nil, byName, "mcp.internal", server{old, []string{"mcp.internal"}}, "unknown authority"},
	} {
		if step.caFile != nil {
			put(step.caFile)
		}
		certPEM, _, err := step.server.ca.Issue("server", step.server.names...)
		if err != nil {
			t.Fatal(err)
		}
		block, _ := pem.Decode(certPEM)
		leaf, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		err = step.cl.cfg.VerifyConnection(tls.ConnectionState{ServerName: step.sni, PeerCertificates: []*x509.Certificate{leaf}})
		switch {
		case step.want == "" && err != nil:
			t.Errorf("%s: %v; want verified", step.name, err)
		case step.want != "" && (err == nil || !strings.Contains(err.Error(), step.want)):
			t.Errorf("%s: %v; want an error saying %q", step.name, err, step.want)
		}
	}
	if n := strings.Count(logs.String(), "CA certificates not read again"); n != 1 {
		t.Errorf("%d warnings for one unreadable CA file read twice; want 1:\n%s", n, &logs)
	}
	if !strings.Contains(logs.String(), "tls ca_file "+caFile+": no PEM certificate in it") {
		t.Errorf("the warning does not name the file:\n%s", &logs)
	}
}

// TestServerReadsAtMostOnceASecond: a flood of handshakes reads the
// serving certificate's files once a second, not once each; a renewal is
// served from the first handshake a second after the last read.
func TestServerReadsAtMostOnceASecond(t *testing.T) {
	ca := testpki.MustCA(t, "cluster CA")
	dir := t.TempDir()
	start := time.Now().Truncate(time.Second)
	// renew writes the files (certFile, keyFile) anew, valid until hours
	// after start.
	var certFile, keyFile string
	renew := func(hours int) time.Time {
		until := start.Add(time.Duration(hours) * time.Hour)
		var err error
		if certFile, keyFile, err = ca.ServerFilesUntil(dir, until, "toolsearch.tools.svc"); err != nil {
			t.Fatal(err)
		}
		return until
	}
	first := renew(1)
	s, err := NewServer(certFile, keyFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	clock := start
	s.pair.now = func() time.Time { return clock }
	serves := func(when string, want time.Time) {
		t.Helper()
		cert, err := s.Config().GetCertificate(&tls.ClientHelloInfo{})
		if err != nil {
			t.Fatal(err)
		}
		if !cert.Leaf.NotAfter.Equal(want) {
			t.Errorf("%s: serves a certificate valid until %v; want %v", when, cert.Leaf.NotAfter, want)
		}
		if got := s.Expiry(); !got.Equal(want) {
			t.Errorf("%s: Expiry() = %v; want %v", when, got, want)
		}
	}
	serves("as started", first)
	second := renew(2)
	clock = clock.Add(900 * time.Millisecond)
	serves("renewed, within the second of the last read", first)
	clock = clock.Add(200 * time.Millisecond)
	serves("renewed, past it", second)
	if _, err := NewServer(certFile, "", nil); err == nil || !strings.Contains(err.Error(), "-tls-cert-file and -tls-key-file go together") {
		t.Errorf("NewServer without a key: %v", err)
	}
}

// TestClientSaysTheServerAskedForACertificate: a server that asks for a
// client certificate of a client configured with none is said once, and
// none is sent.
func TestClientSaysTheServerAskedForACertificate(t *testing.T) {
	ca := testpki.MustCA(t, "cluster CA")
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	if err := testpki.Put(caFile, ca.PEM); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cl, err := NewClient("https://mcp.internal/mcp", Config{CAFile: caFile}, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		cert, err := cl.cfg.GetClientCertificate(&tls.CertificateRequestInfo{})
		if err != nil || cert == nil || len(cert.Certificate) != 0 {
			t.Fatalf("GetClientCertificate = %v, %v; want an empty certificate (none sent)", cert, err)
		}
	}
	if n := strings.Count(logs.String(), "asked for a client certificate"); n != 1 {
		t.Errorf("%d warnings for three requests of a certificate; want 1:\n%s", n, &logs)
	}
}

// TestWarnsOfCertificatesNotValidNow: a certificate read at start-up that
// has expired, or is not valid yet, is used but said; one valid now is
// not.
func TestWarnsOfCertificatesNotValidNow(t *testing.T) {
	ca := testpki.MustCA(t, "cluster CA")
	for _, tt := range []struct {
		name     string
		notAfter time.Time
		want     string
	}{
		{"valid", time.Now().Add(time.Hour), ""},
		{"expired", time.Now().Add(-time.Minute), "the serving certificate has expired"},
	} {
		certFile, keyFile, err := ca.ServerFilesUntil(t.TempDir(), tt.notAfter, "toolsearch.tools.svc")
		if err != nil {
			t.Fatal(err)
		}
		var logs bytes.Buffer
		if _, err := NewServer(certFile, keyFile, slog.New(slog.NewTextHandler(&logs, nil))); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := logs.String(); (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("%s: logged %q; want %q", tt.name, got, tt.want)
		}
	}
	// Not valid yet: testpki's certificates start an hour ago, so the
	// check is made at a time before that.
	leaf := &x509.Certificate{NotBefore: time.Now().Add(time.Hour), NotAfter: time.Now().Add(2 * time.Hour)}
	var logs bytes.Buffer
	warnValidity(slog.New(slog.NewTextHandler(&logs, nil)), "client certificate", leaf, time.Now())
	if !strings.Contains(logs.String(), "the client certificate is not valid yet") {
		t.Errorf("a certificate not valid yet: logged %q", &logs)
	}
}
