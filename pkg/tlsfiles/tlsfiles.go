// Package tlsfiles makes TLS from files an operator mounts, each read
// again when a rotated Secret or trust bundle changes it: an outbound
// client's (the CAs that check a server, and a client certificate for one
// that asks, mutual TLS), for upstream MCP servers and an embedding
// provider; and the API listener's own certificate.
package tlsfiles

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/toolsearch/toolsearch/pkg/internal/readfile"
)

// Config is a server's TLS as its client sees it, for one behind a
// private CA that asks its clients for certificates without a mesh to
// hold them.
type Config struct {
	// CAFile holds the PEM certificates of the CAs the server's
	// certificate is checked against: these alone, not the system's. It
	// is read again when it changes (a CA rotated, a trust bundle
	// updated), at the next new connection.
	CAFile string
	// CertFile and KeyFile are the PEM client certificate (with any
	// intermediates) and its key, presented when the server asks. Both
	// are read again when either changes (a rotated Secret), at the next
	// new connection.
	CertFile, KeyFile string
	// ServerName is the name the server's certificate must carry, when
	// it is not the URL's host (an address, or a Service's short name).
	ServerName string
}

// maxPEMBytes bounds a CA or certificate file: a chain is a few KiB, and
// a path pointed at something else by mistake is not read whole.
const maxPEMBytes = 1 << 20

// The metric of a client certificate's expiry, for every client that has
// one: an upstream's (server "upstream/NAME") and the provider's
// ("embedding"). A rotation that stopped (cert-manager failing, a Secret
// not mounted again) shows here weeks before the server refuses the
// certificate.
const (
	ExpiryMetric = "toolsearch_client_certificate_expiry_timestamp_seconds"
	ExpiryHelp   = "Unix time at which the client certificate toolsearch presents to the server (its NotAfter) stops being valid: a rotated one once it has been read again."
)

// The metric of the API listener's own certificate, when it serves TLS.
const (
	ServingExpiryMetric = "toolsearch_serving_certificate_expiry_timestamp_seconds"
	ServingExpiryHelp   = "Unix time at which the certificate the API listener serves (its NotAfter) stops being valid: a renewed one once it has been read again."
)

// Client is a server's TLS as its files make it.
type Client struct {
	cfg   *tls.Config
	pair  *watched[*tls.Certificate] // nil without a client certificate
	roots *watched[*x509.CertPool]   // nil without a CA file
	// name is what the server's certificate is checked for when the
	// handshake sent no server name (an IP address is not sent).
	name string
}

// NewClient reads c's files for the server at rawURL. A setting that
// cannot work is an error naming the file; logger hears of a rotation
// that did not read.
func NewClient(rawURL string, c Config, logger *slog.Logger) (*Client, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "https" {
		return nil, errors.New("tls needs an https url")
	}
	if c.CAFile == "" && c.CertFile == "" && c.KeyFile == "" && c.ServerName == "" {
		return nil, errors.New("tls is empty: give ca_file, cert_file and key_file, or server_name")
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		return nil, errors.New("tls: cert_file and key_file go together")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	cl := &Client{cfg: &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.ServerName}, name: c.ServerName}
	if cl.name == "" {
		cl.name = u.Hostname()
	}
	if c.CAFile != "" {
		cl.roots = &watched[*x509.CertPool]{files: []setting{{"tls ca_file", c.CAFile}}, what: "CA certificates", logger: logger,
			make: func(pems [][]byte) (*x509.CertPool, error) { return caPool(pems[0], "tls ca_file "+c.CAFile) }}
		if err := cl.roots.load(); err != nil {
			return nil, err
		}
		// crypto/tls checks a server against roots fixed in its config;
		// ones read again need the check done here, as crypto/tls would
		// do it, against the CA file as it is at this handshake.
		cl.cfg.InsecureSkipVerify = true
		cl.cfg.VerifyConnection = cl.verify
	}
	if c.CertFile != "" {
		cl.pair = &watched[*tls.Certificate]{files: []setting{{"tls cert_file", c.CertFile}, {"tls key_file", c.KeyFile}}, what: "client certificate", logger: logger,
			make: func(pems [][]byte) (*tls.Certificate, error) {
				return keyPair(pems[0], pems[1], "tls cert_file "+c.CertFile+", key_file "+c.KeyFile)
			}}
		if err := cl.pair.load(); err != nil {
			return nil, err
		}
		warnValidity(logger, "client certificate", cl.pair.cur.Leaf, time.Now())
		cl.cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cl.pair.get(), nil }
	} else {
		// A server that asks for a certificate and gets none refuses the
		// connection, over TLS 1.3 only after the handshake: what the
		// request then fails with depends on timing ("certificate
		// required", or the connection closed under a request being
		// written) and may not say why. That it asked is known here.
		var once sync.Once
		cl.cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			once.Do(func() {
				logger.Warn("the server asked for a client certificate, and the tls block gives none (cert_file, key_file): it may refuse the connection")
			})
			return &tls.Certificate{}, nil // none sent, as without this function
		}
	}
	return cl, nil
}

// verify is crypto/tls's own check of a server's certificate chain and
// name, against the CA file's certificates now. It runs on resumed
// connections too.
func (c *Client) verify(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("tls: the server sent no certificate")
	}
	name := cs.ServerName
	if name == "" {
		name = c.name
	}
	opts := x509.VerifyOptions{Roots: c.roots.get(), DNSName: name, Intermediates: x509.NewCertPool()}
	for _, cert := range cs.PeerCertificates[1:] {
		opts.Intermediates.AddCert(cert)
	}
	if _, err := cs.PeerCertificates[0].Verify(opts); err != nil {
		// As crypto/tls reports its own check's failure.
		return &tls.CertificateVerificationError{UnverifiedCertificates: cs.PeerCertificates, Err: err}
	}
	return nil
}

// Transport is a clone of base with the client's TLS: a pool of its own,
// since one shared with other servers must not present this one's
// certificate.
func (c *Client) Transport(base *http.Transport) *http.Transport {
	t := base.Clone()
	t.TLSClientConfig = c.cfg
	return t
}

// Expiry is when the client certificate presented now stops being valid,
// and false when there is none.
func (c *Client) Expiry() (time.Time, bool) {
	if c.pair == nil {
		return time.Time{}, false
	}
	return c.pair.current().Leaf.NotAfter, true
}

// Server is a listener's TLS: a certificate and key an operator mounts
// (cert-manager's Secret, say), read again when they change, so that a
// renewed certificate is served without a restart.
type Server struct {
	cfg  *tls.Config
	pair *watched[*tls.Certificate]
}

// serverRecheck is how often a handshake reads the server's files again
// at most: handshakes come at the callers' pace, not the service's, and a
// flood of them must not become a flood of file reads. Renewals come days
// before expiry; a second's lag is nothing.
const serverRecheck = time.Second

// NewServer reads the certificate (with any intermediates) and key a
// listener presents, given by serve's -tls-cert-file and -tls-key-file. A
// pair that cannot be used is an error naming the flags and files.
func NewServer(certFile, keyFile string, logger *slog.Logger) (*Server, error) {
	if certFile == "" || keyFile == "" {
		return nil, errors.New("-tls-cert-file and -tls-key-file go together")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{pair: &watched[*tls.Certificate]{files: []setting{{"-tls-cert-file", certFile}, {"-tls-key-file", keyFile}},
		what: "serving certificate", logger: logger, every: serverRecheck,
		make: func(pems [][]byte) (*tls.Certificate, error) {
			return keyPair(pems[0], pems[1], "-tls-cert-file "+certFile+", -tls-key-file "+keyFile)
		}}}
	if err := s.pair.load(); err != nil {
		return nil, err
	}
	warnValidity(logger, "serving certificate", s.pair.cur.Leaf, time.Now())
	s.cfg = &tls.Config{
		MinVersion: tls.VersionTLS12,
		// HTTP/1.1 alone: the API's connection bound (limits.max_connections)
		// bounds the requests read at once only while a connection carries
		// one request at a time, which HTTP/2's streams do not.
		NextProtos:     []string{"http/1.1"},
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return s.pair.get(), nil },
	}
	return s, nil
}

// Config is the listener's TLS config.
func (s *Server) Config() *tls.Config { return s.cfg }

// Expiry is when the certificate served now stops being valid.
func (s *Server) Expiry() time.Time { return s.pair.current().Leaf.NotAfter }

// warnValidity says when a certificate read at start-up is not valid at
// now: it is used all the same (its files may be renewed any moment, and
// the server may not check), but the peer will most likely refuse it.
func warnValidity(logger *slog.Logger, what string, leaf *x509.Certificate, now time.Time) {
	switch {
	case now.After(leaf.NotAfter):
		logger.Warn("the "+what+" has expired: the other side will refuse it until its files are renewed", "not_after", leaf.NotAfter)
	case now.Before(leaf.NotBefore):
		logger.Warn("the "+what+" is not valid yet: the other side will refuse it until then", "not_before", leaf.NotBefore)
	}
}

// caPool is the CAs of a PEM file; named says which, for its error.
func caPool(pemCerts []byte, named string) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemCerts) {
		return nil, fmt.Errorf("%s: no PEM certificate in it", named)
	}
	return pool, nil
}

// keyPair is a certificate and its key; named says which files, for its
// error.
func keyPair(certPEM, keyPEM []byte, named string) (*tls.Certificate, error) {
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err == nil && cert.Leaf == nil { // GODEBUG=x509keypairleaf=0
		cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0])
	}
	if err != nil {
		// crypto/tls's errors name no key material.
		return nil, fmt.Errorf("%s: %w", named, err)
	}
	return &cert, nil
}

// setting is a file and the setting that names it, for errors.
type setting struct{ name, path string }

// watched is what some files make (a CA pool, a certificate and its
// key), made again when they change: cert-manager, trust-manager and the
// kubelet rotate a Secret's or ConfigMap's files in place, and a pod must
// not need a restart to follow. The files are read at each new connection
// and compared, not stat'ed: a rotation can keep a file's size and land
// within its clock's tick, and connections are kept alive, so new ones
// are few.
type watched[T any] struct {
	files  []setting
	what   string // what T is, for the warning
	logger *slog.Logger
	make   func(pems [][]byte) (T, error) // pems of files, in their order
	// every, when set, is the least time between two reads of the files,
	// by now (time.Now when nil).
	every time.Duration
	now   func() time.Time

	mu      sync.Mutex
	cur     T
	checked time.Time // when the files were last read
	// The files' sums, not their bytes: no second copy of a key is kept
	// to compare with.
	sum       [sha256.Size]byte // of the files cur was made of
	failed    string            // the last failure, logged once for its files
	failedSum [sha256.Size]byte
}

// load makes T from the files, for start-up, where a bad one is the
// config's error.
func (w *watched[T]) load() error {
	pems, err := w.read()
	if err != nil {
		return err
	}
	cur, err := w.make(pems)
	if err != nil {
		return err
	}
	w.cur, w.sum = cur, sum(pems)
	return nil
}

// get is T for a new connection: the files' own, made again if they
// changed. Files that do not read or make one (a rotation caught halfway,
// a key written before its certificate) keep the last good one and say
// so, once for each such set of files.
func (w *watched[T]) get() T {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.every > 0 {
		now := time.Now()
		if w.now != nil {
			now = w.now()
		}
		if now.Sub(w.checked) < w.every {
			return w.cur
		}
		w.checked = now
	}
	pems, err := w.read()
	got := sum(pems)
	if err == nil && got == w.sum {
		return w.cur
	}
	var cur T
	if err == nil {
		cur, err = w.make(pems)
	}
	if err != nil {
		if err.Error() != w.failed || got != w.failedSum {
			w.failed, w.failedSum = err.Error(), got
			w.logger.Warn(w.what+" not read again; keeping what was read before", "err", err)
		}
		return w.cur
	}
	w.cur, w.sum, w.failed = cur, got, ""
	return w.cur
}

func (w *watched[T]) current() T {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cur
}

func (w *watched[T]) read() ([][]byte, error) {
	pems := make([][]byte, len(w.files))
	for i, f := range w.files {
		b, err := readfile.Read(f.path, maxPEMBytes)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
		pems[i] = b
	}
	return pems, nil
}

// sum is one digest of the files, each's length first so that no split
// of the same bytes between them sums alike.
func sum(pems [][]byte) [sha256.Size]byte {
	h := sha256.New()
	for _, b := range pems {
		h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(b))))
		h.Write(b)
	}
	return [sha256.Size]byte(h.Sum(nil))
}
