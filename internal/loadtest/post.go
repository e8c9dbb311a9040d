package loadtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"
)

// BatchAnswer is the body of a 201 to a batch, and of GET …/batches/{id}.
type BatchAnswer struct {
	BatchID     string `json:"batchId"`
	Assignments []struct {
		OrderID string `json:"orderId"`
		CompID  string `json:"compId"`
	} `json:"assignments"`
}

// Post sends one attempt of the batch p, whose body is body, to target.
// kind names a failure: refused (nothing listens, or no route), reset,
// timeout, unavailable (503), outcome-unknown (503 whose batchId is kept in
// Unknown), or bad (an answer no retry can mend); err holds the answer.
func (l *Load) Post(target string, p Pending, body []byte) (a Ack, kind string, err error) {
	url := target + "/v1/pools/" + l.Spec.Pool + "/batches"
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return Ack{}, "bad", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", p.Key)
	if l.Spec.Token != "" {
		req.Header.Set("Authorization", "Bearer "+l.Spec.Token)
	}
	resp, err := l.Client.Do(req)
	if err != nil {
		var ne net.Error
		switch {
		case errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH):
			return Ack{}, "refused", err
		case errors.As(err, &ne) && ne.Timeout():
			return Ack{}, "timeout", err
		}
		return Ack{}, "reset", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return Ack{}, "reset", err
	}
	switch resp.StatusCode {
	case http.StatusCreated:
		var b BatchAnswer
		if err := json.Unmarshal(data, &b); err != nil || b.BatchID == "" || len(b.Assignments) != len(p.Orders) {
			return Ack{}, "bad", fmt.Errorf("201 for %s: %v: %s", p.Key, err, data)
		}
		a := Ack{Key: p.Key, BatchID: b.BatchID, Target: target, Orders: p.Orders, Assigned: map[string]string{},
			Replayed: resp.Header.Get("Idempotent-Replayed") == "true", At: time.Now()}
		for i, as := range b.Assignments {
			if as.OrderID != p.Orders[i] {
				return Ack{}, "bad", fmt.Errorf("201 for %s: assignment %d is %s, want %s", p.Key, i, as.OrderID, p.Orders[i])
			}
			a.Assigned[as.OrderID] = as.CompID
		}
		return a, "", nil
	case http.StatusServiceUnavailable:
		var pr struct{ Type, BatchID string }
		_ = json.Unmarshal(data, &pr)
		if strings.HasSuffix(pr.Type, ":outcome-unknown") {
			if pr.BatchID == "" {
				return Ack{}, "bad", fmt.Errorf("503 outcome-unknown without a batchId: %s", data)
			}
			l.Mu.Lock()
			l.Unknown = append(l.Unknown, pr.BatchID)
			l.Mu.Unlock()
			return Ack{}, "outcome-unknown", errors.New(string(data))
		}
		return Ack{}, "unavailable", errors.New(string(data))
	}
	return Ack{}, "bad", fmt.Errorf("POST %s key %s: %d %s", url, p.Key, resp.StatusCode, data)
}
