package balancing

// Kind says how a store runs a strategy.
type Kind int

const (
	// Levels is waterfill's way: the whole batch is planned at once from
	// the eligible Scales ranked by load ([Waterfill], [Table]).
	Levels Kind = iota + 1
	// PerOrder strategies are Pickers: one order at a time, each pick
	// seeing the loads of the batch's earlier picks.
	PerOrder
	// Hashed is consistent hashing: each order's key is looked up on a
	// [Ring] of every registered Scale, walking past the ineligible ones.
	Hashed
)

// Cost says how much of the pool a strategy reads per order (DESIGN §3,
// Cost).
type Cost int

const (
	// Cheap strategies read O(log N) of the pool per order, so a small
	// batch never reads the whole pool. The Picker of a cheap PerOrder
	// strategy is a RankPicker, which a store runs over its index.
	Cheap Cost = iota + 1
	// Costly strategies read every eligible Scale for every order: the
	// stores refuse a batch whose eligible Scales × orders exceed the cost
	// cap.
	Costly
)

// String returns "cheap" or "costly", the names the Redis scripts use.
func (c Cost) String() string {
	switch c {
	case Cheap:
		return "cheap"
	case Costly:
		return "costly"
	}
	return "unknown"
}

// Strategy is one strategy of DESIGN §3 as the stores, the API and the
// tests need to know it. The table of them, [Strategies], is the one place
// that lists them: the API validates a pool's strategy against it, the
// stores choose how to run a strategy from it, and the tests iterate it.
type Strategy struct {
	// Name is the pool setting, e.g. "power-of-two".
	Name string
	// Kind says how a store runs it.
	Kind Kind
	// Cost says whether it reads every eligible Scale for every order.
	Cost Cost
	// Weighted strategies read the Scales' weights, so weight and slow
	// start change their picks.
	Weighted bool
	// Stateful strategies keep state between batches (a cursor, a counter,
	// current weights), which the stores persist and a change of strategy
	// resets. Their Picker is a pointer that [Clone] copies.
	Stateful bool
	// Random strategies draw: their picks read the two random numbers of
	// each order (Picker.Pick's r1, r2). The others never do, so a store
	// need not make or send the numbers for them.
	Random bool
	// New returns the strategy's Picker with a fresh state: the rule every
	// store and test runs. It is nil unless Kind is PerOrder.
	New func() Picker
}

// strategies is the registry, in the order the API lists the strategies.
var strategies = []Strategy{
	{Name: "waterfill", Kind: Levels, Cost: Cheap},
	{Name: "weighted-waterfill", Kind: PerOrder, Cost: Costly, Weighted: true,
		New: func() Picker { return WeightedWaterfill{} }},
	{Name: "random", Kind: PerOrder, Cost: Cheap, Random: true,
		New: func() Picker { return Random{} }},
	{Name: "weighted-random", Kind: PerOrder, Cost: Costly, Weighted: true, Random: true,
		New: func() Picker { return WeightedRandom{} }},
	{Name: "round-robin", Kind: PerOrder, Cost: Cheap, Stateful: true,
		New: func() Picker { return &RoundRobin{} }},
	{Name: "weighted-round-robin", Kind: PerOrder, Cost: Costly, Weighted: true, Stateful: true,
		New: func() Picker { return &WeightedRoundRobin{} }},
	{Name: "smooth-weighted-round-robin", Kind: PerOrder, Cost: Costly, Weighted: true, Stateful: true,
		New: func() Picker { return &SmoothWeightedRoundRobin{} }},
	{Name: "weighted-response-time", Kind: PerOrder, Cost: Costly, Stateful: true, Random: true,
		New: func() Picker { return &WeightedResponseTime{} }},
	{Name: "least-connections", Kind: PerOrder, Cost: Costly, Weighted: true, Stateful: true,
		New: func() Picker { return &LeastConnections{} }},
	{Name: "power-of-two", Kind: PerOrder, Cost: Cheap, Weighted: true, Random: true,
		New: func() Picker { return PowerOfTwo{} }},
	{Name: "consistent-hash", Kind: Hashed, Cost: Cheap},
}

// Strategies returns every strategy, in the order the API lists them (the
// default, waterfill, first). The caller may change the slice.
func Strategies() []Strategy {
	return append([]Strategy(nil), strategies...)
}

// Lookup returns the strategy named name, and whether there is one.
func Lookup(name string) (Strategy, bool) {
	for _, s := range strategies {
		if s.Name == name {
			return s, true
		}
	}
	return Strategy{}, false
}
