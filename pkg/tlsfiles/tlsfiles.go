// Package tlsfiles makes the TLS of an outbound client from files an
// operator mounts: the CAs that check a server, and a client certificate
// for one that asks (mutual TLS), read again when a rotated Secret
// changes them. Upstream MCP servers and an embedding provider use it.
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
	// certificate is checked against: these alone, not the system's.
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
	cfg  *tls.Config
	pair *keyPair // nil without a client certificate
}

// NewClient reads c's files for the server at rawURL. A setting that
// cannot work is an error naming the file; logger hears of a rotation
// that did not read.
func NewClient(rawURL string, c Config, logger *slog.Logger) (*Client, error) {
	if u, err := url.Parse(rawURL); err != nil || u.Scheme != "https" {
		return nil, errors.New("tls needs an https url")
	}
	if c.CAFile == "" && c.CertFile == "" && c.KeyFile == "" && c.ServerName == "" {
		return nil, errors.New("tls is empty: give ca_file, cert_file and key_file, or server_name")
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		return nil, errors.New("tls: cert_file and key_file go together")
	}
	cl := &Client{cfg: &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.ServerName}}
	if c.CAFile != "" {
		pem, err := readPEM(c.CAFile)
		if err != nil {
			return nil, fmt.Errorf("tls ca_file: %w", err)
		}
		cl.cfg.RootCAs = x509.NewCertPool()
		if !cl.cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tls ca_file %s: no PEM certificate in it", c.CAFile)
		}
	}
	if c.CertFile != "" {
		cl.pair = &keyPair{certFile: c.CertFile, keyFile: c.KeyFile, logger: logger}
		if err := cl.pair.load(); err != nil {
			return nil, err
		}
		cl.cfg.GetClientCertificate = cl.pair.get
	}
	return cl, nil
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
	c.pair.mu.Lock()
	defer c.pair.mu.Unlock()
	return c.pair.cert.Leaf.NotAfter, true
}

// keyPair is a client certificate read from its files, and read again
// when they change: cert-manager and the kubelet rotate a Secret's files
// in place, and a pod must not need a restart to present the new one.
// The files are read at each new connection and compared, not stat'ed: a
// rotation can keep a file's size and land within its clock's tick, and
// connections are kept alive, so new ones are few.
type keyPair struct {
	certFile, keyFile string
	logger            *slog.Logger

	mu   sync.Mutex
	cert *tls.Certificate
	// The files' sums, not their bytes: no second copy of the key is
	// kept to compare with.
	sum       [sha256.Size]byte // of the files the certificate was made of
	failed    string            // the last failure, logged once for its files
	failedSum [sha256.Size]byte
}

// load reads the pair, for start-up, where a bad one is the config's error.
func (k *keyPair) load() error {
	certPEM, keyPEM, err := k.read()
	if err != nil {
		return err
	}
	cert, err := k.pair(certPEM, keyPEM)
	if err != nil {
		return err
	}
	k.cert, k.sum = cert, sum(certPEM, keyPEM)
	return nil
}

// sum is one digest of the two files, each's length first so that no
// split of the same bytes between them sums alike.
func sum(certPEM, keyPEM []byte) [sha256.Size]byte {
	h := sha256.New()
	for _, b := range [][]byte{certPEM, keyPEM} {
		h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(b))))
		h.Write(b)
	}
	return [sha256.Size]byte(h.Sum(nil))
}

func (k *keyPair) read() (certPEM, keyPEM []byte, err error) {
	if certPEM, err = readPEM(k.certFile); err != nil {
		return nil, nil, fmt.Errorf("tls cert_file: %w", err)
	}
	if keyPEM, err = readPEM(k.keyFile); err != nil {
		return nil, nil, fmt.Errorf("tls key_file: %w", err)
	}
	return certPEM, keyPEM, nil
}

func (k *keyPair) pair(certPEM, keyPEM []byte) (*tls.Certificate, error) {
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err == nil && cert.Leaf == nil { // GODEBUG=x509keypairleaf=0
		cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0])
	}
	if err != nil {
		// crypto/tls's errors name no key material.
		return nil, fmt.Errorf("tls cert_file %s, key_file %s: %w", k.certFile, k.keyFile, err)
	}
	return &cert, nil
}

// get is the certificate for a new connection: the files' own, made again
// if they changed. A pair that does not read or match (a rotation caught
// halfway, the key written before the certificate) keeps the last good
// one and says so, once for each such pair of files.
func (k *keyPair) get(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	certPEM, keyPEM, err := k.read()
	now := sum(certPEM, keyPEM)
	if err == nil && now == k.sum {
		return k.cert, nil
	}
	var cert *tls.Certificate
	if err == nil {
		cert, err = k.pair(certPEM, keyPEM)
	}
	if err != nil {
		if err.Error() != k.failed || now != k.failedSum {
			k.failed, k.failedSum = err.Error(), now
			k.logger.Warn("client certificate not read again; presenting the one read before", "err", err)
		}
		return k.cert, nil
	}
	k.cert, k.sum, k.failed = cert, now, ""
	return k.cert, nil
}

func readPEM(path string) ([]byte, error) { return readfile.Read(path, maxPEMBytes) }
