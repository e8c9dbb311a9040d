// Package storetest is the conformance suite of dispatch.Store: the rules
// that every store (store/memory, store/redis) must follow, call for call.
// When two stores disagree, this suite decides.
//
// A store's tests call Run with a Factory:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t testing.TB, opts storetest.Options) dispatch.Store {
//			return memory.New(memory.Options{Retention: opts.Retention})
//		})
//	}
//
// Every subtest gets a fresh store and passes explicit times, so retention
// is tested by passing later times rather than by waiting. After each
// subtest the suite checks the invariants of every pool left in the store:
// a Scale's outstanding equals the number of its orders in state assigned,
// Scales list sorted by (orderCount, compId), and the table is the waterfill
// table of the eligible Scales.
//
// The strategy tests (strategies.go and the files after it) hold the
// reference vectors of DESIGN §3 and a differential test that compares every
// batch with the balancing package's reference over the candidates computed
// from what the store shows, random numbers and times given explicitly.
package storetest

import (
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

// Options configures a store under test.
type Options struct {
	// Retention is how long completed and cancelled orders stay queryable;
	// zero asks for the store's default, which must be 24h.
	Retention time.Duration
	// MaxScales is the most Scales a pool may hold; zero asks for the
	// store's default, which must be dispatch.MaxScales.
	MaxScales int
}

// Factory returns a new, empty store configured with opts. It may register
// cleanups on t, such as stopping a server.
type Factory func(t testing.TB, opts Options) dispatch.Store

// suiteTest is one subtest of Run.
type suiteTest struct {
	name string
	opts Options
	run  func(t *testing.T, s dispatch.Store)
}

// tests lists the subtests of Run, grouped by the file that holds them.
func tests() []suiteTest {
	hour := Options{Retention: time.Hour}
	return []suiteTest{
		{"Ping", Options{}, testPing},
		{"Pools/CreateAndUpdate", Options{}, testPoolCreateAndUpdate},
		{"Pools/List", Options{}, testListPools},
		{"Pools/ListMatch", Options{}, testListPoolsMatch},
		{"Pools/Delete", Options{}, testDeletePool},
		{"Pools/Unknown", Options{}, testUnknownPool},
		{"Scales/Register", Options{}, testRegisterScale},
		{"Scales/Update", Options{}, testUpdateScale},
		{"Scales/List", Options{}, testListScales},
		{"Scales/Delete", Options{}, testDeleteScale},
		{"Scales/PoolFull", Options{MaxScales: 3}, testPoolFull},
		{"Scales/ForceDelete", Options{}, testForceDeleteScale},
		{"Scales/Reassign", Options{}, testReassign},
		{"Scales/ReassignErrors", Options{}, testReassignErrors},
		{"Scales/ListOrders", Options{}, testListScaleOrders},
		{"Scales/ListOrdersAfterLeft", Options{}, testListScaleOrdersAfterLeft},
		{"Waterfill/Seed", Options{}, testSeedExample},
		{"Waterfill/BatchesDiffer", Options{}, testBatchesDiffer},
		{"Waterfill/Differential", Options{}, testDifferential},
		{"Waterfill/MaxOrders", Options{}, testMaxOrders},
		{"Waterfill/MaxOrdersDifferential", Options{}, testMaxOrdersDifferential},
		{"Waterfill/IneligibleScales", Options{}, testIneligibleScales},
		{"Waterfill/LargePool", Options{}, testLargePool},
		{"Strategies/SmoothWeightedRoundRobin", Options{}, testSmoothWeightedRoundRobin},
		{"Strategies/WeightedRoundRobin", Options{}, testWeightedRoundRobin},
		{"Strategies/RoundRobin", Options{}, testRoundRobin},
		{"Strategies/WeightedWaterfill", Options{}, testWeightedWaterfill},
		{"Strategies/WeightedResponseTime", Options{}, testWeightedResponseTime},
		{"Strategies/LeastConnections", Options{}, testLeastConnections},
		{"Strategies/PowerOfTwo", Options{}, testPowerOfTwo},
		{"Strategies/ConsistentHash", Options{}, testConsistentHash},
		{"Strategies/SlowStart", Options{}, testSlowStart},
		{"Strategies/Every", Options{}, testEveryStrategy},
		{"Strategies/DryRun", Options{}, testStrategyDryRun},
		{"Strategies/Reset", Options{}, testStrategyReset},
		{"Strategies/TooExpensive", Options{}, testTooExpensive},
		{"Strategies/Differential", Options{}, testStrategyDifferential},
		{"Strategies/LargePool", Options{}, testStrategyLargePool},
		{"Dispatch/NoEligibleScale", Options{}, testNoEligibleScale},
		{"Dispatch/OrderExists", Options{}, testOrderExists},
		{"Dispatch/Idempotency", Options{}, testIdempotency},
		{"Dispatch/BatchIDRetry", Options{}, testBatchIDRetry},
		{"Dispatch/DryRun", Options{}, testDryRun},
		{"Dispatch/RepeatedOrder", Options{}, testRepeatedOrder},
		{"Orders/Complete", Options{}, testComplete},
		{"Orders/CompleteAllOrNone", Options{}, testCompleteAllOrNone},
		{"Orders/Cancel", Options{}, testCancel},
		{"Orders/FreeRoom", Options{}, testCompleteFreesRoom},
		{"Retention/Orders", hour, testRetention},
		{"Retention/BatchWindows", hour, testBatchWindows},
		{"Retention/NamedBatches", hour, testNamedBatches},
		{"Retention/NamedBatchOfSeveral", hour, testNamedBatchOfSeveral},
		{"Retention/NamedBatchMoves", hour, testNamedBatchMoves},
		{"Retention/NamedBatchLapse", hour, testNamedBatchLapse},
		{"Retention/Default", Options{}, testDefaultRetention},
		{"Retention/Backlog", hour, testRetentionBacklog},
		{"Retention/Steady", hour, testRetentionSteady},
		{"Retention/Reads", hour, testRetentionReads},
		{"Concurrency/Dispatch", Options{}, testConcurrentDispatch},
		{"Concurrency/Mixed", Options{}, testConcurrentMixed},
		{"Health/Defaults", Options{}, testHealthDefaults},
		{"Health/LeaseAtDispatch", Options{}, testLeaseAtDispatch},
		{"Health/Heartbeat", Options{}, testHeartbeat},
		{"Health/LeaseOnOff", Options{}, testLeaseOnOff},
		{"Health/FailEject", Options{}, testFailEject},
		{"Health/EjectionArithmetic", Options{}, testEjectionArithmetic},
		{"Health/FailEdges", Options{}, testFailEdges},
		{"Health/LapseReassign", Options{}, testLapseReassign},
		{"Health/LapseReassignRoom", Options{}, testLapseReassignRoom},
		{"Health/TickBounded", Options{}, testTickBounded},
		{"Health/RandomWalk", Options{}, testHealthRandomWalk},
		{"Service/Dispatch", Options{}, testServiceDispatch},
		{"Service/Orders", Options{}, testServiceOrders},
		{"Watch/Counters", Options{}, testCounters},
		{"Watch/Snapshot", Options{}, testSnapshot},
		{"Watch/SnapshotLarge", Options{}, testSnapshotLarge},
	}
}

// Run runs the conformance suite against the stores newStore makes, one
// fresh store per subtest.
func Run(t *testing.T, newStore Factory) {
	for _, tc := range tests() {
		t.Run(tc.name, func(t *testing.T) {
			s := newTracked(newStore(t, tc.opts))
			t.Cleanup(func() { s.checkInvariants(t) })
			tc.run(t, s)
		})
	}
}
