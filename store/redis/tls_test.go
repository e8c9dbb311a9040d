package redis_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// TestTLS runs the store over TLS (a rediss:// URL) to a Redis whose
// certificate a private CA signed: trusted through WithTLSFiles, refused
// without it.
func TestTLS(t *testing.T) {
	certs := redistest.WriteCerts(t)
	srv := redistest.StartTLS(t, certs, false)

	t.Run("untrusted", func(t *testing.T) {
		c, err := redis.NewClient(srv.TLSURL(), "single")
		if err != nil {
			t.Fatalf("NewClient: %v", err)
		}
		defer c.Close()
		err = redis.New(c, redis.Options{}).Ping(context.Background())
		if !errors.Is(err, dispatch.ErrUnavailable) || !strings.Contains(err.Error(), "certificate") {
			t.Errorf("Ping with the system's roots: got %v, want ErrUnavailable naming the certificate", err)
		}
	})
	t.Run("trusted", func(t *testing.T) {
		c, err := redis.NewClient(srv.TLSURL(), "single", redis.WithTLSFiles(certs.CA, "", ""))
		if err != nil {
			t.Fatalf("NewClient: %v", err)
		}
		defer c.Close()
		smokeTest(t, redis.New(c, redis.Options{}))
	})
}

// smokeTest runs a pool through its life: Scales, a batch, a completion,
// a cancellation, the lists, deletion.
func smokeTest(t *testing.T, s dispatch.Store) {
	t.Helper()
	ctx := context.Background()
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	poolWithScales(t, s, "p", 3)
	b, err := dispatchRetrying(s, "p", "b1", 6)
	if err != nil || len(b.Assignments) != 6 {
		t.Fatalf("Dispatch: got %d assignments, %v; want 6", len(b.Assignments), err)
	}
	now := time.Now()
	if _, n, err := s.Complete(ctx, "p", []dispatch.Completion{{OrderID: b.Assignments[0].OrderID}}, now); err != nil || n != 1 {
		t.Errorf("Complete: got %d, %v; want 1", n, err)
	}
	if _, err := s.Cancel(ctx, "p", b.Assignments[1].OrderID, now); err != nil {
		t.Errorf("Cancel: %v", err)
	}
	if n := sumOutstanding(t, s, "p"); n != 4 {
		t.Errorf("outstanding: got %d, want 4", n)
	}
	if ps, err := listAllPools(s); err != nil || len(ps) != 1 {
		t.Errorf("ListPools: got %v, %v; want pool p", ps, err)
	}
	if err := s.DeletePool(ctx, "p"); err != nil {
		t.Errorf("DeletePool: %v", err)
	}
}

// TestMutualTLS: a Redis with tls-auth-clients yes admits the client that
// presents a certificate its CA signed, and only that one.
func TestMutualTLS(t *testing.T) {
	certs := redistest.WriteCerts(t)
	srv := redistest.StartTLS(t, certs, true)
	for _, tc := range []struct {
		name      string
		cert, key string
		ok        bool
	}{
		{"no client certificate", "", "", false},
		{"client certificate", certs.ClientCert, certs.ClientKey, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := redis.NewClient(srv.TLSURL(), "single", redis.WithTLSFiles(certs.CA, tc.cert, tc.key))
			if err != nil {
				t.Fatalf("NewClient: %v", err)
			}
			defer c.Close()
			s := redis.New(c, redis.Options{})
			if tc.ok {
				smokeTest(t, s)
			} else if err := s.Ping(context.Background()); !errors.Is(err, dispatch.ErrUnavailable) {
				t.Errorf("Ping: got %v, want ErrUnavailable", err)
			}
		})
	}
}

// TestTLSFilesRejected: TLS files that cannot work fail NewClient, naming
// the setting, rather than the first call.
func TestTLSFilesRejected(t *testing.T) {
	certs := redistest.WriteCerts(t)
	notPEM := filepath.Join(t.TempDir(), "ca.txt")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	const tlsURL = "rediss://127.0.0.1:6380/0"
	for _, tc := range []struct {
		name, url, ca, cert, key, want string
	}{
		{"plain URL", "redis://127.0.0.1:6379/0", certs.CA, "", "", "rediss://"},
		{"missing CA", tlsURL, filepath.Join(t.TempDir(), "none.crt"), "", "", "DISPATCHER_REDIS_CA_FILE"},
		{"CA not PEM", tlsURL, notPEM, "", "", "no PEM certificate"},
		{"cert without key", tlsURL, certs.CA, certs.ClientCert, "", "set both or neither"},
		{"key of another cert", tlsURL, certs.CA, certs.ClientCert, certs.Key, "DISPATCHER_REDIS_CERT_FILE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, mode := range []string{"single", "cluster", "sentinel"} {
				url := tc.url
				if mode == "sentinel" {
					url += "?master_name=m"
				}
				c, err := redis.NewClient(url, mode, redis.WithTLSFiles(tc.ca, tc.cert, tc.key))
				if err == nil {
					_ = c.Close()
					t.Errorf("%s: NewClient: no error", mode)
				} else if !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%s: NewClient: got %v, want an error naming %q", mode, err, tc.want)
				}
			}
		})
	}
}
