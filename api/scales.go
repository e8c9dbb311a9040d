package api

import (
	"net/http"

	"github.com/dispatcher/dispatcher/dispatch"
)

func scalePath(pool, compID string) string { return poolPath(pool) + "/scales/" + compID }

// putScale registers (201 with Location) or updates (200) a Scale.
func (s *server) putScale(w http.ResponseWriter, r *http.Request) error {
	pool, compID := pathID(r, "pool"), pathID(r, "compId")
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	spec, err := parseScaleSpec(body)
	if err != nil {
		return err
	}
	scale, created, err := s.svc.PutScale(r.Context(), pool, compID, spec)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		w.Header().Set("Location", scalePath(pool, scale.CompID))
		status = http.StatusCreated
	}
	writeJSON(w, status, toScale(scale))
	return nil
}

// parseScaleSpec reads {"weight", "state", "maxOrders", "orderCount"}, each
// optional.
func parseScaleSpec(body []byte) (dispatch.ScaleSpec, error) {
	o, err := parseObject(body)
	if err != nil {
		return dispatch.ScaleSpec{}, err
	}
	spec := dispatch.ScaleSpec{
		Weight:     o.int64("weight"),
		MaxOrders:  o.int64("maxOrders"),
		OrderCount: o.int64("orderCount"),
	}
	if state := o.string("state"); state != nil {
		st := dispatch.ScaleState(*state)
		spec.State = &st
	}
	return spec, o.close()
}

// getScale answers one Scale.
func (s *server) getScale(w http.ResponseWriter, r *http.Request) error {
	scale, err := s.svc.GetScale(r.Context(), pathID(r, "pool"), pathID(r, "compId"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toScale(scale))
	return nil
}

// listScales answers one page of a pool's Scales, by orderCount then compId.
func (s *server) listScales(w http.ResponseWriter, r *http.Request) error {
	p, err := page(r)
	if err != nil {
		return err
	}
	scales, next, err := s.svc.ListScales(r.Context(), pathID(r, "pool"), p)
	if err != nil {
		return err
	}
	out := scaleListJSON{Scales: make([]scaleJSON, len(scales)), NextCursor: next}
	for i, sc := range scales {
		out.Scales[i] = toScale(sc)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// deleteScale removes a Scale (204); ?force=true cancels its outstanding
// orders, without it they make the request fail with 409.
func (s *server) deleteScale(w http.ResponseWriter, r *http.Request) error {
	force, err := queryBool(r, "force")
	if err != nil {
		return err
	}
	if err := s.svc.DeleteScale(r.Context(), pathID(r, "pool"), pathID(r, "compId"), force); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// reassignJSON reports where the outstanding orders of a down Scale went.
type reassignJSON struct {
	Pool       string     `json:"pool"`
	CompID     string     `json:"compId"`
	Reassigned []moveJSON `json:"reassigned"`
}

type moveJSON struct {
	OrderID string `json:"orderId"`
	From    string `json:"from"`
	To      string `json:"to"`
}

// reassignScale re-dispatches the outstanding orders of a down Scale with
// the pool's strategy, all or none, and answers where each went, oldest
// first. The body is optional and, if sent, an empty object.
func (s *server) reassignScale(w http.ResponseWriter, r *http.Request) error {
	if err := s.readEmptyBody(w, r); err != nil {
		return err
	}
	pool, compID := pathID(r, "pool"), pathID(r, "compId")
	moves, err := s.svc.Reassign(r.Context(), pool, compID)
	if err != nil {
		return err
	}
	out := reassignJSON{Pool: pool, CompID: compID, Reassigned: make([]moveJSON, len(moves))}
	for i, m := range moves {
		out.Reassigned[i] = moveJSON{OrderID: m.OrderID, From: compID, To: m.CompID}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

type orderListJSON struct {
	Orders     []orderJSON `json:"orders"`
	NextCursor string      `json:"nextCursor,omitempty"`
}

// listScaleOrders answers one page of a Scale's outstanding orders, oldest
// first.
func (s *server) listScaleOrders(w http.ResponseWriter, r *http.Request) error {
	p, err := page(r)
	if err != nil {
		return err
	}
	orders, next, err := s.svc.ListScaleOrders(r.Context(), pathID(r, "pool"), pathID(r, "compId"), p)
	if err != nil {
		return err
	}
	out := orderListJSON{Orders: make([]orderJSON, len(orders)), NextCursor: next}
	for i, o := range orders {
		out.Orders[i] = toOrder(o)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
