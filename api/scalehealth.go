package api

import (
	"fmt"
	"net/http"

	"github.com/dispatcher/dispatcher/dispatch"
)

// heartbeat renews a Scale's lease (200, the Scale). The body is optional:
// absent, {} or {"orderCount": X}, which reports the Scale's load as PUT
// does.
func (s *server) heartbeat(w http.ResponseWriter, r *http.Request) error {
	o, err := s.readObject(w, r)
	if err != nil {
		return err
	}
	orderCount := o.int64("orderCount")
	if err := o.close(); err != nil {
		return err
	}
	scale, err := s.svc.Heartbeat(r.Context(), pathID(r, "pool"), pathID(r, "compId"), orderCount)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toScale(scale))
	return nil
}

// failOrder handles a failure report {"compId", "reason"} (compId
// required): 200 with the order as it stands, moved or not; 409 when no
// other Scale can take it.
func (s *server) failOrder(w http.ResponseWriter, r *http.Request) error {
	pool, orderID := pathID(r, "pool"), pathID(r, "orderId")
	o, err := s.readObject(w, r)
	if err != nil {
		return err
	}
	compID, reason := o.string("compId"), o.string("reason")
	if err := o.close(); err != nil {
		return err
	}
	if compID == nil {
		return fmt.Errorf("%w: compId is required: the Scale that failed", dispatch.ErrInvalidID)
	}
	in := dispatch.FailInput{Pool: pool, OrderID: orderID, CompID: *compID}
	if reason != nil {
		in.Reason = *reason
	}
	res, err := s.svc.Fail(r.Context(), in)
	if err != nil {
		return err
	}
	if res.Counted {
		s.log.Info("failure report", "pool", pool, "orderId", orderID, "compId", in.CompID,
			"reason", in.Reason, "movedTo", res.Order.CompID, "ejected", res.Ejected)
	}
	writeJSON(w, http.StatusOK, toOrder(res.Order))
	return nil
}
