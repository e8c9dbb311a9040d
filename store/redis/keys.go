package redis

// The key schema. All keys of pool NAME share the hash tag {pool:NAME}, so
// that a pool lives in one Cluster slot: each is "dispatch:{pool:NAME}:"
// and one of the names below. Every function call gets the keys its
// function declares (functions.go, in poolKeys order), and a call with a
// token its call key after them (callToken); the Lua names them K.<name>
// (BIND, which the library's preamble makes from the declarations,
// preamble.go). TestLuaKeys checks that the Lua uses no other key and no
// meta field but those below, TestFunctionKeys that each function
// declares the keys it uses.
const (
	// keyMeta HASH: the pool's own fields, the meta* constants; its
	// existence is the pool's.
	keyMeta = "meta"
	// keyScales HASH: compId → Scale record (doc.go, Records).
	keyScales = "scales"
	// keyLoad ZSET: compId → orderCount, the Scales that are not eligible.
	keyLoad = "load"
	// keyElig ZSET: compId → orderCount, the eligible Scales: sorted, it is
	// the waterfill's compIdArr. Each Scale is in one of elig and load, so
	// a dispatch updates one sorted set, and ListScales merges the two.
	keyElig = "elig"
	// keyOrders HASH: the pool's records (layout 6), so that a single
	// order's lookups are one HMGET and its writes one HSET: orderId →
	// order record, and in fields that begin with '|' (no id holds it)
	// fieldBatch+batchId → batch record, fieldRef+ref → "batchId|createdAt
	// ms|orders", what the orders of a batch of several share, kept while
	// any of them is stored (meta's metaBatchRef numbers the refs; the
	// order of a batch of one holds the batch id and createdAt itself, or
	// the batch whole if it is named after the order, layout 7); a batch
	// of several named after its first order (layout 7, batchid.go) has no
	// batch record: its ref is ":<tag><strategy code>|createdAt ms in
	// hexadecimal|orders|first orderId", and fieldPairs+ref →
	// "compId,…,compId,|orderId,…,orderId" its assignments as first
	// answered, its orders' Scales and then their ids, in the same order
	// (layout 9), kept with the ref, until its last order leaves (the own
	// index's tokens read them, layout 8), and fieldIdem+the first 12 bytes of the SHA-256 of an
	// Idempotency-Key → batchId and the first 8 bytes of the SHA-256 of
	// the request's fingerprint (idem.go), held while the batch it names
	// is; and the own index, each Scale's assigned orders, oldest first,
	// in chunks (for DeleteScale with force, Reassign and
	// ListScaleOrders): fieldOwn+compId → "tailChunk|lowChunk|prev|e,e,…,"
	// the tail, fieldOwn+"compId chunk" → "prev|next|e,e,…," the sealed
	// chunks below it, linked through the chunks before and after that
	// hold orders ('' for the next number); an entry e is an order id or,
	// for a batch named after its first order, one token "~ref.k" per
	// Scale for its k orders there (layout 8); a tail of 256 bytes of
	// entries is sealed before the next id joins it, and one of 256 bytes
	// with its header before the next token joins it (lua/own.lua).
	keyOrders = "orders"
	// keyOexp LIST: "expiresMs|orderId", orders as they complete or cancel.
	keyOexp = "oexp"
	// keyBexp LIST: "expiresMs|batchId", batches without an
	// Idempotency-Key as they are recorded, but those named after their
	// order, which leave with it (batchid.go).
	keyBexp = "bexp"
	// keyStrat HASH: the strategy's state, deleted when the strategy
	// changes: last (round-robin, weighted-response-time), c
	// (weighted-round-robin), compId → current weight
	// (smooth-weighted-round-robin, least-connections).
	keyStrat = "strat"
	// keyTmp ZSET: scratch of a dry run, deleted before its call ends.
	keyTmp = "tmp"
	// keyGone STRING: the token of the call that deleted the pool, for a
	// minute.
	keyGone = "gone"
	// keyLex ZSET: compId → 0, the eligible Scales in compId order, for
	// the strategies that pick by rank or by name.
	keyLex = "lex"
	// keyRing ZSET: "compId#j" → point, the consistent-hash ring of every
	// registered Scale (j < balancing.DefaultVNodes), kept while that is
	// the strategy (lua/ring.lua), and built in steps before a switch to
	// it (lua/ring_build.lua).
	keyRing = "ring"
	// keyIexp LIST: "expiresMs|" and a key's 12-byte hash, the
	// Idempotency-Keys (and so their batches) as they are recorded.
	keyIexp = "iexp"
	// keyLease ZSET: compId → lastHeartbeat ms, the Scales not recorded
	// lapsed: those whose lease has run out are a range of it
	// (lua/health.lua).
	keyLease = "lease"
	// keyLapsed ZSET: compId → lastHeartbeat ms, the Scales recorded
	// lapsed.
	keyLapsed = "lapsed"
	// keyEjq ZSET: compId → ejectedUntil ms, the Scales recorded ejected.
	keyEjq = "ejq"
	// keyLapq ZSET: compId → 0, the lapsed Scales that hold orders, which
	// ticks move with onLapse reassign (lua/tick.lua).
	keyLapq = "lapq"
	// keyJournal LIST: "compId|from|to|atMs", the health changes no tick
	// has taken yet, oldest first, at most dispatch.MaxJournal.
	keyJournal = "journal"
	// keyCall STRING, "call:TOKEN": the answer of the call of that token,
	// until the call's deadline (resend.go); the last key of the calls
	// that keep one (callToken), K.call in the Lua.
	keyCall = "call"
)

// poolKeys are a pool's keys, in the order a function gets those it
// declares.
var poolKeys = []string{
	keyMeta, keyScales, keyLoad, keyElig, keyOrders,
	keyOexp, keyBexp, keyStrat, keyTmp, keyGone, keyLex, keyRing, keyIexp,
	keyLease, keyLapsed, keyEjq, keyLapq, keyJournal,
}

// The fields of a pool's meta.
const (
	metaStrategy  = "s"  // the strategy's name
	metaSlowStart = "ss" // slowStart ms
	metaCreated   = "c"  // createdAt ms
	// metaLayout is the layout of the pool's keys and records (layout).
	metaLayout = "lv"
	// metaUnlimited counts the eligible Scales without maxOrders.
	metaUnlimited = "u"
	// metaRoom is Σ(maxOrders − orderCount) of the other eligible Scales.
	metaRoom = "r"
	// metaScalesVersion is the version of the set of Scales: one more at
	// each registration or deletion, for lua/ring_build.lua.
	metaScalesVersion = "sv"
	// metaRingVersion is the metaScalesVersion a ring built in steps
	// (lua/ring_build.lua) began at.
	metaRingVersion = "rv"
	// metaBatchRef numbers the batches' refs (keyOrders' fieldRef): the
	// last one given.
	metaBatchRef = "bn"
	// The pool's counters since its creation (dispatch.Counters), which
	// the call that makes a change raises by how much it changed: orders
	// dispatched, completed, cancelled, moved, and failure reports counted.
	metaDispatched = "n.d"
	metaCompleted  = "n.c"
	metaCancelled  = "n.x"
	metaMoved      = "n.m"
	metaFailed     = "n.f"
	// The pool's health options (lua/health.lua): heartbeatTimeout ms,
	// leasesSince ms, onLapse, maxFails, failWindow ms, ejectTime ms; and
	// the changes the journal dropped since a tick took them.
	metaHeartbeatTimeout = "ht"
	metaLeasesSince      = "ls"
	metaOnLapse          = "ol"
	metaMaxFails         = "mf"
	metaFailWindow       = "fw"
	metaEjectTime        = "et"
	metaJournalDropped   = "jd"
	// metaSweepAt is the earliest time (ms) of the heads of keyOexp,
	// keyBexp and keyIexp (absent: unknown; 2^53 − 1: all empty), so that
	// a call reads the queues only once one of them has passed
	// (records.lua's sweepDue); a push onto an empty queue drops it.
	metaSweepAt = "sw"
	// metaHealthDue is the time (ms) before which no lease runs out and no
	// ejection ends (absent: unknown), followed by "r" while a Scale is
	// recorded lapsed (lua/health.lua's settleCached); every change that
	// could bring a Scale due sooner drops it.
	metaHealthDue = "hd"
)

// metaFields are every field of meta (earlier builds also kept rc, the
// call ring, which no build reads now).
var metaFields = []string{
	metaStrategy, metaSlowStart, metaCreated, metaLayout, metaUnlimited, metaRoom,
	metaScalesVersion, metaRingVersion, metaBatchRef,
	metaDispatched, metaCompleted, metaCancelled, metaMoved, metaFailed,
	metaHeartbeatTimeout, metaLeasesSince, metaOnLapse, metaMaxFails, metaFailWindow,
	metaEjectTime, metaJournalDropped, metaSweepAt, metaHealthDue,
}

// poolFields are the fields of meta that a Pool shows, as lua/read.lua and
// lua/pool_put.lua read them too (POOLFIELDS): strategy, slowStart,
// createdAt, then the health options.
var poolFields = []string{
	metaStrategy, metaSlowStart, metaCreated,
	metaHeartbeatTimeout, metaLeasesSince, metaOnLapse, metaMaxFails, metaFailWindow, metaEjectTime,
}

// layout is the layout of a pool's keys and records (doc.go) that this
// build reads and writes, in meta's metaLayout. Pools of earlier layouts
// have another or none: a dispatch refuses them (the other calls fail on
// their records), see docs/operations.md, Upgrades.
const layout = "9"

// poolPrefix is what every key of pool begins with.
func poolPrefix(pool string) string { return "dispatch:{pool:" + pool + "}:" }

// callKey is the key under which a function keeps the reply of call token
// tok in pool (callToken).
func callKey(pool, tok string) string { return poolPrefix(pool) + keyCall + ":" + tok }

// The prefixes of keyOrders' fields other than orders (lib.lua's BFIELD,
// RFIELD, PFIELD, IFIELD, own.lua's OFIELD).
const (
	fieldBatch = "|b"
	fieldRef   = "|r"
	fieldPairs = "|p"
	fieldIdem  = "|i"
	fieldOwn   = "|o"
)

// metaKey is the pool's record, whose existence is the pool's.
func metaKey(pool string) string { return poolPrefix(pool) + keyMeta }
