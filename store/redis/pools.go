package redis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/dispatcher/dispatcher/balancing"
	"github.com/dispatcher/dispatcher/dispatch"
)

// PutPool creates the pool (strategy dispatch.DefaultStrategy unless spec
// sets one, CreatedAt now) or updates the fields spec sets, and reports
// whether it was created. Changing the strategy resets its state.
// ErrUnavailable.
func (s *Store) PutPool(ctx context.Context, name string, spec dispatch.PoolSpec, now time.Time) (dispatch.Pool, bool, error) {
	// The list spans slots: the name goes in before the pool exists (the
	// confirmation of the list follows the pool's).
	if err := s.c.ZAdd(ctx, poolsKey, goredis.Z{Member: name}).Err(); err != nil {
		return dispatch.Pool{}, false, unavailable(err)
	}
	strategy, slowStart, hashed := "", "", false
	if spec.Strategy != nil {
		strategy = string(*spec.Strategy)
		sp, _ := spec.Strategy.Spec()
		hashed = sp.Kind == balancing.Hashed
	}
	if spec.SlowStart != nil {
		slowStart = strconv.FormatInt(spec.SlowStart.Milliseconds(), 10)
	}
	health := healthArgs(spec)
	var v any
	for attempt := 1; ; attempt++ {
		version := ""
		if hashed {
			var err error
			if version, err = s.buildRing(ctx, name); err != nil {
				return dispatch.Pool{}, false, err
			}
		}
		tok := callToken(ctx)
		var err error
		v, err = s.callToken(ctx, fnPoolPut, name, tok, ms(now), s.retention.Milliseconds(), tok, strategy, slowStart, version, ringInScript,
			health[0], health[1], health[2], health[3], health[4])
		// A Scale came or went between the last step of the ring and the
		// switch, in a pool too large to place its ring in the switch.
		if se, ok := asScriptError(err); ok && se.code == "RINGSTALE" {
			if attempt == ringAttempts {
				return dispatch.Pool{}, false, errRingChurn
			}
			continue
		}
		if err != nil {
			return dispatch.Pool{}, false, translate(err, name)
		}
		break
	}
	r, _ := v.([]any)
	if len(r) != 11 {
		return dispatch.Pool{}, false, fmt.Errorf("redis: pool_put replied %v", v)
	}
	created := asInt(r[0]) == 1
	var err error
	if created {
		// A DeletePool of the same name may have removed it meanwhile.
		err = s.listCmd(ctx, s.c.ZAdd(ctx, poolsKey, goredis.Z{Member: name}).Err())
	} else {
		err = s.confirm(ctx, poolsKey)
	}
	if err != nil {
		return dispatch.Pool{}, false, err
	}
	p, err := decodePool(name, r[1:])
	if err == nil {
		s.heads.of(name).learn(string(p.Strategy)) // (appendRand)
	}
	return p, created, err
}

// GetPool returns the pool: ErrPoolNotFound, ErrUnavailable.
func (s *Store) GetPool(ctx context.Context, name string) (dispatch.Pool, error) {
	v, err := s.call(ctx, fnRead, name, "pool", "")
	if err != nil {
		return dispatch.Pool{}, translate(err, name)
	}
	r, _ := v.([]any)
	p, err := decodePool(name, r)
	if err == nil {
		s.heads.of(name).learn(string(p.Strategy)) // (appendRand)
	}
	return p, err
}

// ListPools returns at most p.Limit pools (dispatch.DefaultLimit if it is not
// positive) sorted by name, after the name p.Cursor, and the name of the
// last one as the next cursor ("" on the last page). With p.Match, only the
// pools it accepts count, and the others' records are not read: names are
// scanned in chunks of at least minMatchScan, so that a token that sees
// few pools pages through the others in few round trips. ErrUnavailable.
func (s *Store) ListPools(ctx context.Context, p dispatch.Page) ([]dispatch.Pool, string, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = dispatch.DefaultLimit
	}
	after := p.Cursor
	var out []dispatch.Pool
	for len(out) <= limit {
		want := limit + 1 - len(out)
		count := want
		if p.Match != nil {
			count = max(want, minMatchScan)
		}
		start := "-"
		if after != "" {
			start = "(" + after
		}
		scanned, err := s.c.ZRangeArgs(ctx, goredis.ZRangeArgs{
			Key: poolsKey, Start: start, Stop: "+", ByLex: true, Count: int64(count),
		}).Result()
		if err := s.listCmd(ctx, err); err != nil {
			return nil, "", err
		}
		names := scanned
		if p.Match != nil {
			names = slices.DeleteFunc(slices.Clone(scanned), func(n string) bool { return !p.Match(n) })
		}
		more := len(scanned) == count
		if len(names) > want {
			names, more = names[:want], true
			after = names[want-1]
		} else if more {
			after = scanned[len(scanned)-1]
		}
		pools, err := s.readPools(ctx, names)
		if err != nil {
			return nil, "", err
		}
		out = append(out, pools...)
		if !more {
			break
		}
	}
	if len(out) > limit {
		return out[:limit], out[limit-1].Name, nil
	}
	return out, "", nil
}

// minMatchScan is the fewest pool names ListPools reads per round trip
// when a Match narrows the list.
const minMatchScan = 1000

// readPools reads the named pools in one round trip, skipping the names
// without a pool: created or deleted under way.
func (s *Store) readPools(ctx context.Context, names []string) ([]dispatch.Pool, error) {
	if len(names) == 0 {
		return nil, nil
	}
	metas := make([]*goredis.SliceCmd, len(names))
	sizes := make([]*goredis.IntCmd, len(names))
	_, err := s.c.Pipelined(ctx, func(pl goredis.Pipeliner) error {
		for i, name := range names {
			p := poolPrefix(name)
			metas[i] = pl.HMGet(ctx, p+keyMeta, poolFields...)
			sizes[i] = pl.HLen(ctx, p+keyScales)
		}
		return nil
	})
	if err != nil {
		return nil, unavailable(err)
	}
	keys := make([]string, len(names))
	for i, name := range names {
		keys[i] = metaKey(name)
	}
	if err := s.confirm(ctx, keys...); err != nil {
		return nil, err
	}
	var out []dispatch.Pool
	for i, name := range names {
		m := metas[i].Val()
		if len(m) != len(poolFields) || m[0] == nil {
			continue
		}
		p, err := decodePool(name, append([]any{m[0], m[1], m[2], sizes[i].Val()}, m[3:]...))
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// DeletePool removes the pool and all its state: ErrPoolNotFound,
// ErrUnavailable.
func (s *Store) DeletePool(ctx context.Context, name string) error {
	if _, err := s.call(ctx, fnPoolDel, name, token()); err != nil {
		return translate(err, name)
	}
	if err := s.listCmd(ctx, s.c.ZRem(ctx, poolsKey, name).Err()); err != nil {
		return err
	}
	// A PutPool may have created the pool again since the script ran.
	n, err := s.c.Exists(ctx, metaKey(name)).Result()
	if err != nil {
		return unavailable(err)
	}
	if n > 0 {
		return s.listCmd(ctx, s.c.ZAdd(ctx, poolsKey, goredis.Z{Member: name}).Err())
	}
	return nil
}

// listCmd returns the error of a command on the pool list, which spans
// slots and so is no script's: ErrUnavailable if it failed; if not, the
// list's primary must confirm it, as answered confirms a script's reply.
func (s *Store) listCmd(ctx context.Context, err error) error {
	if err != nil {
		return unavailable(err)
	}
	_, err = s.answered(ctx, poolsKey, nil, nil)
	return err
}

// healthArgs are the health options of spec as lua/pool_put.lua takes
// them: heartbeatTimeout ms, onLapse, maxFails, failWindow ms, ejectTime
// ms, "" for each that spec leaves as it is.
func healthArgs(spec dispatch.PoolSpec) [5]string {
	var a [5]string
	dur := func(d *time.Duration) string {
		if d == nil {
			return ""
		}
		return strconv.FormatInt(d.Milliseconds(), 10)
	}
	a[0] = dur(spec.HeartbeatTimeout)
	if spec.OnLapse != nil {
		a[1] = string(*spec.OnLapse)
	}
	if spec.MaxFails != nil {
		a[2] = strconv.FormatInt(*spec.MaxFails, 10)
	}
	a[3], a[4] = dur(spec.FailWindow), dur(spec.EjectTime)
	return a
}

// decodePool reads {strategy, slowStart ms, createdAt ms, Scales, ht, ls,
// ol, mf, fw, et}, the health options nil where absent (the defaults), or
// the first four alone.
func decodePool(name string, r []any) (dispatch.Pool, error) {
	if len(r) == 4 { // (watch.lua reads no health options: the defaults)
		r = append(r[:4:4], nil, nil, nil, nil, nil, nil)
	}
	if len(r) != 10 {
		return dispatch.Pool{}, fmt.Errorf("redis: pool %q: bad record %v", name, r)
	}
	strategy, _ := r[0].(string)
	var p ints
	slowStart := p.parse(asString(r[1]))
	created := p.parse(asString(r[2]))
	h := dispatch.DefaultHealthOptions()
	h.HeartbeatTimeout = time.Duration(p.parse(asString(r[4]))) * time.Millisecond
	if ls := asString(r[5]); ls != "" {
		h.LeasesSince = fromMs(p.parse(ls))
	}
	if ol := asString(r[6]); ol != "" {
		h.OnLapse = dispatch.OnLapse(ol)
	}
	h.MaxFails = p.parse(asString(r[7]))
	if fw := asString(r[8]); fw != "" {
		h.FailWindow = time.Duration(p.parse(fw)) * time.Millisecond
	}
	if et := asString(r[9]); et != "" {
		h.EjectTime = time.Duration(p.parse(et)) * time.Millisecond
	}
	if p.err != nil || strategy == "" {
		return dispatch.Pool{}, fmt.Errorf("redis: pool %q: bad record %v", name, r)
	}
	return dispatch.Pool{
		Name:       name,
		Strategy:   dispatch.Strategy(strategy),
		SlowStart:  time.Duration(slowStart) * time.Millisecond,
		ScaleCount: int(asInt(r[3])),
		CreatedAt:  fromMs(created),
		Health:     h,
	}, nil
}

// token returns a random call token: a script that runs twice for one call
// (go-redis retried it) finds the reply it kept under the token (runCall)
// and answers as the first run did.
func token() string { return strconv.FormatUint(rand.Uint64(), 36) }

func asInt(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return 0
}

func asString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	}
	return ""
}
