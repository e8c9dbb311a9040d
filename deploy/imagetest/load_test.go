//go:build image

package imagetest_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/internal/loadtest"
)

// startLoad starts the load of a fault test on pool, through targets:
// six workers that send batches of five orders until Finish, retrying
// each on the next replica every 20 ms until it is answered 201.
func startLoad(tb testing.TB, pool string, targets *loadtest.Targets, primary bool) *loadtest.Load {
	tb.Helper()
	return loadtest.Start(tb, loadtest.Spec{Pool: pool, Prefix: pool, Token: userToken, Workers: 6,
		Orders: func(int, int) int { return 5 }, Targets: targets.Get, Primary: primary,
		Pause: 20 * time.Millisecond, MaxPause: 20 * time.Millisecond, Timeout: 20 * time.Second})
}

// verify checks through base that every acknowledged batch is recorded as
// answered, and that the pool's Scales hold exactly the acknowledged
// orders: none lost, none twice.
func verify(tb testing.TB, base string, l *loadtest.Load) {
	tb.Helper()
	pool := base + "/v1/pools/" + l.Spec.Pool
	var (
		mu       sync.Mutex
		perScale = map[string]int{}
		problems []string
		lost     int
		wg       sync.WaitGroup
		next     atomic.Int64
	)
	for range 8 {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(l.Acks) {
					return
				}
				a := l.Acks[i]
				status, data, err := get(pool + "/batches/" + a.BatchID)
				var b loadtest.BatchAnswer
				mu.Lock()
				if err != nil || status != http.StatusOK || json.Unmarshal(data, &b) != nil {
					problems = append(problems, fmt.Sprintf("batch %s (key %s, acknowledged by %s): got %d %s %v, want 200", a.BatchID, a.Key, a.Target, status, data, err))
					lost++
				}
				for _, as := range b.Assignments {
					if a.Assigned[as.OrderID] != as.CompID {
						problems = append(problems, fmt.Sprintf("batch %s: order %s recorded on %s, answered %s", a.BatchID, as.OrderID, as.CompID, a.Assigned[as.OrderID]))
					}
					perScale[as.CompID]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for i, p := range problems {
		if i == 10 {
			tb.Errorf("… and %d more", len(problems)-10)
			break
		}
		tb.Error(p)
	}
	if lost > 0 {
		tb.Errorf("%d of %d acknowledged batches lost", lost, len(l.Acks))
	}
	var scales struct {
		Scales []struct {
			CompID      string `json:"compId"`
			Outstanding int    `json:"outstanding"`
		} `json:"scales"`
	}
	mustCall(tb, http.MethodGet, pool+"/scales", userToken, "", http.StatusOK, &scales)
	for _, sc := range scales.Scales {
		if sc.Outstanding != perScale[sc.CompID] {
			tb.Errorf("Scale %s: outstanding %d, want the %d acknowledged orders on it", sc.CompID, sc.Outstanding, perScale[sc.CompID])
		}
	}
}

// get GETs url with the client token, for any goroutine.
func get(url string) (int, []byte, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+userToken)
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, data, err
}
