package api

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

// timeFormat is RFC 3339 in UTC with milliseconds, the one format of every
// time the API returns.
const timeFormat = "2006-01-02T15:04:05.000Z07:00"

func formatTime(t time.Time) string { return string(appendTime(nil, t)) }

// appendTime appends t in UTC as timeFormat lays it out. The time package
// formats time.RFC3339 by a fast path and any other layout by reading the
// layout again on every call, about 2,000 instructions, a twentieth of a
// replica's own work on a single-order dispatch; so the seconds take the
// fast path (in UTC it ends in "Z") and the milliseconds are put before that
// "Z". TestAppendTime holds it to Format(timeFormat).
func appendTime(dst []byte, t time.Time) []byte {
	t = t.UTC()
	dst = t.AppendFormat(dst, time.RFC3339)
	ms := t.Nanosecond() / int(time.Millisecond)
	return append(dst[:len(dst)-1], '.', byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z')
}

// writeJSON answers v as application/json with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	writeBody(w, status, "application/json", v)
}

// writeBody answers v encoded as JSON with the media type ct. Every value
// passed here marshals, so an error is a programming mistake.
func writeBody(w http.ResponseWriter, status int, ct string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic("api: encoding a response: " + err.Error())
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

type poolJSON struct {
	Name               string `json:"name"`
	Strategy           string `json:"strategy"`
	SlowStartSeconds   int64  `json:"slowStartSeconds"`
	HeartbeatTimeoutMs int64  `json:"heartbeatTimeoutMs"`
	OnLapse            string `json:"onLapse"`
	MaxFails           int64  `json:"maxFails"`
	FailWindowMs       int64  `json:"failWindowMs"`
	EjectMs            int64  `json:"ejectMs"`
	ScaleCount         int    `json:"scaleCount"`
	CreatedAt          string `json:"createdAt"`
}

func toPool(p dispatch.Pool) poolJSON {
	h := p.Health
	return poolJSON{
		Name:               p.Name,
		Strategy:           string(p.Strategy),
		SlowStartSeconds:   int64(p.SlowStart / time.Second),
		HeartbeatTimeoutMs: h.HeartbeatTimeout.Milliseconds(),
		OnLapse:            string(h.OnLapse),
		MaxFails:           h.MaxFails,
		FailWindowMs:       h.FailWindow.Milliseconds(),
		EjectMs:            h.EjectTime.Milliseconds(),
		ScaleCount:         p.ScaleCount,
		CreatedAt:          formatTime(p.CreatedAt),
	}
}

type poolListJSON struct {
	Pools      []poolJSON `json:"pools"`
	NextCursor string     `json:"nextCursor,omitempty"`
}

type scaleJSON struct {
	CompID      string `json:"compId"`
	Weight      int64  `json:"weight"`
	State       string `json:"state"`
	MaxOrders   int64  `json:"maxOrders"`
	OrderCount  int64  `json:"orderCount"`
	Outstanding int64  `json:"outstanding"`
	BaseLoad    int64  `json:"baseLoad"`
	Health      string `json:"health"`
	// LastHeartbeatAt is the last heartbeat (registration counts as one);
	// EjectedUntil, absent while the Scale was never ejected, ends its
	// latest ejection; Failures counts the reports of the open window.
	LastHeartbeatAt string `json:"lastHeartbeatAt"`
	EjectedUntil    string `json:"ejectedUntil,omitempty"`
	Failures        int64  `json:"failures"`
}

func toScale(s dispatch.Scale) scaleJSON {
	j := scaleJSON{
		CompID:          s.CompID,
		Weight:          s.Weight,
		State:           string(s.State),
		MaxOrders:       s.MaxOrders,
		OrderCount:      s.OrderCount(),
		Outstanding:     s.Outstanding,
		BaseLoad:        s.BaseLoad,
		Health:          string(s.Health),
		LastHeartbeatAt: formatTime(s.LastHeartbeatAt),
		Failures:        s.Failures,
	}
	if !s.EjectedUntil.IsZero() {
		j.EjectedUntil = formatTime(s.EjectedUntil)
	}
	return j
}

type scaleListJSON struct {
	Scales     []scaleJSON `json:"scales"`
	NextCursor string      `json:"nextCursor,omitempty"`
}

type orderJSON struct {
	OrderID     string `json:"orderId"`
	CompID      string `json:"compId"`
	BatchID     string `json:"batchId"`
	Key         string `json:"key,omitempty"`
	State       string `json:"state"`
	AssignedAt  string `json:"assignedAt"`
	CompletedAt string `json:"completedAt,omitempty"`
	Moves       int64  `json:"moves"`
}

func toOrder(o dispatch.Order) orderJSON {
	j := orderJSON{
		OrderID:    o.ID,
		CompID:     o.CompID,
		BatchID:    o.BatchID,
		Key:        o.Key,
		State:      string(o.State),
		AssignedAt: formatTime(o.AssignedAt),
		Moves:      o.Moves,
	}
	if !o.CompletedAt.IsZero() {
		j.CompletedAt = formatTime(o.CompletedAt)
	}
	return j
}

type completedJSON struct {
	Completed int `json:"completed"`
}

type tableJSON struct {
	CompIDs        []string `json:"compIdArr"`
	DispatchCounts []int64  `json:"dispatchCountArr"`
}

func toTable(t dispatch.Table) tableJSON {
	j := tableJSON{CompIDs: t.CompIDs, DispatchCounts: t.DispatchCounts}
	if j.CompIDs == nil {
		j.CompIDs = []string{}
	}
	if j.DispatchCounts == nil {
		j.DispatchCounts = []int64{}
	}
	return j
}

type statusJSON struct {
	Status  string `json:"status"`
	Version string `json:"version,omitempty"`
}
