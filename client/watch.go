package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Snapshot is a pool as one read of the service saw it: an event of
// WatchPool (openapi.yaml's Snapshot).
type Snapshot struct {
	At         time.Time `json:"at"`
	Pool       string    `json:"pool"`
	Strategy   Strategy  `json:"strategy"`
	ScaleCount int       `json:"scaleCount"`
	Counters   Counters  `json:"counters"`
	// Scales are sorted by orderCount, then compId: all of the pool's
	// Scales when Histogram is nil; else the 500 lowest, then the 500
	// highest.
	Scales    []Scale    `json:"scales"`
	Histogram *Histogram `json:"histogram,omitempty"`
}

// Counters are a pool's counts since its creation.
type Counters struct {
	Dispatched int64 `json:"dispatched"`
	Completed  int64 `json:"completed"`
	Cancelled  int64 `json:"cancelled"`
	Moved      int64 `json:"moved"`
	Failed     int64 `json:"failed"`
}

// Histogram counts every Scale of a pool by orderCount: Counts[i] those
// with Min + i·Width <= orderCount < Min + (i+1)·Width.
type Histogram struct {
	Min    int64   `json:"min"`
	Width  int64   `json:"width"`
	Counts []int64 `json:"counts"`
}

// WatchOptions tunes WatchPool; nil takes the defaults.
type WatchOptions struct {
	// Interval is the least time between two snapshots, 250 ms to 1 min
	// (whole milliseconds); zero takes the service's default, 1 s.
	Interval time.Duration
}

// WatchPool yields the pool's snapshots as the service sends them (the
// first at once, then at most one per interval) until ctx is done, the
// stream ends or an error comes. A problem the service sends within the
// stream (the store did not answer) is yielded as an *Error and the stream
// goes on; the loop may stop or continue. The stream ends after a deleted
// pool's ErrPoolNotFound, and when the service shuts down (yielded as an
// error: open the watch again, on another replica). Opening it is not
// retried: ErrPoolNotFound, ErrOutOfRange, and 503 too-many-watchers come
// as the first error.
func (c *Client) WatchPool(ctx context.Context, pool string, opts *WatchOptions) iter.Seq2[Snapshot, error] {
	return func(yield func(Snapshot, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		res, err := c.openWatch(ctx, pool, opts)
		if err != nil {
			yield(Snapshot{}, err)
			return
		}
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		var name string
		var data []byte
		for sc.Scan() {
			line := sc.Bytes()
			switch {
			case len(line) == 0:
				if name == "" {
					continue
				}
				snap, err := decodeEvent(name, data, res.Header)
				name, data = "", nil
				if snap == nil && err == nil {
					continue // an event this client does not know
				}
				if snap != nil && !yield(*snap, nil) || err != nil && !yield(Snapshot{}, err) {
					return
				}
			case bytes.HasPrefix(line, []byte("event:")):
				name = strings.TrimSpace(string(line[len("event:"):]))
			case bytes.HasPrefix(line, []byte("data:")):
				data = append(data, bytes.TrimPrefix(line[len("data:"):], []byte(" "))...)
			}
		}
		if ctx.Err() != nil {
			return
		}
		err = sc.Err()
		if err == nil {
			err = io.EOF
		}
		yield(Snapshot{}, fmt.Errorf("client: the watch of %s ended: %w", pool, err))
	}
}

// openWatch sends the GET of the stream and returns the response of a 200;
// any other answer is an *Error.
func (c *Client) openWatch(ctx context.Context, pool string, opts *WatchOptions) (*http.Response, error) {
	u := *c.base
	u.Path += poolPath(pool, "watch")
	u.RawPath = ""
	if opts != nil && opts.Interval != 0 {
		u.RawQuery = url.Values{"intervalMs": {strconv.FormatInt(opts.Interval.Milliseconds(), 10)}}.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	req.Header.Set("Accept", "text/event-stream, application/problem+json")
	req.Header.Set("User-Agent", c.userAgent)
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if res.StatusCode == http.StatusOK {
		return res, nil
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	var p *Problem
	if strings.HasPrefix(res.Header.Get("Content-Type"), "application/problem+json") {
		p = new(Problem)
		if json.Unmarshal(body, p) != nil {
			p = nil
		}
	}
	return nil, newError(res.StatusCode, res.Header, body, p)
}

// decodeEvent reads a snapshot or a problem event; nil, nil for another.
func decodeEvent(name string, data []byte, h http.Header) (*Snapshot, error) {
	switch name {
	case "snapshot":
		var s Snapshot
		if err := json.Unmarshal(data, &s); err != nil {
			return nil, fmt.Errorf("client: decoding a snapshot: %w", err)
		}
		return &s, nil
	case "problem":
		var p Problem
		if err := json.Unmarshal(data, &p); err != nil {
			return nil, fmt.Errorf("client: decoding a problem event: %w", err)
		}
		return nil, newError(p.Status, h, data, &p)
	}
	return nil, nil
}
