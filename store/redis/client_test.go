package redis_test

import (
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/dispatcher/dispatcher/store/redis"
)

func TestNewClientModes(t *testing.T) {
	for _, tc := range []struct{ url, mode string }{
		{"redis://127.0.0.1:6379/0", "single"},
		{"redis://127.0.0.1:6379/0", ""},
		{"redis://127.0.0.1:7000?addr=127.0.0.1:7001&addr=127.0.0.1:7002", "cluster"},
		{"redis://127.0.0.1:26379?master_name=mymaster", "sentinel"},
	} {
		c, err := redis.NewClient(tc.url, tc.mode)
		if err != nil {
			t.Errorf("NewClient(%q, %q): %v", tc.url, tc.mode, err)
			continue
		}
		_ = c.Close()
	}
	for _, tc := range []struct{ url, mode string }{
		{"redis://127.0.0.1:6379/0", "ring"},
		{"http://127.0.0.1:6379", "single"},
		{"http://127.0.0.1:6379", "cluster"},
		{"redis://127.0.0.1:26379", "sentinel"}, // no master_name
	} {
		if c, err := redis.NewClient(tc.url, tc.mode); err == nil {
			_ = c.Close()
			t.Errorf("NewClient(%q, %q): no error", tc.url, tc.mode)
		}
	}
}

// TestNewClientURLErrorsHideThePassword: a URL that does not parse is
// refused without being quoted, as it may hold a password.
func TestNewClientURLErrorsHideThePassword(t *testing.T) {
	for _, mode := range []string{"single", "cluster", "sentinel"} {
		for _, u := range []string{
			"redis://:SECRETpw%zz@127.0.0.1:6379/0",
			"redis://user:SECRETpw@127.0.0.1:port/0?master_name=m",
			"redis://user:SECRETpw@[::1/0",
			// a '/', '#' or '?' not percent-encoded ends the password early,
			// and the parsers quote the rest
			"redis://user:SECR/ETpw@127.0.0.1:6379/0?master_name=m",
			"redis://user:SECR#ETpw@127.0.0.1:6379/0?master_name=m",
			"redis://user:1234/SECRETpw@127.0.0.1:6379/0?master_name=m",
			"redis://user:1234?SECRETpw@127.0.0.1:6379/0&master_name=m",
		} {
			c, err := redis.NewClient(u, mode)
			if err == nil {
				// (cluster mode takes user:1234 for a node's address)
				_ = c.Close()
				continue
			}
			if strings.Contains(err.Error(), "SECR") {
				t.Errorf("NewClient(%s): the error shows the password: %v", mode, err)
			}
		}
	}
}

// TestNewClientOptions: the store's settings apply where the URL sets
// nothing, and the URL wins where it does.
func TestNewClientOptions(t *testing.T) {
	c, err := redis.NewClient("redis://127.0.0.1:6379/0?read_timeout=7s", "single")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	opt := c.(*goredis.Client).Options()
	if !opt.ContextTimeoutEnabled {
		t.Errorf("ContextTimeoutEnabled: got false, want true")
	}
	if opt.ReadTimeout != 7*time.Second {
		t.Errorf("ReadTimeout: got %v, want the URL's 7s", opt.ReadTimeout)
	}
	if opt.DialTimeout != 2*time.Second || opt.MaxRetries != 2 || opt.DialerRetries != 1 || opt.PoolTimeout != time.Second {
		t.Errorf("got DialTimeout %v, MaxRetries %d, DialerRetries %d, PoolTimeout %v; want 2s, 2, 1, 1s",
			opt.DialTimeout, opt.MaxRetries, opt.DialerRetries, opt.PoolTimeout)
	}
}
