package api

import (
	"fmt"
	"net/http"

	"github.com/dispatcher/dispatcher/dispatch"
)

// getOrder answers one order.
func (s *server) getOrder(w http.ResponseWriter, r *http.Request) error {
	order, err := s.svc.GetOrder(r.Context(), pathID(r, "pool"), pathID(r, "orderId"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toOrder(order))
	return nil
}

// completeOrder completes one order; the body {"durationMs": n} is
// optional.
func (s *server) completeOrder(w http.ResponseWriter, r *http.Request) error {
	o, err := s.readObject(w, r)
	if err != nil {
		return err
	}
	duration := o.int64("durationMs")
	if err := o.close(); err != nil {
		return err
	}
	var ms int64
	if duration != nil {
		ms = *duration
	}
	order, err := s.svc.CompleteOrder(r.Context(), pathID(r, "pool"), pathID(r, "orderId"), ms)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toOrder(order))
	return nil
}

// cancelOrder cancels one order. It takes no body; one that is sent must be
// the empty object.
func (s *server) cancelOrder(w http.ResponseWriter, r *http.Request) error {
	if err := s.readEmptyBody(w, r); err != nil {
		return err
	}
	order, err := s.svc.CancelOrder(r.Context(), pathID(r, "pool"), pathID(r, "orderId"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toOrder(order))
	return nil
}

// completeOrders completes many orders atomically and answers how many were
// not completed before.
func (s *server) completeOrders(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	cs, err := parseCompletions(body)
	if err != nil {
		return err
	}
	n, err := s.svc.Complete(r.Context(), pathID(r, "pool"), cs)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, completedJSON{Completed: n})
	return nil
}

// parseCompletions reads {"orders": [{"id", "durationMs"}, …]}; id is
// required.
func parseCompletions(body []byte) ([]dispatch.Completion, error) {
	o, err := parseObject(body)
	if err != nil {
		return nil, err
	}
	elems := o.objects("orders")
	cs := make([]dispatch.Completion, len(elems))
	for i, e := range elems {
		id, duration := e.string("id"), e.int64("durationMs")
		if err := e.close(); err != nil {
			return nil, err
		}
		if id == nil {
			return nil, fmt.Errorf("%w: %s is required", dispatch.ErrInvalidID, e.at("id"))
		}
		cs[i].OrderID = *id
		if duration != nil {
			cs[i].DurationMs = *duration
		}
	}
	return cs, o.close()
}
