package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

func TestLoadRedisURL(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("url", "  redis://u:p@127.0.0.1:6379/0\n")
	for _, tc := range []struct {
		name, value, path, want, wantErr string
	}{
		{"inline", "redis://h:1/0", "", "redis://h:1/0", ""},
		{"none", "", "", "", ""},
		{"file", "", good, "redis://u:p@127.0.0.1:6379/0", ""},
		{"both", "redis://h:1/0", good, "", "given both inline"},
		{"missing file", "", filepath.Join(dir, "nope"), "", "DISPATCHER_REDIS_URL_FILE"},
		{"empty file", "", write("empty", "\n"), "", "holds no URL"},
		{"two lines", "", write("two", "redis://a:1/0\nredis://b:1/0\n"), "", "more than one line"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := loadRedisURL(tc.value, tc.path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("got %q, %v; want an error naming %q", got, err, tc.wantErr)
				}
				if err != nil && strings.Contains(err.Error(), "redis://") {
					t.Errorf("error %q shows a URL", err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	c, err := parseConfig(nil, envOf(map[string]string{
		"DISPATCHER_REDIS_URL_FILE": good,
		"DISPATCHER_REDIS_CA_FILE":  "/ca.pem", "DISPATCHER_REDIS_CERT_FILE": "/c.pem", "DISPATCHER_REDIS_KEY_FILE": "/k.pem",
	}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if c.RedisURL != "redis://u:p@127.0.0.1:6379/0" || c.RedisCAFile != "/ca.pem" || c.RedisCertFile != "/c.pem" || c.RedisKeyFile != "/k.pem" {
		t.Errorf("got URL %q, CA %q, cert %q, key %q from the environment", c.RedisURL, c.RedisCAFile, c.RedisCertFile, c.RedisKeyFile)
	}
}

// TestRunRedisTLSAndACL runs the service on a Redis that serves TLS with a
// private CA and admits one ACL user, the URL (with the password) read from
// a file and the CA from DISPATCHER_REDIS_CA_FILE, as a Kubernetes Secret
// would mount them; then checks the store's metrics on /metrics.
func TestRunRedisTLSAndACL(t *testing.T) {
	certs := redistest.WriteCerts(t)
	srv := redistest.StartTLS(t, certs, false)
	addUser(t, srv.Server, "dispatcher", "pw-from-a-secret")
	urlFile := filepath.Join(t.TempDir(), "redis-url")
	url := "rediss://dispatcher:pw-from-a-secret@" + srv.TLSAddr() + "/0\n"
	if err := os.WriteFile(urlFile, []byte(url), 0o600); err != nil {
		t.Fatal(err)
	}
	addr, sink := startRun(t, nil, map[string]string{
		"DISPATCHER_REDIS_URL_FILE": urlFile,
		"DISPATCHER_REDIS_CA_FILE":  certs.CA,
	})
	base := "http://" + addr
	if code, body := get(t, base+"/readyz", ""); code != http.StatusOK {
		t.Fatalf("readyz: got %d %s, want 200", code, body)
	}
	do(t, http.MethodPut, base+"/v1/pools/p", `{}`, http.StatusCreated)
	do(t, http.MethodPut, base+"/v1/pools/p/scales/S1", `{}`, http.StatusCreated)
	do(t, http.MethodPost, base+"/v1/pools/p/batches", `{"orders":[{"id":"o-1"},{"id":"o-2"}]}`, http.StatusCreated)
	if strings.Contains(sink.String(), "pw-from-a-secret") {
		t.Errorf("the log shows the Redis password:\n%s", sink)
	}
	_, metrics := get(t, base+"/metrics", "")
	for _, want := range []string{
		`dispatcher_redis_script_duration_seconds_count{script="dispatch"} 1`,
		`dispatcher_redis_script_duration_seconds_count{script="pool_put"} 1`,
		`dispatcher_outstanding_orders{pool="p"} 2`,
		`dispatcher_pools 1`,
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if m := regexp.MustCompile(`(?m)^dispatcher_redis_errors_total.*$`).FindAllString(metrics, -1); len(m) > 0 {
		t.Errorf("/metrics counts Redis errors: %v", m)
	}
}

// TestRunRefusedByRedis: a Redis that refuses the dispatcher fails the
// start-up with a clear error; one that is not there yet does not.
func TestRunRefusedByRedis(t *testing.T) {
	certs := redistest.WriteCerts(t)
	srv := redistest.StartTLS(t, certs, false)
	addUser(t, srv.Server, "dispatcher", "right")
	mtls := redistest.StartTLS(t, certs, true)
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"wrong password", map[string]string{
			"DISPATCHER_REDIS_URL":     "rediss://dispatcher:wrong@" + srv.TLSAddr() + "/0",
			"DISPATCHER_REDIS_CA_FILE": certs.CA,
		}, "WRONGPASS"},
		{"untrusted certificate", map[string]string{
			"DISPATCHER_REDIS_URL": "rediss://dispatcher:right@" + srv.TLSAddr() + "/0",
		}, "certificate"},
		{"no client certificate", map[string]string{
			"DISPATCHER_REDIS_URL":     mtls.TLSURL(),
			"DISPATCHER_REDIS_CA_FILE": certs.CA,
		}, "tls"},
		{"no such database", map[string]string{
			"DISPATCHER_REDIS_URL": "redis://" + srv.Addr() + "/99",
		}, "DB index"},
		{"cluster mode on a server without it", map[string]string{
			"DISPATCHER_REDIS_URL":  "redis://" + srv.Addr(),
			"DISPATCHER_REDIS_MODE": "cluster",
		}, "cluster support disabled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			sink := &logSink{addr: make(chan string, 1)}
			done := make(chan error, 1)
			go func() { done <- run(ctx, []string{"-addr", "127.0.0.1:0"}, envOf(tc.env), sink, io.Discard) }()
			var err error
			select {
			case err = <-done:
			case <-sink.addr:
				cancel()
				<-done
				t.Fatalf("run started; want it to fail; log:\n%s", sink)
			}
			if err == nil || !strings.Contains(err.Error(), "refuses this dispatcher") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("run: got %v, want a refusal naming %q", err, tc.want)
			}
			if err != nil && (strings.Contains(err.Error(), "right@") || strings.Contains(err.Error(), "wrong@")) {
				t.Errorf("the error shows the URL: %v", err)
			}
		})
	}
	t.Run("not there yet", func(t *testing.T) {
		down := redistest.Start(t)
		down.Stop()
		addr, sink := startRun(t, nil, map[string]string{"DISPATCHER_REDIS_URL": down.URL()})
		if code, _ := get(t, "http://"+addr+"/readyz", ""); code != http.StatusServiceUnavailable {
			t.Errorf("readyz without Redis: got %d, want 503", code)
		}
		if !strings.Contains(sink.String(), "does not answer yet") {
			t.Errorf("no warning that Redis does not answer; log:\n%s", sink)
		}
	})
	// A Sentinel that does not monitor the master yet (an orchestrated
	// bring-up) answers nil: not a refusal.
	t.Run("master not known yet", func(t *testing.T) {
		primary := redistest.Start(t)
		sentinel := redistest.StartSentinel(t, "other", primary)
		addr, sink := startRun(t, nil, map[string]string{
			"DISPATCHER_REDIS_MODE": "sentinel",
			"DISPATCHER_REDIS_URL":  fmt.Sprintf("redis://%s/0?master_name=dispatch", sentinel.Addr()),
		})
		if code, _ := get(t, "http://"+addr+"/readyz", ""); code != http.StatusServiceUnavailable {
			t.Errorf("readyz without the master: got %d, want 503", code)
		}
		if !strings.Contains(sink.String(), "does not answer yet") {
			t.Errorf("no warning that Redis does not answer; log:\n%s", sink)
		}
	})
}

// TestRunSentinelMode runs the service through Redis Sentinel, named by
// go-redis's failover URL.
func TestRunSentinelMode(t *testing.T) {
	primary := redistest.Start(t)
	replica := redistest.StartReplica(t, primary)
	sentinel := redistest.StartSentinel(t, "dispatch", primary, replica)
	addr, _ := startRun(t, nil, map[string]string{
		"DISPATCHER_REDIS_MODE": "sentinel",
		"DISPATCHER_REDIS_URL":  fmt.Sprintf("redis://%s/0?master_name=dispatch", sentinel.Addr()),
	})
	base := "http://" + addr
	do(t, http.MethodPut, base+"/v1/pools/p", `{}`, http.StatusCreated)
	do(t, http.MethodPut, base+"/v1/pools/p/scales/S1", `{}`, http.StatusCreated)
	do(t, http.MethodPost, base+"/v1/pools/p/batches", `{"orders":[{"id":"o-1"}]}`, http.StatusCreated)
	c := goredis.NewClient(&goredis.Options{Addr: primary.Addr()})
	defer c.Close()
	if ok, err := c.HExists(context.Background(), "dispatch:{pool:p}:orders", "o-1").Result(); err != nil || !ok {
		t.Errorf("order o-1 on the primary: got %v, %v; want it held", ok, err)
	}
}

// addUser adds an ACL user with every right on the store's keys.
func addUser(t *testing.T, srv *redistest.Server, user, password string) {
	t.Helper()
	c := goredis.NewClient(&goredis.Options{Addr: srv.Addr()})
	defer c.Close()
	if err := c.Do(context.Background(), "ACL", "SETUSER", user, "on", ">"+password, "~dispatch:*", "+@all").Err(); err != nil {
		t.Fatalf("ACL SETUSER: %v", err)
	}
}
