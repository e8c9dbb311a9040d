package api

import (
	"net/http"
	"sync/atomic"
	"time"
)

// net/http gives an answer without a Date its own, formatted on every
// answer by time.Time.AppendFormat with http.TimeFormat, a layout it reads
// again each time: about 1,900 instructions of a replica's ~100k per
// single-order request (issue 21). writeBatch sets Date itself from the
// value of the current second, made once a second; net/http then adds none
// (its header.has("Date")). The header goes through Header.writeSubset like
// the others, which costs about a third of that.

// dateOfSecond is the Date header's value for one second.
type dateOfSecond struct {
	unix  int64
	value []string // shared read-only by the answers of that second
}

var lastDate atomic.Pointer[dateOfSecond]

// dateHeader returns the Date header's value for now (http.TimeFormat, in
// UTC), from the value of now's second when it was made already.
func dateHeader(now time.Time) []string {
	unix := now.Unix()
	if d := lastDate.Load(); d != nil && d.unix == unix {
		return d.value
	}
	d := &dateOfSecond{unix: unix, value: []string{now.UTC().Format(http.TimeFormat)}}
	lastDate.Store(d)
	return d.value
}
