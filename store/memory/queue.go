package memory

// The outstanding orders of a Scale in order of arrival: a queue of the
// orders as they came, from which orders that left (completed, cancelled,
// moved) are dropped lazily, so that taking the oldest n orders of a
// Scale that holds a million costs O(n), not a sort of the million.

// queued is an order as it entered a Scale's queue: it is still there
// while the order's seq is the same.
type queued struct {
	o   *order
	seq uint64
}

// push takes an order onto the Scale: its seq is the pool's next.
func (p *pool) push(sc *scale, o *order) {
	p.seq++
	o.seq = p.seq
	o.CompID = sc.CompID
	sc.assigned[o.ID] = o
	sc.Outstanding++
	sc.queue = append(sc.queue, queued{o: o, seq: o.seq})
}

// unlink takes an assigned order off the Scale; its queue entry goes stale.
func (sc *scale) unlink(o *order) {
	delete(sc.assigned, o.ID)
	sc.Outstanding--
	sc.stale++
	for len(sc.queue) > 0 && !sc.holds(sc.queue[0]) {
		sc.queue = sc.queue[1:]
		sc.stale--
	}
	if sc.stale > 64 && sc.stale > len(sc.queue)/2 {
		sc.compact()
	}
}

func (sc *scale) holds(q queued) bool {
	return q.o.seq == q.seq && sc.assigned[q.o.ID] == q.o
}

// compact drops the stale entries of the queue.
func (sc *scale) compact() {
	live := make([]queued, 0, sc.Outstanding)
	for _, q := range sc.queue {
		if sc.holds(q) {
			live = append(live, q)
		}
	}
	sc.queue, sc.stale = live, 0
}

// oldest returns the Scale's first n outstanding orders (all if n < 0),
// oldest first. It changes nothing: readers call it too.
func (sc *scale) oldest(n int) []*order {
	if n < 0 || n > int(sc.Outstanding) {
		n = int(sc.Outstanding)
	}
	out := make([]*order, 0, n)
	for _, q := range sc.queue {
		if len(out) == n {
			break
		}
		if sc.holds(q) {
			out = append(out, q.o)
		}
	}
	return out
}
