package api

import (
	"encoding/json"
	"net/http/httptest"
	"slices"
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
		CreatedAt:   b.CreatedAt.UTC().Format(timeFormat),
		Assignments: as,
	}
}

// TestAppendTime holds appendTime, and so formatTime, to Format(timeFormat)
// for milliseconds with and without zeros, nanoseconds below them, times in
// other zones, and the years at the ends of four digits and beyond.
func TestAppendTime(t *testing.T) {
	east := time.FixedZone("east", 5*3600+30*60)
	times := []time.Time{
		time.Date(2026, 12, 2, 11, 32, 19, 560_000_000, time.UTC),
		time.Date(2026, 12, 2, 11, 32, 19, 0, time.UTC),
		time.Date(2026, 12, 2, 11, 32, 19, 999_999_999, time.UTC),
		time.Date(2026, 12, 2, 11, 32, 19, 1_000_000, time.UTC),
		time.Date(2026, 12, 2, 11, 32, 19, 10_000_000, time.UTC),
		time.Date(2026, 12, 2, 11, 32, 19, 100_000_000, time.UTC),
		time.Date(2026, 12, 2, 11, 32, 19, 999_999, time.UTC),
		time.Date(2026, 1, 1, 2, 0, 0, 123_456_789, east),
		time.Date(2026, 1, 1, 2, 0, 0, 7_000_000, time.Local),
		time.Unix(0, 0),
		time.UnixMilli(1<<41 + 7),
		{},
		time.Date(1, 1, 1, 0, 0, 0, 1_000_000, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999_000_000, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 5_000_000, time.UTC),
		time.Date(-1, 1, 1, 0, 0, 0, 5_000_000, time.UTC),
	}
	for i := range 1000 {
		times = append(times, time.UnixMilli(int64(i)*7_919_993_117+int64(i%1000)).In(east))
	}
	for _, tm := range times {
		want := tm.UTC().Format(timeFormat)
		if got := string(appendTime([]byte("x"), tm)); got != "x"+want {
			t.Errorf("appendTime(%v) = %q, want %q", tm, got, "x"+want)
		}
		if got := formatTime(tm); got != want {
			t.Errorf("formatTime(%v) = %q, want %q", tm, got, want)
		}
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

// TestWriteBatchHeaders: writeBatch sets the Content-Length of an answer
// of autoLengthBelow bytes or more and leaves a smaller one's to net/http
// (TestAnswerLength reads it on the wire).
func TestWriteBatchHeaders(t *testing.T) {
	small := dispatch.Batch{ID: "b-1", Pool: "p", Strategy: "waterfill", Assignments: []dispatch.Assignment{{OrderID: "o", CompID: "s"}}}
	large := small
	large.Assignments = slices.Repeat(small.Assignments, autoLengthBelow/20)
	for _, b := range []dispatch.Batch{small, large, small} { // each answer reuses the last one's buffer
		w := httptest.NewRecorder()
		writeBatch(w, httptest.NewRequest("POST", "/v1/pools/p/batches", nil), 201, b)
		body := w.Body.String()
		length := ""
		if len(body) >= autoLengthBelow {
			length = strconv.Itoa(len(body))
		}
		if w.Code != 201 || w.Header().Get("Content-Type") != "application/json" ||
			w.Header().Get("Content-Length") != length || body != marshalBatch(t, b)+"\n" {
			t.Fatalf("writeBatch: %d %v %q", w.Code, w.Header(), body)
		}
	}
}
