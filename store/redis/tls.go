package redis

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// WithTLSFiles makes the TLS connections of a rediss:// URL trust only the
// certificate authority in the PEM file caFile instead of the system's
// roots (none: the system's), and present the client certificate certFile
// with its key keyFile to a Redis that requires one (tls-auth-clients yes;
// none: no certificate). The files are read once, by NewClient.
func WithTLSFiles(caFile, certFile, keyFile string) Option {
	return func(o *clientOptions) { o.caFile, o.certFile, o.keyFile = caFile, certFile, keyFile }
}

// tls applies the TLS files to cfg, the TLS settings the URL gave (nil for
// a redis:// URL), and returns it. Naming a file for a redis:// URL is an
// error, as a setting that silently does nothing would be.
func (o clientOptions) tls(cfg *tls.Config) (*tls.Config, error) {
	if o.caFile == "" && o.certFile == "" && o.keyFile == "" {
		return cfg, nil
	}
	if cfg == nil {
		return nil, errors.New("redis: DISPATCHER_REDIS_CA_FILE, _CERT_FILE and _KEY_FILE need a rediss:// URL")
	}
	cfg = cfg.Clone()
	if o.caFile != "" {
		pem, err := os.ReadFile(o.caFile)
		if err != nil {
			return nil, fmt.Errorf("redis: DISPATCHER_REDIS_CA_FILE: %w", err)
		}
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("redis: DISPATCHER_REDIS_CA_FILE %s holds no PEM certificate", o.caFile)
		}
		cfg.RootCAs = roots
	}
	if (o.certFile == "") != (o.keyFile == "") {
		return nil, errors.New("redis: DISPATCHER_REDIS_CERT_FILE and DISPATCHER_REDIS_KEY_FILE go together: set both or neither")
	}
	if o.certFile != "" {
		pair, err := tls.LoadX509KeyPair(o.certFile, o.keyFile)
		if err != nil {
			return nil, fmt.Errorf("redis: DISPATCHER_REDIS_CERT_FILE, DISPATCHER_REDIS_KEY_FILE: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}
