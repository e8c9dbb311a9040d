package dispatch

import (
	"regexp"
	"time"
	"unicode/utf8"
)

// IDPattern is what every id must match: pool names, compIds, order ids,
// batch ids and idempotency keys.
var IDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)

// MaxIDLen is the length of the longest id (IDPattern).
const MaxIDLen = 128

// Limits of the numbers a client may send.
const (
	MaxWeight     = 1_000_000
	MaxOrderCount = 1<<31 - 1
	// MaxScales is the most Scales one pool may hold: with MaxWeight and
	// MaxOrderCount, every sum the strategies make stays below 2^53.
	MaxScales    = 1_000_000
	MaxKeyBytes  = 256
	MaxSlowStart = 24 * time.Hour
	DefaultLimit = 1000
	MaxLimit     = 10000
)

// ValidID reports whether id matches IDPattern. It checks the bytes
// itself, one table look-up a byte: every order of every batch passes
// here, and the regexp costs several times more (TestValidIDMatchesPattern
// keeps the two equal).
func ValidID(id string) bool {
	if len(id) == 0 || len(id) > MaxIDLen || idBytes[id[0]] != idFirst {
		return false
	}
	for i := 1; i < len(id); i++ {
		if idBytes[id[i]] == 0 {
			return false
		}
	}
	return true
}

// The classes of idBytes: a byte that may begin an id, and one that may
// only follow.
const (
	idFirst = 1 + iota
	idLater
)

// idBytes classes every byte for ValidID; 0 is a byte no id holds.
var idBytes = func() (t [256]uint8) {
	for c := range 256 {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
			t[c] = idFirst
		case c == '.' || c == '_' || c == ':' || c == '-':
			t[c] = idLater
		}
	}
	return t
}()

func checkID(kind, id string) error {
	if !ValidID(id) {
		return errorf(ErrInvalidID, "%s %q must match %s", kind, id, IDPattern)
	}
	return nil
}

func checkKey(key string) error {
	if len(key) < 1 || len(key) > MaxKeyBytes || !utf8.ValidString(key) {
		return errorf(ErrInvalidKey, "key must be 1 to %d bytes of UTF-8", MaxKeyBytes)
	}
	return nil
}

func checkRange(name string, v, lo, hi int64) error {
	if v < lo || v > hi {
		return errorf(ErrOutOfRange, "%s %d is outside [%d, %d]", name, v, lo, hi)
	}
	return nil
}

func checkPoolSpec(spec PoolSpec) error {
	if spec.Strategy != nil && !spec.Strategy.Valid() {
		return errorf(ErrUnknownStrategy, "%q; known: %v", *spec.Strategy, Strategies)
	}
	if spec.SlowStart != nil {
		if d := *spec.SlowStart; d < 0 || d > MaxSlowStart {
			return errorf(ErrOutOfRange, "slowStart %s is outside [0s, %s]", d, MaxSlowStart)
		}
	}
	return checkHealthSpec(spec)
}

// checkHealthSpec checks the health options of a pool spec: durations in
// whole milliseconds within their ranges (heartbeatTimeout may also be 0).
func checkHealthSpec(spec PoolSpec) error {
	if d := spec.HeartbeatTimeout; d != nil && *d != 0 {
		if err := checkDuration("heartbeatTimeoutMs", *d, MinHeartbeatTimeout, MaxHealthDuration); err != nil {
			return err
		}
	}
	if spec.OnLapse != nil && !spec.OnLapse.Valid() {
		return errorf(ErrInvalidOnLapse, "%q is not one of hold, reassign", *spec.OnLapse)
	}
	if spec.MaxFails != nil {
		if err := checkRange("maxFails", *spec.MaxFails, 0, MaxMaxFails); err != nil {
			return err
		}
	}
	if d := spec.FailWindow; d != nil {
		if err := checkDuration("failWindowMs", *d, MinHealthDuration, MaxHealthDuration); err != nil {
			return err
		}
	}
	if d := spec.EjectTime; d != nil {
		if err := checkDuration("ejectMs", *d, MinHealthDuration, MaxHealthDuration); err != nil {
			return err
		}
	}
	return nil
}

func checkDuration(name string, d, lo, hi time.Duration) error {
	if d%time.Millisecond != 0 {
		return errorf(ErrOutOfRange, "%s must be whole milliseconds", name)
	}
	return checkRange(name, d.Milliseconds(), lo.Milliseconds(), hi.Milliseconds())
}

func checkReason(reason string) error {
	if len(reason) > MaxReasonBytes || !utf8.ValidString(reason) {
		return errorf(ErrInvalidReason, "reason must be at most %d bytes of UTF-8", MaxReasonBytes)
	}
	return nil
}

func checkScaleSpec(spec ScaleSpec) error {
	if spec.Weight != nil {
		if err := checkRange("weight", *spec.Weight, 1, MaxWeight); err != nil {
			return err
		}
	}
	if spec.State != nil && !spec.State.Valid() {
		return errorf(ErrInvalidState, "%q is not one of active, draining, down", *spec.State)
	}
	if spec.MaxOrders != nil {
		if err := checkRange("maxOrders", *spec.MaxOrders, 0, MaxOrderCount); err != nil {
			return err
		}
	}
	if spec.OrderCount != nil {
		if err := checkRange("orderCount", *spec.OrderCount, 0, MaxOrderCount); err != nil {
			return err
		}
	}
	return nil
}

// normalizePage applies the default limit and checks the bounds.
func normalizePage(p Page) (Page, error) {
	if p.Limit == 0 {
		p.Limit = DefaultLimit
	}
	if err := checkRange("limit", int64(p.Limit), 1, MaxLimit); err != nil {
		return p, err
	}
	return p, nil
}
