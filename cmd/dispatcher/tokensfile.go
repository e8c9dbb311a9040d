package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dispatcher/dispatcher/api"
)

// fileTokens is the tokens of DISPATCHER_TOKENS_FILE as last loaded. It
// prints, logs and marshals as their count and names, never a digest.
type fileTokens []api.Token

// String says how many tokens there are and names them.
func (f fileTokens) String() string {
	names := make([]string, len(f))
	for i, t := range f {
		names[i] = t.Name
	}
	return fmt.Sprintf("%d %s (%s)", len(f), plural(len(f), "token"), strings.Join(names, ", "))
}

// GoString masks the digests for %#v as String does for %v.
func (f fileTokens) GoString() string { return "fileTokens(" + f.String() + ")" }

// LogValue masks the digests in slog output.
func (f fileTokens) LogValue() slog.Value { return slog.StringValue(f.String()) }

// MarshalJSON masks the digests in JSON.
func (f fileTokens) MarshalJSON() ([]byte, error) { return json.Marshal(f.String()) }

// loadTokensFile reads and checks the tokens file at path: the tokens, and
// the digest of the bytes read (which tells a reload whether anything
// changed). A token of the file that is also one of the environment's
// (their digests in env) is an error: it would have two roles or scopes.
func loadTokensFile(path string, env map[[sha256.Size]byte]bool) (fileTokens, [sha256.Size]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, [sha256.Size]byte{}, err
	}
	sum := sha256.Sum256(b)
	tokens, err := api.ParseTokensFile(b)
	if err != nil {
		return nil, sum, err
	}
	var errs []error
	for _, t := range tokens {
		if env[t.SHA256] {
			errs = append(errs, fmt.Errorf("token %q is also in DISPATCHER_ADMIN_TOKENS or DISPATCHER_CLIENT_TOKENS: give it one place", t.Name))
		}
	}
	return tokens, sum, errors.Join(errs...)
}

// envDigests returns the digests of the tokens of the environment.
func envDigests(lists ...tokenList) map[[sha256.Size]byte]bool {
	out := map[[sha256.Size]byte]bool{}
	for _, l := range lists {
		for _, t := range l {
			out[sha256.Sum256([]byte(t))] = true
		}
	}
	return out
}

// tokenReloader keeps an api.TokenSet in step with the tokens file: it
// loads the file again on SIGHUP and whenever its content changes. The
// content is read and compared, not the file's time or inode: a Kubernetes
// Secret volume swaps a symlink (..data) to a new directory, an editor
// renames a new file over the old one, and either way the bytes at the
// path are what count. A file that fails to load leaves the set as it was
// and is logged once per content, at error.
type tokenReloader struct {
	path    string
	set     *api.TokenSet
	env     map[[sha256.Size]byte]bool
	log     *slog.Logger
	reloads *prometheus.CounterVec
	last    [sha256.Size]byte // the content last tried, loaded or not
}

// newTokenReloader returns the reloader of the file at path, whose content
// loaded (the digest of its bytes) is in set already.
func newTokenReloader(path string, set *api.TokenSet, loaded [sha256.Size]byte, env map[[sha256.Size]byte]bool, log *slog.Logger, reg prometheus.Registerer) *tokenReloader {
	reloads := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dispatcher_tokens_reloads_total",
		Help: "Loads of DISPATCHER_TOKENS_FILE after the start, by result: ok, or error (the tokens loaded before stay).",
	}, []string{"result"})
	reg.MustRegister(reloads)
	return &tokenReloader{path: path, set: set, env: env, log: log, reloads: reloads, last: loaded}
}

// reload loads the file if its content changed since the last try, or
// whatever it holds when force is set (SIGHUP), and reports whether the
// set changed.
func (r *tokenReloader) reload(force bool) bool {
	tokens, sum, err := loadTokensFile(r.path, r.env)
	if !force && sum == r.last {
		return false
	}
	r.last = sum
	if err == nil {
		err = r.set.Replace(tokens)
	}
	if err != nil {
		r.reloads.WithLabelValues("error").Inc()
		r.log.Error("tokens file not loaded: the tokens loaded before stay in force",
			"path", r.path, "tokensInForce", len(r.set.Names()), "error", err.Error())
		return false
	}
	r.reloads.WithLabelValues("ok").Inc()
	r.log.Info("tokens file loaded", "path", r.path, "tokens", tokens)
	return true
}

// run reloads on every signal of hup and every interval until ctx ends.
// An unreadable file is reported when it becomes unreadable, not at every
// tick (its digest is that of no content).
func (r *tokenReloader) run(ctx context.Context, hup <-chan os.Signal, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			r.log.Info("SIGHUP: loading the tokens file", "path", r.path)
			r.reload(true)
		case <-tick.C:
			r.reload(false)
		}
	}
}
