package dispatch

import "time"

// This file is the reference of Scale health (DESIGN §8): every store and
// every test applies these functions, or does in its own language exactly
// what they do (the Lua scripts of the Redis store, checked by the
// differential tests). All times are UTC milliseconds.

// Health is what the service observed about a Scale; State is what an
// operator set. A Scale is eligible only while active and up.
type Health string

// The healths of a Scale.
const (
	// Up Scales may receive orders.
	Up Health = "up"
	// Lapsed Scales sent no heartbeat for the pool's heartbeatTimeout.
	Lapsed Health = "lapsed"
	// Ejected Scales drew maxFails failure reports within failWindow and
	// are out until EjectedUntil.
	Ejected Health = "ejected"
)

// OnLapse says what happens to the orders of a lapsed Scale.
type OnLapse string

// The choices of OnLapse.
const (
	// Hold keeps a lapsed Scale's orders on it.
	Hold OnLapse = "hold"
	// ReassignLapsed moves a lapsed Scale's orders to eligible Scales, in
	// chunks, by Store.Tick.
	ReassignLapsed OnLapse = "reassign"
)

// Valid reports whether o is hold or reassign.
func (o OnLapse) Valid() bool { return o == Hold || o == ReassignLapsed }

// Defaults and bounds of the health options.
const (
	DefaultFailWindow = 10 * time.Second
	DefaultEjectTime  = 30 * time.Second
	// MinHeartbeatTimeout and MaxHealthDuration bound heartbeatTimeout
	// (besides 0, off), failWindow and ejectTime.
	MinHeartbeatTimeout = time.Second
	MinHealthDuration   = time.Second
	MaxHealthDuration   = time.Hour
	// MaxMaxFails bounds maxFails (0 turns ejection off).
	MaxMaxFails = 10_000
	// MaxEjectionFactor caps the consecutive ejections that multiply
	// ejectTime.
	MaxEjectionFactor = 10
	// MaxReasonBytes bounds the reason of a failure report.
	MaxReasonBytes = 256
)

// HealthOptions are a pool's health options. The zero value (with the
// defaults of FailWindow and EjectTime) turns everything off.
type HealthOptions struct {
	// HeartbeatTimeout is how long a Scale may go without a heartbeat
	// before it is lapsed; 0 turns leases off.
	HeartbeatTimeout time.Duration
	// OnLapse is hold (default) or reassign.
	OnLapse OnLapse
	// MaxFails counted reports within FailWindow eject a Scale; 0 turns
	// ejection off (reports are still counted and shown).
	MaxFails   int64
	FailWindow time.Duration
	// EjectTime × consecutive ejections (at most MaxEjectionFactor) is how
	// long an ejection lasts.
	EjectTime time.Duration
	// LeasesSince is when HeartbeatTimeout last went from 0 to a value:
	// turning heartbeats on starts every Scale's lease then. The store
	// sets it; a PoolSpec cannot.
	LeasesSince time.Time
}

// DefaultHealthOptions are the options of a new pool.
func DefaultHealthOptions() HealthOptions {
	return HealthOptions{OnLapse: Hold, FailWindow: DefaultFailWindow, EjectTime: DefaultEjectTime}
}

// On reports whether the pool judges its Scales' health: heartbeats or
// ejection turned on.
func (h HealthOptions) On() bool { return h.HeartbeatTimeout > 0 || h.MaxFails > 0 }

// Apply sets the options spec sets, at now: a HeartbeatTimeout that goes
// from 0 to a value sets LeasesSince to now.
func (h *HealthOptions) Apply(spec PoolSpec, now time.Time) {
	if spec.HeartbeatTimeout != nil {
		if h.HeartbeatTimeout == 0 && *spec.HeartbeatTimeout > 0 {
			h.LeasesSince = now
		}
		h.HeartbeatTimeout = *spec.HeartbeatTimeout
	}
	if spec.OnLapse != nil {
		h.OnLapse = *spec.OnLapse
	}
	if spec.MaxFails != nil {
		h.MaxFails = *spec.MaxFails
	}
	if spec.FailWindow != nil {
		h.FailWindow = *spec.FailWindow
	}
	if spec.EjectTime != nil {
		h.EjectTime = *spec.EjectTime
	}
}

// LeaseStart is when the Scale's current lease began: its last heartbeat
// (registration counts as one), or when the pool turned heartbeats on if
// that is later. Stores index a pool's Scales by LastHeartbeatAt: with
// LeasesSince one value per pool, that order is the order of LeaseStart.
func (h HealthOptions) LeaseStart(sc Scale) time.Time {
	if h.LeasesSince.After(sc.LastHeartbeatAt) {
		return h.LeasesSince
	}
	return sc.LastHeartbeatAt
}

// LeaseEnd is when the Scale lapses without another heartbeat: LeaseStart
// + HeartbeatTimeout. It is zero while leases are off.
func (h HealthOptions) LeaseEnd(sc Scale) time.Time {
	if h.HeartbeatTimeout <= 0 {
		return time.Time{}
	}
	return h.LeaseStart(sc).Add(h.HeartbeatTimeout)
}

// Lapsed reports whether the Scale's lease has run out at now: leases on
// and now ≥ LeaseEnd (a Scale silent for exactly HeartbeatTimeout is
// lapsed).
func (h HealthOptions) Lapsed(sc Scale, now time.Time) bool {
	return h.HeartbeatTimeout > 0 && !now.Before(h.LeaseEnd(sc))
}

// HealthAt is the Scale's health at now: lapsed if its lease has run out
// (a dead worker outranks an ejection), else ejected while now is before
// EjectedUntil, else up.
func (h HealthOptions) HealthAt(sc Scale, now time.Time) Health {
	switch {
	case h.Lapsed(sc, now):
		return Lapsed
	case now.Before(sc.EjectedUntil):
		return Ejected
	}
	return Up
}

// FailuresAt is the number of counted reports in the Scale's failure window
// at now: 0 once the window (FailWindowStart + FailWindow) has closed.
func (h HealthOptions) FailuresAt(sc Scale, now time.Time) int64 {
	if sc.Failures == 0 || !now.Before(sc.FailWindowStart.Add(h.FailWindow)) {
		return 0
	}
	return sc.Failures
}

// View is the Scale as the API shows it at now: Health and Failures judged
// at now rather than as last recorded.
func (h HealthOptions) View(sc Scale, now time.Time) Scale {
	sc.Health = h.HealthAt(sc, now)
	sc.Failures = h.FailuresAt(sc, now)
	return sc
}

// HealthChange is one change of a Scale's recorded health.
type HealthChange struct {
	Pool     string
	CompID   string
	From, To Health
	// At is when the change took effect: a lapse at LeaseEnd, the end of an
	// ejection at EjectedUntil, anything else at the now of the call that
	// made it.
	At time.Time
}

// Settle records the Scale's health at now (HealthAt) in sc.Health and
// returns the change, if there is one. The change takes effect at At (see
// HealthChange); a Scale that becomes up while active warms up again from
// At (ActiveSince = At), as slow start does for one that became active.
func (h HealthOptions) Settle(sc *Scale, now time.Time) (HealthChange, bool) {
	to := h.HealthAt(*sc, now)
	if to == sc.Health {
		return HealthChange{}, false
	}
	c := HealthChange{CompID: sc.CompID, From: sc.Health, To: to, At: now}
	switch {
	case to == Lapsed:
		c.At = h.LeaseEnd(*sc)
	case sc.Health == Ejected && !sc.EjectedUntil.After(now):
		c.At = sc.EjectedUntil // the ejection ended by itself
	}
	if to == Up && sc.State == Active {
		sc.ActiveSince = c.At
	}
	sc.Health = to
	return c, true
}

// SettleDue reports whether Settle at now would change the Scale: the
// stores find such Scales through their indexes (see Store) rather than
// by reading every Scale.
func (h HealthOptions) SettleDue(sc Scale, now time.Time) bool {
	return h.HealthAt(sc, now) != sc.Health
}

// CountFailure counts a failure report against sc at now and reports
// whether it ejected the Scale. The caller has checked that the report
// counts (the order is assigned to sc, and sc is not ejected at now), and
// calls Settle afterwards to record the ejection.
//
//   - Consecutive ejections reset after a quiet failure window: if
//     now ≥ max(LastFailAt, EjectedUntil) + FailWindow, Ejections = 0.
//   - The report opens a new window (FailWindowStart = now, Failures = 1)
//     when none is open at now (FailuresAt is 0), else Failures++.
//     LastFailAt = now.
//   - With MaxFails > 0 and Failures ≥ MaxFails the Scale is ejected:
//     Ejections++, EjectedUntil = now + EjectTime × min(Ejections,
//     MaxEjectionFactor), and the window closes (Failures = 0,
//     FailWindowStart zero).
func (h HealthOptions) CountFailure(sc *Scale, now time.Time) bool {
	quiet := sc.LastFailAt
	if sc.EjectedUntil.After(quiet) {
		quiet = sc.EjectedUntil
	}
	if sc.Ejections > 0 && !now.Before(quiet.Add(h.FailWindow)) {
		sc.Ejections = 0
	}
	if h.FailuresAt(*sc, now) == 0 {
		sc.FailWindowStart = now
		sc.Failures = 1
	} else {
		sc.Failures++
	}
	sc.LastFailAt = now
	if h.MaxFails <= 0 || sc.Failures < h.MaxFails {
		return false
	}
	sc.Ejections++
	sc.EjectedUntil = now.Add(h.EjectTime * time.Duration(min(sc.Ejections, MaxEjectionFactor)))
	sc.Failures = 0
	sc.FailWindowStart = time.Time{}
	return true
}

// FailureCounts reports whether a failure report against sc at now counts:
// not while the Scale is ejected (its orders still move).
func (h HealthOptions) FailureCounts(sc Scale, now time.Time) bool {
	return !now.Before(sc.EjectedUntil)
}

// Register sets the health fields of a Scale registered at now: up, its
// lease starting now.
func Register(sc *Scale, now time.Time) {
	sc.Health = Up
	sc.LastHeartbeatAt = now
}
