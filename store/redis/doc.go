// Package redis is the Redis store: a [dispatch.Store] that keeps all state
// in Redis, so that any number of dispatcher replicas pointed at one Redis
// (single server, Sentinel or Cluster) behave as one dispatcher.
//
// # Operations
//
// Every call is one FCALL (FCALL_RO for a read) of a function of one Redis
// Functions library (lua/*.lua, embedded; functions.go loads it where Redis
// lacks it). A function that changes state validates everything before its
// first write, since Redis does not roll back. The clock and any randomness
// come from Go as arguments; no function builds a key name, so every call
// runs unchanged on Redis Cluster.
//
// go-redis re-sends a command after a dropped connection or a read timeout,
// so a function may run twice for one call. Every mutating function is
// idempotent: a dispatch first looks up its batch id (and Idempotency-Key);
// completion and cancellation leave finished orders as they are; the calls
// whose answer a second run could not recompute (created, deleted, how many
// completed, where a reassign moved the orders) carry a random token and
// keep their answer in a key of their own, named after the token, until
// the call's deadline has passed (at most about 30 s; resend.go), and a
// deleted pool its token in gone for a minute.
//
// # Key schema
//
// All keys of pool NAME share the hash tag {pool:NAME}, so a pool lives in
// one Cluster slot: "dispatch:{pool:NAME}:" and a name. keys.go holds the
// schema as constants, each with what it holds: the pool's keys (meta,
// scales, load, elig, orders, oexp, bexp, strat, tmp, gone, lex, ring,
// iexp, lease, lapsed, ejq, lapq, journal), of which each function gets
// those it uses (functions.go declares them) in that order, a call's reply
// key call:TOKEN, and
// meta's fields (strategy, slowStart, createdAt, the layout, the free-room
// aggregates, the ring's versions, the batch refs' counter, the counters,
// the health options, and when the queues and the health indexes next
// need reading, sw and hd). The Lua names them through the library's
// preamble, made from those constants (preamble.go); TestLuaKeys and
// TestLuaMetaFields check that it uses no other, TestFunctionKeys that
// each function declares the keys its code reaches (a key it does not
// declare raises DISPATCH BUG). wait.go's WAIT mark,
// dispatch:{pool:NAME}:wait, is Go's alone.
//
//	dispatch:pools ZSET  every pool name, score 0, in byte order
//
// The pool list spans slots, so it cannot change in the same function call as the
// pool: a name is added before the pool is created and again after, and
// removed after the pool is deleted (added back if the pool was re-created
// meanwhile). Readers skip names without a pool. Deleting a pool UNLINKs its
// keys: Redis frees them in a background thread, so a pool of millions of
// orders leaves without blocking.
//
// # Records
//
// Records are short strings with fields separated by '|' (ids cannot hold
// '|' or ','), times in milliseconds since the epoch, numbers in decimal or,
// where marked, hexadecimal:
//
//	Scale  weight|state|maxOrders|baseLoad|activeSince|avgMs[|health|
//	       lastHeartbeat|ejectedUntil|ejections|failures|failWindowStart|
//	       lastFail]
//	       (state a active, d draining, x down; avgMs balancing.EWMA of the
//	       reported durations in %.17g, empty before the first; health u
//	       up, l lapsed, e ejected, as recorded, times empty for none; a
//	       record without the health fields, as earlier builds wrote, is up
//	       and never heartbeated; the orderCount is the Scale's score in
//	       elig or load, and outstanding is orderCount − baseLoad, so a
//	       dispatch leaves the record as it is)
//	order  <state><ref>[+moves]|doneAt|compId|chunk|key
//	       (state a assigned, c completed, x cancelled; ref and chunk hexadecimal;
//	       chunk the own index's chunk that holds it, by its batch's
//	       token while it has not moved (layout 8), and "." and the
//	       chunk where its batch, named by a UUID, has no token;
//	       moves how often it moved to another Scale, absent for none;
//	       doneAt empty while assigned; the key last, as it may hold '|')
//	       or, in a batch of one, which has no ref, named after its
//	       order (layout 7, batchid.go: "orderId:tag"), the batch itself
//	       <state>[+moves]|doneAt|compId|chunk|:<tag><strategy>|
//	       createdAt|firstCompId|key
//	       (createdAt hexadecimal; strategy one character, its code
//	       (preamble.go's strategyCodes); firstCompId the Scale the batch
//	       gave it, empty while the order is there), else
//	       <state>[+moves]|doneAt|compId|chunk|batchId|createdAt|key
//	batch  createdAt|expiresAt|strategy|orderId,compId,orderId,compId,…
//	ref    batchId|createdAt|orders (what a batch's orders share), or
//	       for a batch named after its first order (layout 7)
//	       :<tag><strategy>|createdAt|orders|first orderId (createdAt
//	       hexadecimal), its assignments beside it as long as the ref
//	       ("|p" and the ref): its orders' Scales and then their ids,
//	       in the same order (layout 9; the ids as the store sent them)
//	       compId,…,compId,|orderId,…,orderId
//	own    tail  tailChunk|lowChunk|prev|entry,entry,…,
//	       chunk prev|next|entry,entry,…,
//	       (hexadecimal; an entry is an order id or, for a batch named
//	       after its first order, ~ref.k, a token for its k orders on
//	       that Scale (layout 8); lua/own.lua)
//	key    batchId and the fingerprint's 8-byte hash (an Idempotency-Key)
//
// A pool's records share one hash, orders (layout 6): an order under its
// id, a batch under "|b" and its id, a ref under "|r" and the ref, a key
// under "|i" and its 12-byte hash, a named batch's assignments under
// "|p" and its ref, the own index's tails and chunks under
// "|o" and the compId (the tail) or the compId, a space and the chunk
// (keys.go). No id holds '|', so the kinds cannot meet, and a single
// order's dispatch reads its batch, key and order with one HMGET and
// writes them with its Scale's own tail in one HSET.
//
// A batch without an Idempotency-Key (layout 7) has no record of its own:
// the store names it after its first order (Store.BatchID, which the
// Service asks for the id), and the order's record, which stays at least
// the retention after the batch was made, holds what the batch's answer
// needs beyond it (tag, time, strategy, first Scale), or for a batch of
// several its ref does, with the assignments beside it. GetBatch of such
// an id reads the order (and its ref), checks the tag and rebuilds the
// record; a re-sent dispatch finds its tag and answers the batch; another
// request for the order id, with another tag, fails as EXISTS. A batch with a key, or with
// a retention shorter than a re-send's floor (resend.go), is named by a
// UUID and keeps its record and queue entry.
//
// A Scale's own index (layout 8) lists a batch of several named after its
// first order by one token per Scale, "~ref.k", not by each order's id: a
// dispatch of 100 orders over 16 Scales writes 16 short entries. Readers
// (ListScaleOrders, Reassign, DeleteScale, ticks) expand a token through
// the batch's assignments, which stay with the ref until the batch's last
// order leaves, and keep the orders whose record says they are still on
// that Scale through it (assigned there and never moved); an order that
// leaves takes one from k, and one that moves is listed by its id where it
// goes. A single order, an order that moved and a batch named by a UUID
// are listed by their ids.
//
// An outstanding order costs Redis about 117 bytes with 12-byte ids in
// batches of 1,000 (TestBytesPerOrder measures it): its hash entry with a
// record of about 15 bytes, its id and compId in the batch's assignments,
// and a share of its Scale's token. The batch id and the time, shared by
// the whole batch, live once in its ref; a batch is one string rather than
// a hash entry per order. A batch of one named after its order costs about
// 120-130: its order's hash entry (at least 24 bytes of entry, its field
// and its record in jemalloc's size classes, and a slot of the table) and
// its id in the own index; an order in batches of 10, about 137, of 100
// about 127. A batch id that is a UUID is kept in 23 characters rather than
// 36 (batchid.go).
//
// # Retention
//
// Redis 7.0 has no per-field expiry. Every record has a window and leaves
// through a queue (a LIST in the order records were made) that holds the
// records of that one window, so that its entries expire in the order they
// came: completed and cancelled orders DISPATCHER_ORDER_RETENTION after they
// finish (oexp), batches without an Idempotency-Key the retention after
// they are made (bexp; a batch named after its order leaves with the
// order, whose record it is), batches with one and their keys
// DISPATCHER_IDEMPOTENCY_TTL after (iexp). A batch record also stays as
// long as a re-sent dispatch may still run (resend.go), at most 35 s: with
// a window shorter than that its queue may hold an entry behind a later
// one for as long. Every successful mutating call removes up to 128 expired
// entries from each queue, and 128 more for every 128 orders it finishes
// (sweepFor in records.lua), so that calls remove more than they add; a call
// before meta's sw (the earliest head) reads no queue at all, and a push
// onto an empty queue drops sw (queuePush). Until
// then a record whose time has passed counts as absent for every method
// that is given the time, exactly as in store/memory. Call replies are keys
// of their own with a TTL (PX) that Redis expires by itself.
//
// # Scale health
//
// A Scale's health is recorded in its record and kept in step with the
// indexes lease, lapsed and ejq (lib.lua's healthIndex), so that a call
// finds the Scales whose health is due to change at its time by ranges of
// them, never by reading the pool; a dispatch before meta's hd reads
// nothing more, as no Scale can be due, and every change that could bring
// a Scale due sooner drops hd (lib.lua's healthIndex, a new heartbeat
// timeout). A dispatch settles the due ones before it picks, so no order goes
// to a Scale whose lease has run out even if no tick has run. A Scale that
// is not up leaves elig and lex as one that is not active does. Ticks
// (lua/tick.lua) settle at most a limit of Scales, move at most a limit of
// a lapsed Scale's oldest orders from the front of its own index, and take
// the journal's changes; each is one function call whose work is bounded by
// the limit, not by the size of the pool or of the Scale.
//
// # Failures
//
// A Redis that cannot be reached gives [dispatch.ErrUnavailable]; a dispatch
// that was sent but not answered gives a [*dispatch.IndeterminateError] with
// its batch id, since the function may have run. With Options.WaitReplicas,
// an answer whose replicas did not confirm it gives
// [dispatch.ErrNotReplicated] (wait.go, share.go). Use [NewClient] for a client
// whose timeouts and retries suit this store.
package redis
