package api

import (
	"fmt"
	"net/http"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

// maxSlowStartSeconds is dispatch.MaxSlowStart in the unit of the API.
const maxSlowStartSeconds = int64(dispatch.MaxSlowStart / time.Second)

// maxHealthMs is dispatch.MaxHealthDuration in the unit of the API.
const maxHealthMs = int64(dispatch.MaxHealthDuration / time.Millisecond)

func poolPath(name string) string { return "/v1/pools/" + name }

// putPool creates (201 with Location) or updates (200) a pool.
func (s *server) putPool(w http.ResponseWriter, r *http.Request) error {
	name := pathID(r, "pool")
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	spec, err := parsePoolSpec(body)
	if err != nil {
		return err
	}
	pool, created, err := s.svc.PutPool(r.Context(), name, spec)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if created {
		w.Header().Set("Location", poolPath(pool.Name))
		status = http.StatusCreated
	}
	writeJSON(w, status, toPool(pool))
	return nil
}

// parsePoolSpec reads {"strategy", "slowStartSeconds", "heartbeatTimeoutMs",
// "onLapse", "maxFails", "failWindowMs", "ejectMs"}, each optional.
func parsePoolSpec(body []byte) (dispatch.PoolSpec, error) {
	var spec dispatch.PoolSpec
	o, err := parseObject(body)
	if err != nil {
		return spec, err
	}
	strategy := o.string("strategy")
	slowStart := o.int64("slowStartSeconds")
	heartbeat := o.int64("heartbeatTimeoutMs")
	onLapse := o.string("onLapse")
	spec.MaxFails = o.int64("maxFails")
	failWindow := o.int64("failWindowMs")
	eject := o.int64("ejectMs")
	if err := o.close(); err != nil {
		return spec, err
	}
	if onLapse != nil {
		ol := dispatch.OnLapse(*onLapse)
		spec.OnLapse = &ol
	}
	for _, f := range []struct {
		name string
		ms   *int64
		to   **time.Duration
	}{
		{"heartbeatTimeoutMs", heartbeat, &spec.HeartbeatTimeout},
		{"failWindowMs", failWindow, &spec.FailWindow},
		{"ejectMs", eject, &spec.EjectTime},
	} {
		if f.ms == nil {
			continue
		}
		// Bounded here: the conversion to a Duration could overflow;
		// dispatch checks the exact range.
		if *f.ms < 0 || *f.ms > maxHealthMs {
			return spec, fmt.Errorf("%w: %s %d is outside [0, %d]", dispatch.ErrOutOfRange, f.name, *f.ms, maxHealthMs)
		}
		d := time.Duration(*f.ms) * time.Millisecond
		*f.to = &d
	}
	if strategy != nil {
		st := dispatch.Strategy(*strategy)
		spec.Strategy = &st
	}
	if slowStart != nil {
		// Checked here: the conversion to a Duration could overflow.
		if *slowStart < 0 || *slowStart > maxSlowStartSeconds {
			return spec, fmt.Errorf("%w: slowStartSeconds %d is outside [0, %d]", dispatch.ErrOutOfRange, *slowStart, maxSlowStartSeconds)
		}
		d := time.Duration(*slowStart) * time.Second
		spec.SlowStart = &d
	}
	return spec, nil
}

// getPool answers one pool.
func (s *server) getPool(w http.ResponseWriter, r *http.Request) error {
	pool, err := s.svc.GetPool(r.Context(), pathID(r, "pool"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toPool(pool))
	return nil
}

// listPools answers one page of the pools the token may see.
func (s *server) listPools(w http.ResponseWriter, r *http.Request) error {
	p, err := page(r)
	if err != nil {
		return err
	}
	p.Match = visible(r)
	pools, next, err := s.svc.ListPools(r.Context(), p)
	if err != nil {
		return err
	}
	out := poolListJSON{Pools: make([]poolJSON, len(pools)), NextCursor: next}
	for i, pool := range pools {
		out.Pools[i] = toPool(pool)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// deletePool removes a pool and all its state (204).
func (s *server) deletePool(w http.ResponseWriter, r *http.Request) error {
	if err := s.svc.DeletePool(r.Context(), pathID(r, "pool")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// table answers the waterfill table the next batch would start from.
func (s *server) table(w http.ResponseWriter, r *http.Request) error {
	t, err := s.svc.Table(r.Context(), pathID(r, "pool"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, toTable(t))
	return nil
}
