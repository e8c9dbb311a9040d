package balancing

import "maps"

// LeastConnections is the strategy least-connections, as nginx's least_conn
// (ngx_http_upstream_get_least_conn_peer) and HAProxy's leastconn: the pick
// is the Scale with the lowest Count/Weight, compared by cross-multiplication.
// When several Scales share that lowest ratio, smooth weighted round robin
// runs over just the tied Scales: each adds its weight to its current weight,
// the highest current weight wins (ties: the first in compId order) and the
// winner gives back the tied Scales' total weight. A single lowest Scale wins
// outright and no current weight changes, as in nginx.
//
// The current weights are kept like SmoothWeightedRoundRobin's: a Scale
// entering the eligible set starts at 0, one leaving it is forgotten. A pick
// costs O(n).
type LeastConnections struct {
	// Current maps compId to current weight. A missing entry is 0.
	Current map[string]int64
}

var _ Picker = (*LeastConnections)(nil)

// Pick returns the candidate with the lowest Count/Weight, breaking ties by
// smooth weighted round robin over the tied candidates.
func (p *LeastConnections) Pick(cands []Candidate, _, _ uint64) int {
	best, many := 0, false
	for i := 1; i < len(cands); i++ {
		switch {
		case lessLoaded(cands[i], cands[best]):
			best, many = i, false
		case !lessLoaded(cands[best], cands[i]):
			many = true
		}
	}
	forgetGone(p.Current, cands)
	if !many {
		return best
	}
	if p.Current == nil {
		p.Current = make(map[string]int64)
	}
	// best is the first of the tied candidates, so the scan starts there.
	win, total := -1, int64(0)
	var winCur int64
	for i := best; i < len(cands); i++ {
		c := cands[i]
		if lessLoaded(cands[best], c) {
			continue
		}
		cur := p.Current[c.ID] + c.Weight
		p.Current[c.ID] = cur
		total += c.Weight
		if win < 0 || cur > winCur {
			win, winCur = i, cur
		}
	}
	p.Current[cands[win].ID] = winCur - total
	return win
}

// forgetGone deletes the entries of current whose Scale is not among cands
// (sorted by ID). It costs O(n) map look-ups, and a deletion pass only when
// some entry is gone.
func forgetGone(current map[string]int64, cands []Candidate) {
	if len(current) == 0 {
		return
	}
	present := 0
	for _, c := range cands {
		if _, ok := current[c.ID]; ok {
			present++
		}
	}
	if len(current) > present {
		forget(current, cands)
	}
}

func (p *LeastConnections) clone() Picker {
	return &LeastConnections{Current: maps.Clone(p.Current)}
}
