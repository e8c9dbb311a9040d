package main

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/valyala/fastjson"
)

// minimalLua is cmd/dispatch-bench/ceiling/minimal.lua, the least Redis
// work a batch dispatch needs: the thin service runs it for every batch.
//
//go:embed ceiling/minimal.lua
var minimalLua string

// thinConfig configures the thin mode.
type thinConfig struct {
	Addr  string
	Redis string
	// Scales is the number of Scales the thin service puts in a pool's
	// load ZSET the first time it sees the pool.
	Scales int
	// For stops the server after this long; 0 serves until SIGINT or SIGTERM.
	For time.Duration
}

func parseThinConfig(args []string, stderr io.Writer) (thinConfig, error) {
	c := thinConfig{Addr: "127.0.0.1:0", Redis: "redis://127.0.0.1:6379/0", Scales: 16}
	fs := newFlagSet("thin", stderr)
	fs.StringVar(&c.Addr, "addr", c.Addr, "listen address")
	fs.StringVar(&c.Redis, "redis", c.Redis, "Redis URL (redis:// or rediss://)")
	fs.IntVar(&c.Scales, "scales", c.Scales, "Scales in a pool's load ZSET, made the first time a pool is seen")
	fs.DurationVar(&c.For, "for", 0, "stop after this long; 0 serves until SIGINT or SIGTERM")
	if err := parseFlags(fs, args); err != nil {
		return c, err
	}
	return c, c.Validate()
}

// Validate reports every setting that is out of range.
func (c thinConfig) Validate() error {
	var errs []error
	if c.Addr == "" {
		errs = append(errs, errors.New("-addr must not be empty"))
	}
	if _, err := goredis.ParseURL(c.Redis); err != nil {
		errs = append(errs, fmt.Errorf("-redis: %w", err))
	}
	if c.Scales < 1 || c.Scales > 1_000_000 {
		errs = append(errs, fmt.Errorf("-scales %d: want 1 to 1000000", c.Scales))
	}
	if c.For < 0 {
		errs = append(errs, fmt.Errorf("-for %s: want zero or a positive duration", c.For))
	}
	return errors.Join(errs...)
}

// thinKeys returns the load ZSET and the order HASH of a pool of the thin
// service, in one hash slot.
func thinKeys(pool string) []string {
	return []string{"{thin:" + pool + "}:load", "{thin:" + pool + "}:orders"}
}

// thinService is the floor of this architecture: an HTTP handler that
// decodes a batch as the service's fast path does (one fastjson pass) and
// runs minimal.lua through go-redis, and nothing else: no validation
// beyond the JSON's shape, no idempotency, no batch record, no strategy.
type thinService struct {
	rdb    *goredis.Client
	script *goredis.Script
	scales int
	// seeded holds the pools whose load ZSET this process has made.
	seeded  sync.Map
	parsers fastjson.ParserPool
	// batches numbers the batches, and names the orders sent without an id.
	batches atomic.Uint64
}

func newThinService(rdb *goredis.Client, scales int) *thinService {
	return &thinService{rdb: rdb, script: goredis.NewScript(minimalLua), scales: scales}
}

// handler serves POST /v1/pools/{pool}/batches; anything else is 404 or
// 405, as net/http's mux answers.
func (s *thinService) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/pools/{pool}/batches", s.dispatch)
	return mux
}

// maxThinBody bounds a batch body, as the service bounds it by default
// (api.DefaultMaxBody, 4 MiB).
const maxThinBody = 4 << 20

func (s *thinService) dispatch(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxThinBody))
	if err != nil {
		thinProblem(w, http.StatusBadRequest, "invalid-body", err.Error())
		return
	}
	seq := s.batches.Add(1)
	args, err := s.orderArgs(body, seq)
	if err != nil {
		thinProblem(w, http.StatusBadRequest, "invalid-body", err.Error())
		return
	}
	pool := r.PathValue("pool")
	keys := thinKeys(pool)
	if err := s.seed(r.Context(), pool, keys[0]); err != nil {
		thinProblem(w, http.StatusServiceUnavailable, "unavailable", err.Error())
		return
	}
	if err := s.script.Run(r.Context(), s.rdb, keys, args...).Err(); err != nil {
		thinProblem(w, http.StatusServiceUnavailable, "unavailable", err.Error())
		return
	}
	out := make([]byte, 0, 64)
	out = append(out, `{"batchId":"thin-`...)
	out = strconv.AppendUint(out, seq, 10)
	out = append(out, `","orders":`...)
	out = strconv.AppendInt(out, int64(len(args)-2), 10)
	out = append(out, "}\n"...)
	w.Header()["Content-Type"] = []string{"application/json"}
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(out)
}

// orderArgs reads {"orders":[{"id":"…"},…]} and returns minimal.lua's
// ARGV: an unused prefix, the number of orders and their ids; an order
// without an id is named after the batch's number.
func (s *thinService) orderArgs(body []byte, seq uint64) ([]any, error) {
	p := s.parsers.Get()
	defer s.parsers.Put(p)
	v, err := p.ParseBytes(body)
	if err != nil {
		return nil, err
	}
	elems, err := v.Get("orders").Array()
	if err != nil {
		return nil, fmt.Errorf("orders: %w", err)
	}
	if len(elems) == 0 {
		return nil, errors.New("orders: want at least one")
	}
	args := make([]any, 2, 2+len(elems))
	args[0], args[1] = "", len(elems)
	for i, e := range elems {
		if e.Type() != fastjson.TypeObject {
			return nil, fmt.Errorf("orders[%d]: want an object", i)
		}
		if id := e.GetStringBytes("id"); len(id) > 0 {
			args = append(args, string(id))
		} else {
			args = append(args, "thin-"+strconv.FormatUint(seq, 10)+"-"+strconv.Itoa(i))
		}
	}
	return args, nil
}

// seed makes the pool's load ZSET of s.scales Scales (s-01, …), all
// unloaded, once per process; ZADD NX keeps what another replica or an
// earlier run has dispatched.
func (s *thinService) seed(ctx context.Context, pool, key string) error {
	if _, ok := s.seeded.Load(pool); ok {
		return nil
	}
	members := make([]goredis.Z, s.scales)
	for i := range members {
		members[i] = goredis.Z{Member: fmt.Sprintf("s-%02d", i+1)}
	}
	if err := s.rdb.ZAddNX(ctx, key, members...).Err(); err != nil {
		return err
	}
	s.seeded.Store(pool, true)
	return nil
}

// thinProblem writes a problem+json answer of the given status and slug.
func thinProblem(w http.ResponseWriter, status int, slug, detail string) {
	w.Header()["Content-Type"] = []string{"application/problem+json"}
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `{"type":"urn:dispatcher:problem:%s","status":%d,"detail":%q}`+"\n", slug, status, detail)
}

// runThin serves the thin service on cfg.Addr, prints the base URL to
// stdout once it listens, and stops when ctx ends or after cfg.For.
func runThin(ctx context.Context, cfg thinConfig, stdout io.Writer) error {
	opt, err := goredis.ParseURL(cfg.Redis)
	if err != nil {
		return fmt.Errorf("-redis: %w", err)
	}
	rdb := goredis.NewClient(opt)
	defer rdb.Close()
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	fmt.Fprintf(stdout, "thin listening on http://%s\n", ln.Addr())
	return serveUntil(ctx, benchServer(newThinService(rdb, cfg.Scales).handler()), ln, cfg.For)
}

// serveUntil serves srv on ln until ctx ends or, when limit is positive,
// for that long, then shuts it down.
func serveUntil(ctx context.Context, srv *http.Server, ln net.Listener, limit time.Duration) error {
	if limit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}
