package storetest

import (
	"context"

	"github.com/dispatcher/dispatcher/dispatch"
)

// Instant is a Store that answers every dispatch at once, each order on
// Scale s-1, and has no other call (its Store is nil): the benchmarks of
// what the Service and the API cost around a store use it.
type Instant struct{ dispatch.Store }

// Dispatch answers req as a new batch of waterfill with every order on s-1.
func (Instant) Dispatch(_ context.Context, req dispatch.DispatchRequest) (dispatch.Batch, bool, error) {
	b := dispatch.Batch{ID: req.BatchID, Pool: req.Pool, Strategy: dispatch.Strategy("waterfill"), CreatedAt: req.Now,
		Assignments: make([]dispatch.Assignment, len(req.Orders))}
	for i, o := range req.Orders {
		b.Assignments[i] = dispatch.Assignment{OrderID: o.ID, CompID: "s-1"}
	}
	return b, false, nil
}
