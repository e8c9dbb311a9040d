package api

import (
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

// The reference encoding of a batch: what the API answered through
// encoding/json before appendBatch, and what appendBatch must still write.

type assignmentJSON struct {
	OrderID string `json:"orderId"`
	CompID  string `json:"compId"`
}

// batchJSON is a batch; BatchID is empty, and left out, for a dry run.
type batchJSON struct {
	BatchID     string           `json:"batchId,omitempty"`
	Pool        string           `json:"pool"`
	Strategy    string           `json:"strategy"`
	CreatedAt   string           `json:"createdAt"`
	Assignments []assignmentJSON `json:"assignments"`
}

func toBatch(b dispatch.Batch) batchJSON {
	as := make([]assignmentJSON, len(b.Assignments))
	for i, a := range b.Assignments {
		as[i] = assignmentJSON{OrderID: a.OrderID, CompID: a.CompID}
	}
	return batchJSON{
		BatchID:     b.ID,
		Pool:        b.Pool,
		Strategy:    string(b.Strategy),
		CreatedAt:   formatTime(b.CreatedAt),
		Assignments: as,
	}
}

func marshalBatch(t testing.TB, b dispatch.Batch) string {
	t.Helper()
	want, err := json.Marshal(toBatch(b))
	if err != nil {
		t.Fatal(err)
	}
	return string(want)
}

func TestAppendBatchMatchesMarshal(t *testing.T) {
	at := time.Date(2026, 12, 1, 21, 4, 5, 678_900_000, time.FixedZone("x", 3600))
	odd := []string{"", "o-1", `quote"`, `back\slash`, "<tag>&amp;", "tab\tnew\nline\r", "\x00\x1f\x7f",
		"é ü 日本", "\u2028\u2029", "bad \xff utf-8", "~!#$%'()*+,-./:;=?@[]^_`{|}"}
	for c := range 256 { // every byte, amid plain ones
		odd = append(odd, "a"+string([]byte{byte(c)})+"b")
	}
	cases := []dispatch.Batch{
		{},
		{ID: "b-1", Pool: "p", Strategy: dispatch.Strategy("waterfill"), CreatedAt: at},
		{Pool: "dry", Strategy: "random", CreatedAt: at, Assignments: []dispatch.Assignment{{OrderID: "o-1", CompID: "s-1"}}},
	}
	for _, s := range odd {
		cases = append(cases, dispatch.Batch{ID: s, Pool: s, Strategy: dispatch.Strategy(s), CreatedAt: at,
			Assignments: []dispatch.Assignment{{OrderID: s, CompID: "s"}, {OrderID: "o", CompID: s}}})
	}
	for _, b := range cases {
		if got, want := string(appendBatch(nil, b)), marshalBatch(t, b); got != want {
			t.Errorf("appendBatch:\n got %s\nwant %s", got, want)
		}
	}
}

func FuzzAppendBatch(f *testing.F) {
	f.Add("b-1", "pool", "waterfill", "o-1", "s-1", int64(0))
	f.Add("", "p<", "x\"y", "\xff", "\u2028", int64(-62135596800000))
	f.Fuzz(func(t *testing.T, id, pool, strategy, order, comp string, ms int64) {
		b := dispatch.Batch{ID: id, Pool: pool, Strategy: dispatch.Strategy(strategy), CreatedAt: time.UnixMilli(ms),
			Assignments: []dispatch.Assignment{{OrderID: order, CompID: comp}}}
		if got, want := string(appendBatch(nil, b)), marshalBatch(t, b); got != want {
			t.Errorf("appendBatch:\n got %s\nwant %s", got, want)
		}
	})
}

func TestWriteBatchHeaders(t *testing.T) {
	b := dispatch.Batch{ID: "b-1", Pool: "p", Strategy: "waterfill", Assignments: []dispatch.Assignment{{OrderID: "o", CompID: "s"}}}
	for range 2 { // the second answer reuses the first's buffer
		w := httptest.NewRecorder()
		writeBatch(w, httptest.NewRequest("POST", "/v1/pools/p/batches", nil), 201, b)
		body := w.Body.String()
		if w.Code != 201 || w.Header().Get("Content-Type") != "application/json" ||
			w.Header().Get("Content-Length") != strconv.Itoa(len(body)) || body != marshalBatch(t, b)+"\n" {
			t.Fatalf("writeBatch: %d %v %q", w.Code, w.Header(), body)
		}
	}
}
