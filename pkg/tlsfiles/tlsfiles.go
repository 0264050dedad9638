// Package tlsfiles makes the TLS of an outbound client from files an
// operator mounts: the CAs that check a server, and a client certificate
// for one that asks (mutual TLS), each read again when a rotated Secret
// or trust bundle changes it. Upstream MCP servers and an embedding
// provider use it.
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
		cl.roots = &watched[*x509.CertPool]{files: []setting{{"ca_file", c.CAFile}}, what: "CA certificates", logger: logger, make: caPool}
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
		cl.pair = &watched[*tls.Certificate]{files: []setting{{"cert_file", c.CertFile}, {"key_file", c.KeyFile}}, what: "client certificate", logger: logger, make: keyPair}
		if err := cl.pair.load(); err != nil {
			return nil, err
		}
		cl.cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return cl.pair.get(), nil }
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

func caPool(pems [][]byte, files []setting) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pems[0]) {
		return nil, fmt.Errorf("tls ca_file %s: no PEM certificate in it", files[0].path)
	}
	return pool, nil
}

func keyPair(pems [][]byte, files []setting) (*tls.Certificate, error) {
	cert, err := tls.X509KeyPair(pems[0], pems[1])
	if err == nil && cert.Leaf == nil { // GODEBUG=x509keypairleaf=0
		cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0])
	}
	if err != nil {
		// crypto/tls's errors name no key material.
		return nil, fmt.Errorf("tls cert_file %s, key_file %s: %w", files[0].path, files[1].path, err)
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
	make   func(pems [][]byte, files []setting) (T, error)

	mu  sync.Mutex
	cur T
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
	cur, err := w.make(pems, w.files)
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
	pems, err := w.read()
	now := sum(pems)
	if err == nil && now == w.sum {
		return w.cur
	}
	var cur T
	if err == nil {
		cur, err = w.make(pems, w.files)
	}
	if err != nil {
		if err.Error() != w.failed || now != w.failedSum {
			w.failed, w.failedSum = err.Error(), now
			w.logger.Warn(w.what+" not read again; using the ones read before", "err", err)
		}
		return w.cur
	}
	w.cur, w.sum, w.failed = cur, now, ""
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
			return nil, fmt.Errorf("tls %s: %w", f.name, err)
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
