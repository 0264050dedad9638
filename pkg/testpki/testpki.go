// Package testpki issues certificates for tests of TLS: a CA, and server
// and client certificates it signs. Tests and cmd/connmem, a measuring
// command, use it; the service does not (make lint's deadcode check
// leaves it out).
package testpki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// CA is a certificate authority valid for an hour either side of now.
type CA struct {
	Cert *x509.Certificate
	PEM  []byte // Cert, PEM-encoded
	key  *ecdsa.PrivateKey
	// RSABits, when set, gives the certificates it issues RSA keys of
	// that size, cert-manager's default kind (2,048 bits), instead of
	// ECDSA P-256 ones: an RSA signature costs a server ten times more.
	RSABits int
}

var serial atomic.Int64

// NewCA makes a CA named name.
func NewCA(name string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := template(name)
	tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), key: key}, nil
}

// MustCA is NewCA for a test, which fails at an error.
func MustCA(tb testing.TB, name string) *CA {
	tb.Helper()
	ca, err := NewCA(name)
	if err != nil {
		tb.Fatal(err)
	}
	return ca
}

// Pool is a pool of the CA alone.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// Issue returns a certificate named cn and its key, PEM-encoded: a
// server's for names (host names or IP addresses) when there are any, a
// client's when there are none.
func (ca *CA) Issue(cn string, names ...string) (certPEM, keyPEM []byte, err error) {
	return ca.IssueUntil(cn, time.Now().Add(time.Hour).Truncate(time.Second), names...)
}

// IssueUntil is Issue of a certificate valid until notAfter.
func (ca *CA) IssueUntil(cn string, notAfter time.Time, names ...string) (certPEM, keyPEM []byte, err error) {
	key, keyPEM, err := ca.newKey()
	if err != nil {
		return nil, nil, err
	}
	tmpl := template(cn)
	tmpl.NotAfter = notAfter
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	if len(names) > 0 {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		for _, n := range names {
			if ip := net.ParseIP(n); ip != nil {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			} else {
				tmpl.DNSNames = append(tmpl.DNSNames, n)
			}
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM, nil
}

// newKey is a certificate's new key, with its PEM: ECDSA P-256, or RSA of
// ca.RSABits.
func (ca *CA) newKey() (crypto.Signer, []byte, error) {
	if ca.RSABits > 0 {
		key, err := rsa.GenerateKey(rand.Reader, ca.RSABits)
		if err != nil {
			return nil, nil, err
		}
		return key, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return key, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

// MutualTLS is a server's TLS config with a certificate of ca for names,
// asking every client for a certificate of ca (mutual TLS).
func (ca *CA) MutualTLS(names ...string) (*tls.Config, error) {
	certPEM, keyPEM, err := ca.Issue("server", names...)
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: ca.Pool()}, nil
}

// ClientFiles writes into dir what a client of such a server is given:
// the CA's certificate (ca.crt), and a client certificate of it named cn
// (tls.crt) with its key (tls.key), as a Kubernetes TLS Secret holds them.
func (ca *CA) ClientFiles(dir, cn string) (caFile, certFile, keyFile string, err error) {
	certPEM, keyPEM, err := ca.Issue(cn)
	if err != nil {
		return "", "", "", err
	}
	caFile, certFile, keyFile = filepath.Join(dir, "ca.crt"), filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	for _, f := range []struct {
		path string
		b    []byte
	}{{caFile, ca.PEM}, {certFile, certPEM}, {keyFile, keyPEM}} {
		if err := Put(f.path, f.b); err != nil {
			return "", "", "", err
		}
	}
	return caFile, certFile, keyFile, nil
}

// ServerFiles writes into dir a server's certificate of ca for names
// (tls.crt) and its key (tls.key), as a kubernetes.io/tls Secret holds
// them, for serve's -tls-cert-file and -tls-key-file.
func (ca *CA) ServerFiles(dir string, names ...string) (certFile, keyFile string, err error) {
	return ca.ServerFilesUntil(dir, time.Now().Add(time.Hour).Truncate(time.Second), names...)
}

// ServerFilesUntil is ServerFiles of a certificate valid until notAfter.
// Called again on the same dir it renews them as cert-manager does: the
// key first, then the certificate, each renamed into place.
func (ca *CA) ServerFilesUntil(dir string, notAfter time.Time, names ...string) (certFile, keyFile string, err error) {
	certPEM, keyPEM, err := ca.IssueUntil("toolsearch", notAfter, names...)
	if err != nil {
		return "", "", err
	}
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := Put(keyFile, keyPEM); err != nil {
		return "", "", err
	}
	return certFile, keyFile, Put(certFile, certPEM)
}

// Put writes b to path as the kubelet updates a mounted Secret's files:
// written aside, then renamed into place, so that a reader never sees it
// half written.
func Put(path string, b []byte) error {
	if err := os.WriteFile(path+".new", b, 0o600); err != nil {
		return err
	}
	return os.Rename(path+".new", path)
}

func template(cn string) *x509.Certificate {
	return &x509.Certificate{SerialNumber: big.NewInt(serial.Add(1)), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
}
