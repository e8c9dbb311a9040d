package redis_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"github.com/dispatcher/dispatcher/dispatch"
	"github.com/dispatcher/dispatcher/store/redis"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
	"github.com/dispatcher/dispatcher/store/storetest"
)

// aclCommands are the commands the store sends, and the scripts call, and
// no others: the dispatcher's Redis user needs these alone.
// docs/operations.md shows the ACL rule that aclRule builds from them.
var aclCommands = []string{
	// Readiness, and the store's library (FCALL, FCALL_RO for the reads,
	// FUNCTION LOAD when Redis lacks it).
	"ping", "fcall", "fcall_ro", "function|load",
	// The pool list, outside the scripts, and the metrics' reads.
	"zadd", "zrem", "zrange", "zcard", "exists", "hmget", "hlen", "llen",
	// A dispatch that waits for replicas (Options.WaitReplicas).
	"set", "wait",
	// A Cluster client's slot map.
	"cluster|slots",
	// In the scripts.
	"del", "get", "hdel", "hexists", "hget", "hgetall", "hincrby", "hkeys", "hset",
	"lrange", "ltrim", "rpush", "unlink", "zcount", "zincrby", "zscore", "zmscore", "zunionstore",
	// The rate limiter's script (redis_rate: EVALSHA first, EVAL when
	// Redis has not seen it since it started), on Redis's clock.
	"evalsha", "eval", "time",
}

// aclRule is the ACL SETUSER rule of the dispatcher's user, after its name:
// on, a password, no channels, the store's keys and the rate limiter's
// (redis_rate puts "rate:" before them), and aclCommands.
func aclRule(password string) string {
	rule := "on >" + password + " resetchannels ~dispatch:* ~rate:" + redis.LimiterKeyPrefix + "* -@all"
	for _, c := range aclCommands {
		rule += " +" + c
	}
	return rule
}

// TestACLCoversScripts: every command a script calls is in aclCommands,
// so a Redis user with aclRule can run every script.
func TestACLCoversScripts(t *testing.T) {
	files, err := filepath.Glob("lua/*.lua")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	call := regexp.MustCompile(`redis\.p?call\(\s*'([A-Za-z_]+)'`)
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range call.FindAllStringSubmatch(string(src), -1) {
			if !slices.Contains(aclCommands, strings.ToLower(m[1])) {
				t.Errorf("%s calls %s, which aclCommands (and the ACL rule in docs/operations.md) lack", f, m[1])
			}
		}
	}
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatalf("docs/operations.md: %v", err)
	}
	if want := "ACL SETUSER dispatcher " + aclRule("<password>"); !strings.Contains(string(doc), want) {
		t.Errorf("docs/operations.md does not show the ACL rule %q", want)
	}
}

// TestACLUser runs the conformance suite as a Redis user that may run only
// aclCommands on the store's keys, named with its password in the URL; a
// wrong password fails every call with ErrUnavailable and a clear cause.
func TestACLUser(t *testing.T) {
	srv := redistest.Start(t)
	addACLUser(t, srv)
	root := goredis.NewClient(&goredis.Options{Addr: srv.Addr()})
	defer root.Close()
	// The default user is off, as it should be in production; the test
	// empties Redis as a user of its own.
	if err := root.Do(context.Background(), "ACL", "SETUSER", "admin", "on", ">admin-pass", "~*", "&*", "+@all").Err(); err != nil {
		t.Fatalf("ACL SETUSER admin: %v", err)
	}
	if err := root.Do(context.Background(), "ACL", "SETUSER", "default", "off").Err(); err != nil {
		t.Fatalf("ACL SETUSER default off: %v", err)
	}
	admin := goredis.NewClient(&goredis.Options{Addr: srv.Addr(), Username: "admin", Password: "admin-pass"})
	t.Cleanup(func() { _ = admin.Close() })
	c, err := redis.NewClient("redis://dispatcher:"+aclPassword+"@"+srv.Addr()+"/0", "single")
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	t.Run("conformance", func(t *testing.T) {
		storetest.Run(t, func(t testing.TB, opts storetest.Options) dispatch.Store {
			if err := admin.FlushAll(context.Background()).Err(); err != nil {
				t.Fatalf("FLUSHALL: %v", err)
			}
			return redis.New(c, redis.Options{Retention: opts.Retention, MaxScales: opts.MaxScales})
		})
	})
	t.Run("rate limiter", func(t *testing.T) {
		l := redis.NewLimiter(c)
		for i, want := range []bool{true, true, false} {
			wait, err := l.Allow(context.Background(), "acl", 1, 2)
			if err != nil || (wait == 0) != want {
				t.Fatalf("request %d: wait %s, %v; want allowed %v", i+1, wait, err, want)
			}
		}
	})
	t.Run("not other keys", func(t *testing.T) {
		if err := c.Set(context.Background(), "other", "x", 0).Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
			t.Errorf("SET of a key outside dispatch:*: got %v, want NOPERM", err)
		}
	})
	t.Run("wrong password", func(t *testing.T) {
		bad, err := redis.NewClient("redis://dispatcher:wrong@"+srv.Addr()+"/0", "single")
		if err != nil {
			t.Fatalf("NewClient: %v", err)
		}
		defer bad.Close()
		err = redis.New(bad, redis.Options{}).Ping(context.Background())
		if !errors.Is(err, dispatch.ErrUnavailable) || !strings.Contains(err.Error(), "WRONGPASS") {
			t.Errorf("Ping with a wrong password: got %v, want ErrUnavailable naming WRONGPASS", err)
		}
	})
}

// aclPassword is the password of the test's ACL user "dispatcher".
const aclPassword = "s3cret-pass"

// addACLUser adds the user "dispatcher" with aclRule to each server.
func addACLUser(t testing.TB, servers ...*redistest.Server) {
	t.Helper()
	args := []any{"ACL", "SETUSER", "dispatcher"}
	for _, f := range strings.Fields(aclRule(aclPassword)) {
		args = append(args, f)
	}
	for _, srv := range servers {
		c := goredis.NewClient(&goredis.Options{Addr: srv.Addr()})
		err := c.Do(context.Background(), args...).Err()
		_ = c.Close()
		if err != nil {
			t.Fatalf("ACL SETUSER on %s: %v", srv.Addr(), err)
		}
	}
}
