package client

import "time"

// The types below mirror the schemas of openapi.yaml, one Go type per
// schema with the same name; a test in the service's module keeps them in
// step (every property a field, every field a property). Optional members
// of request bodies are pointers or omitted when empty, so that an absent
// member keeps its value on the server.

// Strategy names how a pool picks Scales (openapi.yaml's Strategy).
type Strategy string

// The strategies of the service.
const (
	StrategyWaterfill                Strategy = "waterfill"
	StrategyWeightedWaterfill        Strategy = "weighted-waterfill"
	StrategyRandom                   Strategy = "random"
	StrategyWeightedRandom           Strategy = "weighted-random"
	StrategyRoundRobin               Strategy = "round-robin"
	StrategyWeightedRoundRobin       Strategy = "weighted-round-robin"
	StrategySmoothWeightedRoundRobin Strategy = "smooth-weighted-round-robin"
	StrategyWeightedResponseTime     Strategy = "weighted-response-time"
	StrategyLeastConnections         Strategy = "least-connections"
	StrategyPowerOfTwo               Strategy = "power-of-two"
	StrategyConsistentHash           Strategy = "consistent-hash"
)

// ScaleState is what an operator set on a Scale.
type ScaleState string

// The states of a Scale.
const (
	ScaleActive   ScaleState = "active"
	ScaleDraining ScaleState = "draining"
	ScaleDown     ScaleState = "down"
)

// OrderState is where an order stands.
type OrderState string

// The states of an order.
const (
	OrderAssigned  OrderState = "assigned"
	OrderCompleted OrderState = "completed"
	OrderCancelled OrderState = "cancelled"
)

// ScaleHealth is what the service observed about a Scale.
type ScaleHealth string

// The healths of a Scale: only up Scales receive orders.
const (
	HealthUp      ScaleHealth = "up"
	HealthLapsed  ScaleHealth = "lapsed"  // no heartbeat for the pool's heartbeatTimeoutMs
	HealthEjected ScaleHealth = "ejected" // maxFails failure reports within failWindowMs
)

// OnLapse is what happens to a lapsed Scale's orders.
type OnLapse string

// The choices of OnLapse.
const (
	OnLapseHold     OnLapse = "hold"
	OnLapseReassign OnLapse = "reassign"
)

// Int64 returns a pointer to v, for the optional members of inputs.
func Int64(v int64) *int64 { return &v }

// PoolInput creates or updates a pool; nil and empty members keep their
// value (or take their default on creation).
type PoolInput struct {
	Strategy         Strategy `json:"strategy,omitempty"`
	SlowStartSeconds *int64   `json:"slowStartSeconds,omitempty"`
	// The Scale health options: heartbeatTimeoutMs 0 turns heartbeats off,
	// maxFails 0 ejection.
	HeartbeatTimeoutMs *int64  `json:"heartbeatTimeoutMs,omitempty"`
	OnLapse            OnLapse `json:"onLapse,omitempty"`
	MaxFails           *int64  `json:"maxFails,omitempty"`
	FailWindowMs       *int64  `json:"failWindowMs,omitempty"`
	EjectMs            *int64  `json:"ejectMs,omitempty"`
}

// Pool is a pool as the service reports it.
type Pool struct {
	Name             string   `json:"name"`
	Strategy         Strategy `json:"strategy"`
	SlowStartSeconds int64    `json:"slowStartSeconds"`
	// The Scale health options.
	HeartbeatTimeoutMs int64     `json:"heartbeatTimeoutMs"`
	OnLapse            OnLapse   `json:"onLapse"`
	MaxFails           int64     `json:"maxFails"`
	FailWindowMs       int64     `json:"failWindowMs"`
	EjectMs            int64     `json:"ejectMs"`
	ScaleCount         int64     `json:"scaleCount"`
	CreatedAt          time.Time `json:"createdAt"`
}

// PoolList is one page of pools.
type PoolList struct {
	Pools      []Pool `json:"pools"`
	NextCursor string `json:"nextCursor,omitempty"`
}

// ScaleInput registers or updates a Scale; nil and empty members keep their
// value (or take their default on registration). OrderCount reports the
// Scale's current load: the service sets baseLoad to
// max(0, orderCount − outstanding).
type ScaleInput struct {
	Weight     *int64     `json:"weight,omitempty"`
	State      ScaleState `json:"state,omitempty"`
	MaxOrders  *int64     `json:"maxOrders,omitempty"`
	OrderCount *int64     `json:"orderCount,omitempty"`
}

// Scale is a Scale as the service reports it.
type Scale struct {
	CompID      string     `json:"compId"`
	Weight      int64      `json:"weight"`
	State       ScaleState `json:"state"`
	MaxOrders   int64      `json:"maxOrders"`
	OrderCount  int64      `json:"orderCount"`
	Outstanding int64      `json:"outstanding"`
	BaseLoad    int64      `json:"baseLoad"`
	// Health is what the service observed; LastHeartbeatAt the last
	// heartbeat (registration counts as one); EjectedUntil, nil if never
	// ejected, the end of the latest ejection; Failures the reports
	// counted in the open failure window.
	Health          ScaleHealth `json:"health"`
	LastHeartbeatAt time.Time   `json:"lastHeartbeatAt"`
	EjectedUntil    *time.Time  `json:"ejectedUntil,omitempty"`
	Failures        int64       `json:"failures"`
}

// ScaleList is one page of a pool's Scales, by orderCount, then compId.
type ScaleList struct {
	Scales     []Scale `json:"scales"`
	NextCursor string  `json:"nextCursor,omitempty"`
}

// OrderList is one page of a Scale's outstanding orders, oldest first.
type OrderList struct {
	Orders     []Order `json:"orders"`
	NextCursor string  `json:"nextCursor,omitempty"`
}

// Reassignment says where the orders of a down Scale went.
type Reassignment struct {
	Pool       string `json:"pool"`
	CompID     string `json:"compId"`
	Reassigned []Move `json:"reassigned"`
}

// Move is one order that left a Scale (Reassignment.reassigned).
type Move struct {
	OrderID string `json:"orderId"`
	From    string `json:"from"`
	To      string `json:"to"`
}

// OrderInput is one order of a batch. Without an ID the service makes one
// (a UUIDv7); Key is the affinity key of consistent-hash.
type OrderInput struct {
	ID  string `json:"id,omitempty"`
	Key string `json:"key,omitempty"`
}

// BatchInput is the body of a dispatch.
type BatchInput struct {
	Orders []OrderInput `json:"orders"`
}

// Assignment is where one order of a batch went.
type Assignment struct {
	OrderID string `json:"orderId"`
	CompID  string `json:"compId"`
}

// Batch is a dispatched batch; Assignments are in request order.
type Batch struct {
	BatchID     string       `json:"batchId"`
	Pool        string       `json:"pool"`
	Strategy    Strategy     `json:"strategy"`
	CreatedAt   time.Time    `json:"createdAt"`
	Assignments []Assignment `json:"assignments"`
}

// BatchPreview is a dry run's answer: the assignments a batch would get,
// with no batch id, for nothing was recorded.
type BatchPreview struct {
	Pool        string       `json:"pool"`
	Strategy    Strategy     `json:"strategy"`
	CreatedAt   time.Time    `json:"createdAt"`
	Assignments []Assignment `json:"assignments"`
}

// Order is one order as the service reports it. CompletedAt is set on
// completed and cancelled orders.
type Order struct {
	OrderID     string     `json:"orderId"`
	CompID      string     `json:"compId"`
	BatchID     string     `json:"batchId"`
	Key         string     `json:"key,omitempty"`
	State       OrderState `json:"state"`
	AssignedAt  time.Time  `json:"assignedAt"`
	CompletedAt *time.Time `json:"completedAt,omitempty"`
	// Moves counts how often the order moved to another Scale.
	Moves int64 `json:"moves"`
}

// HeartbeatInput is the optional body of HeartbeatScale: OrderCount
// reports the Scale's load as ScaleInput's does.
type HeartbeatInput struct {
	OrderCount *int64 `json:"orderCount,omitempty"`
}

// FailInput is a failure report: the caller could not hand the order to
// the Scale CompID (required); Reason (at most 256 bytes) goes to the
// service's log.
type FailInput struct {
	CompID string `json:"compId"`
	Reason string `json:"reason,omitempty"`
}

// CompleteInput is the optional body of CompleteOrder: DurationMs feeds
// weighted-response-time.
type CompleteInput struct {
	DurationMs *int64 `json:"durationMs,omitempty"`
}

// CancelInput is the body of CancelOrder and ReassignScale: always empty.
type CancelInput struct{}

// CompletionsInput completes many orders at once.
type CompletionsInput struct {
	Orders []Completion `json:"orders"`
}

// Completion is one order of CompletionsInput.
type Completion struct {
	ID         string `json:"id"`
	DurationMs *int64 `json:"durationMs,omitempty"`
}

// Completed counts the orders a CompleteOrders call completed.
type Completed struct {
	Completed int64 `json:"completed"`
}

// Table is the waterfill table as the next batch would start from it.
type Table struct {
	CompIDArr        []string `json:"compIdArr"`
	DispatchCountArr []int64  `json:"dispatchCountArr"`
}

// Health is the answer of the probes.
type Health struct {
	Status  string `json:"status"`
	Version string `json:"version,omitempty"`
}
