package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dispatcher/dispatcher/balancing"
	"github.com/dispatcher/dispatcher/dispatch"
)

// Dispatch assigns a batch with the pool's strategy and records it, in one
// script call. In this order: a recorded req.BatchID returns that batch (a
// retried call counts once); a recorded, unexpired req.IdempotencyKey
// returns its batch as a replay if req.Fingerprint matches and fails with
// ErrIdempotencyMismatch if not; an order id the pool holds fails with
// ErrOrderExists; a batch the eligible Scales have no room for fails with
// ErrNoEligibleScale. A dry run skips the two lookups, changes nothing and
// returns the batch without an ID. ErrPoolNotFound, ErrEmptyBatch,
// ErrDuplicateOrder, ErrInvalidRequest (no BatchID), ErrUnknownStrategy,
// ErrTooExpensive (req.MaxCost, or dispatch.DefaultMaxCost if unset);
// ErrUnavailable if Redis cannot be reached, and *dispatch.IndeterminateError
// if the call was sent but not answered, or (wrapping
// dispatch.ErrNotReplicated) if too few replicas confirmed it.
//
// The random numbers go only to a pool whose strategy the store believes
// draws (appendRand); a batch the script refuses for want of them
// (errNoRand, nothing written) goes again with them.
func (s *Store) Dispatch(ctx context.Context, req dispatch.DispatchRequest) (dispatch.Batch, bool, error) {
	ph := s.heads.of(req.Pool)
	b, replayed, err := s.dispatchOne(ctx, ph, req, ph.draws.Load())
	if errors.Is(err, errNoRand) {
		ph.draws.Store(true)
		b, replayed, err = s.dispatchOne(ctx, ph, req, true)
	}
	return b, replayed, err
}

// dispatchOne is one call of Dispatch, with random numbers if draws.
func (s *Store) dispatchOne(ctx context.Context, ph *poolHeads, req dispatch.DispatchRequest, draws bool) (dispatch.Batch, bool, error) {
	cmd, err := s.dispatchArgs(ph.start(fnDispatch, req.Pool, "", dispatchArgsLen(req)), req, batchFloor(ctx), draws)
	if err != nil {
		return dispatch.Batch{}, false, err
	}
	v, err := s.send(ctx, ph, cmd)
	if err != nil && (v == nil || !errors.Is(err, dispatch.ErrNotReplicated)) {
		return dispatch.Batch{}, false, dispatchFailure(ctx, err, req)
	}
	b, replayed, derr := decodeDispatch(req, v)
	if derr != nil {
		return dispatch.Batch{}, false, derr
	}
	if !replayed { // (a replay's strategy is its batch's, maybe not the pool's now)
		ph.learn(string(b.Strategy))
	}
	if err != nil {
		// Applied, or replayed, on the primary; not yet on its replicas.
		if req.DryRun {
			return dispatch.Batch{}, false, err
		}
		return dispatch.Batch{}, false, &dispatch.IndeterminateError{BatchID: b.ID, Err: err}
	}
	return b, replayed, nil
}

// dispatchArgsLen is how many arguments dispatchArgs appends for req:
// fnDispatch's arguments, the last of which ("orders") is one per order,
// and one more per order when an order has a key.
func dispatchArgsLen(req dispatch.DispatchRequest) int {
	n := len(fnDispatch.args) - 1 + len(req.Orders)
	if keyed(req.Orders) {
		n += len(req.Orders)
	}
	return n
}

// keyed reports whether an order of orders has a key.
func keyed(orders []dispatch.OrderInput) bool {
	for i := range orders {
		if orders[i].Key != "" {
			return true
		}
	}
	return false
}

// dispatchArgs appends the arguments of lua/dispatch.lua for req to args,
// in the order of fnDispatch's args;
// floor is the least time the batch record stays (batchFloor); the random
// numbers go if draws (appendRand).
func (s *Store) dispatchArgs(args []any, req dispatch.DispatchRequest, floor time.Duration, draws bool) ([]any, error) {
	// A batch named after its order (BatchID) goes as ':' and its tag,
	// which no other form begins with.
	// Such a batch has no Idempotency-Key: when it has several orders, the
	// key's argument holds '|' and their ids joined by ',', which its
	// assignments keep as they come (layout 9: the script makes no string
	// of them).
	bid := packBatchID(req.BatchID)
	key, fp := idemArgs(req)
	if tag, ok := s.namedTag(&req); ok && !req.DryRun {
		bid = ":" + tag
		key, fp = joinIDs(req.Orders), ""
	}
	hasKeys := keyed(req.Orders)
	args = append(args, bid, ms(req.Now), s.settingsArg(req, floor, hasKeys), key+fp)
	args, err := appendRand(args, req, draws)
	if err != nil {
		return nil, err
	}
	// Pointers into req.Orders, which go-redis writes as the strings: an
	// interface holding a string would cost an allocation per id. The ids
	// first, then the keys if an order has one: the script reads the ids
	// as one run (one HMGET of them all, no list of its own).
	for i := range req.Orders {
		args = append(args, &req.Orders[i].ID)
	}
	if hasKeys {
		for i := range req.Orders {
			args = append(args, &req.Orders[i].Key)
		}
	}
	return args, nil
}

// joinIDs is '|' and the ids of orders joined by ',', or "" for fewer
// than two orders.
func joinIDs(orders []dispatch.OrderInput) string {
	if len(orders) < 2 {
		return ""
	}
	n := len(orders)
	for i := range orders {
		n += len(orders[i].ID)
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteByte('|')
	for i := range orders {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(orders[i].ID)
	}
	return b.String()
}

// settingsArg is the "settings" argument of lua/dispatch.lua for req:
// "retention|idemTTL|maxCost|floor|dry|keyed", dry and keyed '1' or '0'
// (keyed: the keys follow the ids), and "|" and the first repeated order id
// when an id repeats (dispatch.RepeatedOrder, unless the Service has
// checked them: req.UniqueIDs; the script fails the batch with DUP at its
// turn among its checks). The numbers are in ms but
// maxCost; the floor goes up to whole seconds (a record may stay longer,
// never less), so that a pool's calls send the same few strings, which
// the script parses once each (dispatch.lua's settingsOf), and which the
// Store keeps the last of (settingsMemo).
func (s *Store) settingsArg(req dispatch.DispatchRequest, floor time.Duration, hasKeys bool) string {
	k := settingsKey{
		nums: [4]int64{s.retention.Milliseconds(), req.IdempotencyTTL.Milliseconds(), maxCost(req),
			((floor + time.Second - 1) / time.Second * time.Second).Milliseconds()},
		dry: req.DryRun, keyed: hasKeys,
	}
	set := s.settings.Load()
	if set == nil || set.k != k {
		set = &settingsMemo{k: k, s: formatSettings(k)}
		s.settings.Store(set)
	}
	if req.UniqueIDs {
		return set.s
	}
	if id, ok := dispatch.RepeatedOrder(req.Orders); ok {
		return set.s + "|" + id
	}
	return set.s
}

// settingsKey is what a settings argument says but a repeated order id.
type settingsKey struct {
	nums       [4]int64 // retention, idemTTL, maxCost, floor
	dry, keyed bool
}

// settingsMemo is the settings argument of k, kept by a Store for its
// next call: a Service's calls send the same one, whose four numbers cost
// some 700 instructions to format again each time (issue 21).
type settingsMemo struct {
	k settingsKey
	s string
}

// formatSettings returns the settings argument of k.
func formatSettings(k settingsKey) string {
	var buf [96]byte
	b := buf[:0]
	for _, n := range k.nums {
		b = strconv.AppendInt(b, n, 10)
		b = append(b, '|')
	}
	return string(append(b, flag(k.dry), '|', flag(k.keyed)))
}

// flag is '1' for true, '0' for false.
func flag(v bool) byte {
	if v {
		return '1'
	}
	return '0'
}

// decodeDispatch reads the reply of lua/dispatch.lua for req: the batch and
// whether it is a replay. The reply is the record of req's own batch (the
// id req.BatchID; none for a dry run), as one string or, for a batch of
// several without a batch record, as its head and its orders' Scales in
// their order, {"createdAt|expiresAt|strategy", "compId,…"}, after which
// a batch named after its first order has ",|" and the ids it was sent
// (its stored assignments, layout 9); or {"replay", batch id, record}.
func decodeDispatch(req dispatch.DispatchRequest, v any) (dispatch.Batch, bool, error) {
	bid := req.BatchID
	if req.DryRun {
		bid = ""
	}
	if rec, ok := v.(string); ok {
		head, pairs := splitRecord(rec)
		b, err := decodeBatchOf(req.Pool, bid, head, pairs, req.Orders)
		return b, false, err
	}
	r, _ := v.([]any)
	if len(r) == 2 {
		head, ok1 := r[0].(string)
		comps, ok2 := r[1].(string)
		if ok1 && ok2 {
			b, ok := batchHead(req.Pool, bid, head)
			if !ok {
				return dispatch.Batch{}, false, fmt.Errorf("redis: batch %q: bad record", bid)
			}
			comps, _, _ = strings.Cut(comps, ",|")
			as, err := assignmentsTo(bid, comps, req.Orders)
			if err != nil {
				return dispatch.Batch{}, false, err
			}
			b.Assignments = as
			return b, false, nil
		}
	}
	if len(r) != 3 || asString(r[0]) != "replay" {
		return dispatch.Batch{}, false, fmt.Errorf("redis: dispatch replied %v", v)
	}
	b, err := decodeBatch(req.Pool, unpackBatchID(asString(r[1])), asString(r[2]))
	return b, true, err
}

// GetBatch returns a recorded batch: ErrPoolNotFound, ErrBatchNotFound
// (also for one whose time has passed at now, not yet swept),
// ErrUnavailable.
func (s *Store) GetBatch(ctx context.Context, pool, batchID string, now time.Time) (dispatch.Batch, error) {
	v, err := s.call(ctx, fnRead, pool, "batch", packBatchID(batchID), ms(now), s.retention.Milliseconds())
	if err != nil {
		return dispatch.Batch{}, translate(err, pool)
	}
	return decodeBatch(pool, batchID, asString(v))
}

// Table returns the waterfill table over the pool's eligible Scales:
// ErrPoolNotFound, ErrUnavailable.
func (s *Store) Table(ctx context.Context, pool string) (dispatch.Table, error) {
	v, err := s.call(ctx, fnRead, pool, "table", "")
	if err != nil {
		return dispatch.Table{}, translate(err, pool)
	}
	r, _ := v.([]any)
	loads := make(balancing.Sorted, 0, len(r)/2)
	for i := 0; i+1 < len(r); i += 2 {
		n, err := strconv.ParseInt(asString(r[i+1]), 10, 64)
		if err != nil {
			return dispatch.Table{}, fmt.Errorf("redis: table: bad count %v", r[i+1])
		}
		loads = append(loads, balancing.Load{ID: asString(r[i]), Count: n})
	}
	var t dispatch.Table
	t.CompIDs, t.DispatchCounts = balancing.Table(loads)
	return t, nil
}
