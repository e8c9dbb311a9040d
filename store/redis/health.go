package redis

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

// Heartbeat renews the Scale's lease at now in one script call
// (lua/heartbeat.lua), applying orderCount as PutScale does (nil: the load
// stays), and returns the Scale as dispatch.HealthOptions.View shows it at
// now. ErrPoolNotFound, ErrScaleNotFound, ErrUnavailable.
func (s *Store) Heartbeat(ctx context.Context, pool, compID string, orderCount *int64, now time.Time) (dispatch.Scale, error) {
	count := ""
	if orderCount != nil {
		count = strconv.FormatInt(*orderCount, 10)
	}
	v, err := s.call(ctx, fnHeartbeat, pool, compID, ms(now), s.retention.Milliseconds(), count)
	if err != nil {
		return dispatch.Scale{}, translate(err, pool)
	}
	r, _ := v.([]any)
	if len(r) != 4 {
		return dispatch.Scale{}, fmt.Errorf("redis: heartbeat replied %v", v)
	}
	sc, err := decodeScale(compID, asString(r[0]))
	if err != nil {
		return dispatch.Scale{}, err
	}
	h := dispatch.DefaultHealthOptions()
	h.HeartbeatTimeout = time.Duration(asInt(r[1])) * time.Millisecond
	if ls := asInt(r[2]); ls != 0 {
		h.LeasesSince = fromMs(ls)
	}
	h.FailWindow = time.Duration(asInt(r[3])) * time.Millisecond
	return h.View(sc, now), nil
}

// Fail handles a failure report in one script call (lua/fail.lua): the
// order moves off the Scale reported, if it is still there, and the report
// counts against that Scale. A call that go-redis re-sends answers as the
// first run did. ErrPoolNotFound, ErrOrderNotFound, ErrNoEligibleScale
// (nothing changed), ErrTooExpensive, ErrUnavailable.
func (s *Store) Fail(ctx context.Context, req dispatch.FailRequest) (dispatch.FailResult, error) {
	dr := dispatch.DispatchRequest{Orders: make([]dispatch.OrderInput, 1), Rand: req.Rand, MaxCost: req.MaxCost}
	tok := callToken(ctx)
	args, err := appendRand([]any{req.OrderID, req.CompID, ms(req.Now), s.retention.Milliseconds(), maxCost(dr), tok}, dr, true)
	if err != nil {
		return dispatch.FailResult{}, err
	}
	v, err := s.callToken(ctx, fnFail, req.Pool, tok, args...)
	if err != nil {
		return dispatch.FailResult{}, translate(err, req.Pool)
	}
	r, _ := v.([]any)
	if len(r) != 4 {
		return dispatch.FailResult{}, fmt.Errorf("redis: fail replied %v", v)
	}
	o, err := decodeOrder(req.OrderID, asString(r[3]))
	if err != nil {
		return dispatch.FailResult{}, err
	}
	return dispatch.FailResult{Order: o, Moved: asInt(r[0]) == 1, Counted: asInt(r[1]) == 1, Ejected: asInt(r[2]) == 1}, nil
}

// Tick does one bounded share of the pool's health work in one script call
// (lua/tick.lua): settling due Scales, moving orders off a lapsed Scale
// (onLapse reassign) and taking changes from the journal, at most
// req.Limit of each. Several replicas may tick one pool at once; no order
// moves twice. ErrPoolNotFound, ErrUnavailable.
//
// The random numbers go with req.Rand, or from req.RandSource to a pool
// whose strategy the store believes draws (appendRand); tick.lua leaves
// the move of a call without them to the next call if the strategy draws
// after all (More), which then sends them.
func (s *Store) Tick(ctx context.Context, req dispatch.TickRequest) (dispatch.TickResult, error) {
	limit := req.Limit
	if limit <= 0 {
		limit = dispatch.DefaultTickLimit
	}
	ph := s.heads.of(req.Pool)
	dr := dispatch.DispatchRequest{Orders: make([]dispatch.OrderInput, limit), Rand: req.Rand, RandSource: req.RandSource, MaxCost: req.MaxCost}
	args, err := appendRand([]any{ms(req.Now), s.retention.Milliseconds(), limit, maxCost(dr)}, dr, req.Rand != nil || ph.draws.Load())
	if err != nil {
		return dispatch.TickResult{}, err
	}
	v, err := s.call(ctx, fnTick, req.Pool, args...)
	if err != nil {
		return dispatch.TickResult{}, translate(err, req.Pool)
	}
	if r, _ := v.([]any); len(r) > 0 && asInt(r[0]) == tickNoRand {
		ph.draws.Store(true)
	}
	return decodeTick(req.Pool, v)
}

// tickNoRand is tick.lua's more for a call that left its move to the next
// for want of random numbers.
const tickNoRand = 2

// decodeTick reads tick.lua's reply: {more (1, or tickNoRand), unsettled,
// dropped, k, k changes "compId|from|to|atMs", then triples orderId, from,
// to}.
func decodeTick(pool string, v any) (dispatch.TickResult, error) {
	r, _ := v.([]any)
	bad := fmt.Errorf("redis: tick replied %v", v)
	if len(r) < 4 {
		return dispatch.TickResult{}, bad
	}
	k := int(asInt(r[3]))
	if k < 0 || len(r) < 4+k || (len(r)-4-k)%3 != 0 {
		return dispatch.TickResult{}, bad
	}
	out := dispatch.TickResult{More: asInt(r[0]) != 0, Unsettled: int(asInt(r[1])), Dropped: int(asInt(r[2]))}
	for _, c := range r[4 : 4+k] {
		f := strings.Split(asString(c), "|")
		at, err := strconv.ParseInt(f[len(f)-1], 10, 64)
		if len(f) != 4 || err != nil || healthOfCode[f[1]] == "" || healthOfCode[f[2]] == "" {
			return dispatch.TickResult{}, bad
		}
		out.Changes = append(out.Changes, dispatch.HealthChange{
			Pool: pool, CompID: f[0], From: healthOfCode[f[1]], To: healthOfCode[f[2]], At: fromMs(at),
		})
	}
	for i := 4 + k; i < len(r); i += 3 {
		out.Moves = append(out.Moves, dispatch.Move{OrderID: asString(r[i]), From: asString(r[i+1]), To: asString(r[i+2])})
	}
	return out, nil
}
