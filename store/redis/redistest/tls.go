package redistest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// Certs names the PEM files of a throwaway certificate authority, a
// server certificate it signed for 127.0.0.1 and localhost, and a client
// certificate it signed.
type Certs struct {
	CA         string // the CA's certificate
	Cert, Key  string // the server's certificate and key
	ClientCert string // a client's certificate, for tls-auth-clients
	ClientKey  string
}

// WriteCerts makes a self-signed CA and certificates it signed, valid for
// an hour, in a directory of t's that is removed when t ends.
func WriteCerts(t testing.TB) Certs {
	t.Helper()
	dir := t.TempDir()
	c := Certs{
		CA:   filepath.Join(dir, "ca.crt"),
		Cert: filepath.Join(dir, "redis.crt"), Key: filepath.Join(dir, "redis.key"),
		ClientCert: filepath.Join(dir, "client.crt"), ClientKey: filepath.Join(dir, "client.key"),
	}
	now := time.Now()
	caKey := newKey(t)
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "redistest CA"},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatalf("redistest: CA certificate: %v", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatalf("redistest: CA certificate: %v", err)
	}
	writePEM(t, c.CA, "CERTIFICATE", caDER)
	leaf := func(serial int64, name string, usage x509.ExtKeyUsage, certFile, keyFile string) {
		key := newKey(t)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: name},
			NotBefore:    now.Add(-time.Minute),
			NotAfter:     now.Add(time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
			DNSNames:     []string{"localhost"},
			IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatalf("redistest: %s certificate: %v", name, err)
		}
		writePEM(t, certFile, "CERTIFICATE", der)
		kb, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			t.Fatalf("redistest: %s key: %v", name, err)
		}
		writePEM(t, keyFile, "PRIVATE KEY", kb)
	}
	leaf(2, "redis", x509.ExtKeyUsageServerAuth, c.Cert, c.Key)
	leaf(3, "dispatcher", x509.ExtKeyUsageClientAuth, c.ClientCert, c.ClientKey)
	return c
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("redistest: key: %v", err)
	}
	return k
}

func writePEM(t testing.TB, path, kind string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatalf("redistest: %v", err)
	}
}

// TLSServer is a redis-server that also serves TLS on a port of its own.
type TLSServer struct {
	*Server
	tlsPort int
}

// StartTLS runs a new redis-server that serves TLS with the certificates of
// c on a second port, besides plain TCP on Addr (for the tests' own
// checks), with args beyond the defaults. With clientCerts it requires a
// client certificate its CA signed (tls-auth-clients yes).
func StartTLS(t testing.TB, c Certs, clientCerts bool, args ...string) *TLSServer {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatalf("redistest: no free port: %v", err)
	}
	auth := "no"
	if clientCerts {
		auth = "yes"
	}
	s := start(t, append([]string{
		"--tls-port", strconv.Itoa(port),
		"--tls-cert-file", c.Cert, "--tls-key-file", c.Key, "--tls-ca-cert-file", c.CA,
		"--tls-auth-clients", auth,
	}, args...)...)
	return &TLSServer{Server: s, tlsPort: port}
}

// TLSAddr returns the host:port of the server's TLS port.
func (s *TLSServer) TLSAddr() string { return "127.0.0.1:" + strconv.Itoa(s.tlsPort) }

// TLSURL returns a rediss:// URL of the server's TLS port for
// goredis.ParseURL.
func (s *TLSServer) TLSURL() string { return "rediss://" + s.TLSAddr() + "/0" }
