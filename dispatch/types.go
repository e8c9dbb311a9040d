package dispatch

import "time"

// Pool is a named group of Scales that orders are dispatched across.
type Pool struct {
	Name     string
	Strategy Strategy
	// SlowStart is the warm-up window of a Scale that became active; zero
	// turns slow start off.
	SlowStart time.Duration
	// ScaleCount is the number of Scales registered in the pool.
	ScaleCount int
	CreatedAt  time.Time
	// Health holds the pool's Scale health options (DESIGN §8).
	Health HealthOptions
}

// PoolSpec creates or updates a pool; nil fields keep their value (or take the
// default on creation).
type PoolSpec struct {
	Strategy  *Strategy
	SlowStart *time.Duration
	// The Scale health options (see HealthOptions).
	HeartbeatTimeout *time.Duration
	OnLapse          *OnLapse
	MaxFails         *int64
	FailWindow       *time.Duration
	EjectTime        *time.Duration
}

// ScaleState says whether a Scale receives orders.
type ScaleState string

// The states of a Scale.
const (
	// Active Scales receive orders while below maxOrders.
	Active ScaleState = "active"
	// Draining Scales keep and complete their orders but get no new ones.
	Draining ScaleState = "draining"
	// Down Scales get no orders; their outstanding orders can be re-dispatched.
	Down ScaleState = "down"
)

// Valid reports whether s is one of the three states.
func (s ScaleState) Valid() bool { return s == Active || s == Draining || s == Down }

// Scale is a resource that processes orders.
type Scale struct {
	CompID    string
	Weight    int64
	State     ScaleState
	MaxOrders int64 // 0 means unlimited
	// Outstanding counts the Scale's orders in state assigned.
	Outstanding int64
	// BaseLoad is the work the Scale carries from elsewhere.
	BaseLoad int64
	// ActiveSince is when the Scale last became active, or up again while
	// active (for slow start).
	ActiveSince time.Time

	// Health is what the service observed (DESIGN §8). A store keeps the
	// health it last recorded; the Service shows HealthAt(now).
	Health Health
	// LastHeartbeatAt is the last heartbeat; registering counts as one.
	LastHeartbeatAt time.Time
	// EjectedUntil ends the Scale's latest ejection (zero: never ejected).
	EjectedUntil time.Time
	// Failures counts the reports of the failure window that opened at
	// FailWindowStart; the Service shows FailuresAt(now).
	Failures        int64
	FailWindowStart time.Time
	// LastFailAt is the latest counted report (zero: none).
	LastFailAt time.Time
	// Ejections counts consecutive ejections (see CountFailure).
	Ejections int64
}

// OrderCount is the load the strategies balance: BaseLoad + Outstanding.
func (s Scale) OrderCount() int64 { return s.BaseLoad + s.Outstanding }

// Eligible reports whether the Scale may receive another order: active, up
// (as recorded) and below maxOrders.
func (s Scale) Eligible() bool {
	return s.State == Active && s.Health == Up && (s.MaxOrders == 0 || s.OrderCount() < s.MaxOrders)
}

// ScaleSpec registers or updates a Scale; nil fields keep their value (or take
// the default on registration). OrderCount reports the Scale's current load:
// the store sets BaseLoad = max(0, OrderCount − Outstanding).
type ScaleSpec struct {
	Weight     *int64
	State      *ScaleState
	MaxOrders  *int64
	OrderCount *int64
}

// OrderState is where an order is in its life cycle.
type OrderState string

// The states of an order.
const (
	Assigned  OrderState = "assigned"
	Completed OrderState = "completed"
	Cancelled OrderState = "cancelled"
)

// Order is one dispatched order.
type Order struct {
	ID      string
	CompID  string
	BatchID string
	Key     string // empty when the order has no affinity key
	State   OrderState
	// AssignedAt is when the order was dispatched; CompletedAt when it was
	// completed or cancelled (zero while assigned).
	AssignedAt  time.Time
	CompletedAt time.Time
	// Moves counts how often the order moved to another Scale (reassign,
	// failure report, lapse); it keeps its id, batch, key and assignedAt.
	Moves int64
}

// Batch is the recorded result of one dispatch, as first answered.
type Batch struct {
	ID          string
	Pool        string
	Strategy    Strategy
	CreatedAt   time.Time
	Assignments []Assignment
}

// Assignment is the Scale an order went to.
type Assignment struct {
	OrderID string
	CompID  string
}

// OrderInput is an order as the client sends it; an empty ID is generated.
type OrderInput struct {
	ID  string
	Key string
}

// Completion finishes one order; DurationMs (0 when absent) feeds
// weighted-response-time.
type Completion struct {
	OrderID    string
	DurationMs int64
}

// Table is the waterfill table as the next batch would start from it.
type Table struct {
	CompIDs        []string
	DispatchCounts []int64
}

// Page asks for one page of a list: at most Limit items after Cursor (empty
// for the first page).
type Page struct {
	Cursor string
	Limit  int
	// Match, if set, narrows ListPools to the pools whose name it accepts
	// (a token scoped to some pools): the others are skipped before their
	// records are read, and the page still holds up to Limit pools, with
	// a cursor that is the name of the last one. Other lists ignore it.
	Match func(name string) bool
}
