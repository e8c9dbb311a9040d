package dispatch

import "time"

// Settling. A store keeps each Scale's recorded Health and finds the Scales
// whose recorded health differs from HealthAt(now) — the due Scales —
// through three indexes, never by reading the pool:
//
//   - Scales not recorded lapsed, by LastHeartbeatAt: with leases on, due
//     when LeaseEnd ≤ now (lapse);
//   - Scales recorded ejected, by EjectedUntil: due when EjectedUntil ≤ now
//     (the ejection ends);
//   - Scales recorded lapsed, by LastHeartbeatAt: due when leases are off
//     or LeaseEnd > now (the pool turned heartbeats off or lengthened the
//     timeout).
//
// To settle a due Scale is to call HealthOptions.Settle on it, move it in
// or out of the eligible Scales accordingly, and append the change to the
// pool's change journal. Due Scales are settled in this order: lapses by
// (LastHeartbeatAt, compId), then ends of ejection by (EjectedUntil,
// compId), then revivals by (LastHeartbeatAt, compId).
//
// The journal holds the changes no Tick has returned yet, oldest first, at
// most MaxJournal: a change beyond drops the oldest, which the next Tick
// counts in Dropped. Metrics and log lines come from the journal, so each
// change is reported once, by the replica whose Tick took it.

// MaxJournal is the most unreported health changes a pool keeps.
const MaxJournal = 10_000

// DefaultTickLimit is the work one Tick call does at most when its request
// does not say: Scales settled, orders moved, changes returned.
const DefaultTickLimit = 1000

// FailRequest is a failure report: the caller could not hand the order
// OrderID to the Scale CompID.
//
// If the order is assigned to CompID, the store re-dispatches it with the
// pool's strategy, as a batch of that one order, over the eligible Scales
// other than CompID (after settling the pool's due Scales), at Now with
// Rand; with no such Scale it fails with ErrNoEligibleScale and changes
// nothing. The order keeps its id, batch, key and assignedAt, Moves grows
// by one, and it is appended to its new Scale's orders. Then, if the
// report counts (HealthOptions.FailureCounts), HealthOptions.CountFailure
// counts it against CompID and the Scale is settled (an ejection enters the
// journal).
//
// If the order is not assigned to CompID (it moved, completed, or was
// cancelled; CompID may even be unknown), nothing changes: the result
// holds the order as it stands, Moved and Counted false.
type FailRequest struct {
	Pool    string
	OrderID string
	CompID  string
	Now     time.Time
	// Rand holds two uniform integers in [0, 2^53) for the re-dispatch.
	Rand    []uint64
	MaxCost int64
}

// FailResult is the outcome of a failure report.
type FailResult struct {
	// Order is the order after the report.
	Order Order
	// Moved says the order moved from the reported Scale to Order.CompID.
	Moved bool
	// Counted says the report counted against the reported Scale.
	Counted bool
	// Ejected says the report ejected the Scale.
	Ejected bool
}

// TickRequest asks for one bounded share of a pool's health work at Now.
// One call, atomic, does in this order:
//
//  1. settles at most Limit due Scales (see Settling);
//  2. with OnLapse reassign: takes the lapsed Scale with orders whose
//     compId is lowest, and moves its oldest min(Limit, outstanding)
//     orders as Reassign would move them (a batch with the pool's
//     strategy, Rand for the orders in that order, Moves + 1), shrunk to
//     the room the eligible Scales have (no maxOrders room: fewer orders)
//     and, for the strategies that read every Scale per order, to
//     MaxCost / eligible Scales; with no eligible Scale or no room, moves
//     nothing;
//  3. takes at most Limit changes from the front of the journal.
//
// More says that another call now would do work: a due Scale is left, an
// order moved and a lapsed Scale still holds orders, or the journal is not
// empty. A store that has no numbers at hand for a strategy that draws
// (Rand nil: the Redis store sends RandSource's only to a pool it knows
// draws) may leave step 2 to the next call, which More then asks for.
type TickRequest struct {
	Pool string
	Now  time.Time
	// Limit bounds each step (DefaultTickLimit if not positive).
	Limit int
	// Rand holds two uniform integers in [0, 2^53) per order that may
	// move (2 × Limit); numbers it lacks count as 0. The Service leaves it
	// nil and sets RandSource, which draws them as DispatchRequest's does,
	// two per order moved, only for a strategy that draws.
	Rand       []uint64
	RandSource func() uint64
	MaxCost    int64
}

// TickResult is what one Tick did.
type TickResult struct {
	// Changes are the journal's changes taken, oldest first.
	Changes []HealthChange
	// Dropped counts the changes the journal dropped since the last Tick
	// (over MaxJournal).
	Dropped int
	// Moves are the orders moved off a lapsed Scale.
	Moves []Move
	More  bool
	// Unsettled is the number of the pool's Scales recorded lapsed or
	// ejected after the call.
	Unsettled int
}

// Move is an order that went from one Scale to another.
type Move struct {
	OrderID  string
	From, To string
}

// MoveReason says why orders moved, for metrics.
type MoveReason string

// The reasons an order moves.
const (
	// MovedLapse: Tick moved it off a lapsed Scale (onLapse reassign).
	MovedLapse MoveReason = "lapse"
	// MovedFail: a failure report moved it.
	MovedFail MoveReason = "fail"
	// MovedReassign: an operator's reassign of a down Scale moved it.
	MovedReassign MoveReason = "reassign"
)
