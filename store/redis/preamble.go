package redis

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dispatcher/dispatcher/balancing"
	"github.com/dispatcher/dispatcher/dispatch"
)

// The constants the Lua shares with Go (these and others: layout,
// randDigits, maxResend, dispatch's limits). The library's preamble defines
// each for the Lua from its Go value, so the Lua never restates one.
const (
	// sweepBatch is how many expired records one call removes from each
	// retention queue (records.lua's sweep, doc.go's Retention).
	sweepBatch = 128
)

// preamble is the start of the library, made from Go at init: the
// constants the Lua shares with Go, the binding of each function's keys
// (BIND, from its keys) and the functions' argument positions (each function's args,
// a table per function named after it in capitals: A[FINISH.now]). Each
// is a local of the library's chunk, which its functions keep as upvalues:
// a constant costs a call no more than a literal did, an argument's
// position one table lookup.
func preamble(fns []*function) string {
	var b luaWriter
	b.line("-- The preamble, made by store/redis/preamble.go from Go's constants.")
	b.str("LAYOUT", layout)
	b.str("BFIELD", fieldBatch)
	b.str("RFIELD", fieldRef)
	b.str("PFIELD", fieldPairs)
	b.str("IFIELD", fieldIdem)
	b.str("OFIELD", fieldOwn)
	b.num("SWEEP", sweepBatch)
	b.num("CALLMS", maxResend.Milliseconds())
	b.num("MAXCOUNT", dispatch.MaxOrderCount)
	b.num("RANDDIGITS", randDigits)
	b.num("VNODES", balancing.DefaultVNodes)
	b.num("TAGLEN", tagLen)
	b.num("IDEMKEYLEN", idemKeyBytes)
	codes := strategyCodes()
	b.table("STRATCODE", true, codes)
	for i := 0; i < len(codes); i += 2 {
		codes[i], codes[i+1] = codes[i+1], codes[i]
	}
	b.table("STRATNAME", true, codes)
	b.str("DEFAULTSTRATEGY", string(dispatch.DefaultStrategy))
	b.str("HASHED", hashedStrategy())
	b.table("RANDOM", false, randomTable())
	b.num("FAILWINDOW", dispatch.DefaultFailWindow.Milliseconds())
	b.num("EJECTTIME", dispatch.DefaultEjectTime.Milliseconds())
	b.num("EJECTFACTOR", dispatch.MaxEjectionFactor)
	b.num("JOURNAL", dispatch.MaxJournal)
	b.table("COUNTERS", true, []string{"dispatched", metaDispatched, "completed", metaCompleted,
		"cancelled", metaCancelled, "moved", metaMoved, "failed", metaFailed})
	b.list("POOLFIELDS", poolFields)
	b.table("STATENAMES", true, []string{codeOfState[dispatch.Active], string(dispatch.Active),
		codeOfState[dispatch.Draining], string(dispatch.Draining), codeOfState[dispatch.Down], string(dispatch.Down)})
	b.line("")
	b.line("-- keyTable is the table K of function fn: its K.<name> of a key fn")
	b.line("-- does not declare raises DISPATCH BUG. Made at fn's first call, as")
	b.line("-- loading a library offers no setmetatable.")
	b.line("local function keyTable(fn)")
	b.line("  return setmetatable({}, {__index = function(_, name)")
	b.line("    error({err = 'DISPATCH BUG ' .. fn .. ' reads K.' .. tostring(name) ..")
	b.line("      ', a key functions.go does not declare for it'})")
	b.line("  end})")
	b.line("end")

	b.line("")
	b.line("-- K names the keys of the function being run: BIND[name] binds it, at")
	b.line("-- the function's entry (functions.lua), to the keys functions.go declares")
	b.line("-- for it, in that order; K.<name> of a key it does not declare raises.")
	b.line("-- A pool's keys are its prefix and fixed names (keys.go), so the first")
	b.line("-- names them all: they are bound again only when it changes (a call of")
	b.line("-- another pool), the call's key (a token's) at every call.")
	b.line("local K")
	b.line("local BIND = {}")
	for _, fn := range fns {
		b.line("do")
		b.line("  local k, k1")
		b.line(fmt.Sprintf("  BIND[%s] = function(keys)", luaQuote(fn.name)))
		b.line(fmt.Sprintf("    k = k or keyTable(%s)", luaQuote(fn.name)))
		b.line("    if keys[1] ~= k1 then")
		b.line("      k1 = keys[1]")
		for i, key := range fn.keys {
			if key != keyCall {
				b.line(fmt.Sprintf("      k.%s = keys[%d]", key, i+1))
			}
		}
		b.line("    end")
		for i, key := range fn.keys {
			if key == keyCall { // a call without a token passes none
				b.line(fmt.Sprintf("    k.%s = keys[%d] or false", key, i+1))
			}
		}
		b.line("    K = k")
		b.line("  end")
		b.line("end")
	}

	b.line("")
	b.line("-- The functions' arguments: A[NAME.arg] (functions.go).")
	for _, fn := range fns {
		if len(fn.args) == 0 {
			continue
		}
		kv := make([]string, 0, 2*len(fn.args))
		for i, a := range fn.args {
			kv = append(kv, a, strconv.Itoa(i+1))
		}
		b.table(strings.ToUpper(fn.name), false, kv)
	}
	return b.String()
}

// hashedStrategy returns the name of the strategy of balancing's registry
// that keeps a consistent-hash ring (ring.lua keeps one per pool). It
// panics unless there is exactly one.
func hashedStrategy() string {
	name := ""
	for _, s := range balancing.Strategies() {
		if s.Kind == balancing.Hashed {
			if name != "" {
				panic("redis: ring.lua keeps one ring, and two strategies are of kind Hashed")
			}
			name = s.Name
		}
	}
	if name == "" {
		panic("redis: no strategy of kind Hashed for ring.lua")
	}
	return name
}

// randomTable is the Lua table RANDOM: true for each strategy that draws
// random numbers (balancing.Strategy.Random), by name.
func randomTable() []string {
	var kv []string
	for _, st := range balancing.Strategies() {
		if st.Random {
			kv = append(kv, st.Name, "true")
		}
	}
	return kv
}

// strategyCodes returns, for each strategy of balancing's registry, its
// name and the one character that a named batch's record keeps of it
// (records.lua): 'a' for the first, and so on in the registry's order.
// Records outlive a build, so a new strategy goes at the end of the
// registry (TestStrategyCodes holds the codes of the strategies there are).
func strategyCodes() []string {
	var kv []string
	for i, st := range balancing.Strategies() {
		kv = append(kv, st.Name, string(rune('a'+i)))
	}
	return kv
}

// luaWriter writes Lua definitions.
type luaWriter struct{ strings.Builder }

func (w *luaWriter) line(s string) { w.WriteString(s + "\n") }

func (w *luaWriter) num(name string, v int64) {
	w.line(fmt.Sprintf("local %s = %d", name, v))
}

func (w *luaWriter) str(name, v string) { w.line(fmt.Sprintf("local %s = %s", name, luaQuote(v))) }

// table defines a table of string keys whose values are strings (quote)
// or Lua expressions: kv is a flat list of keys and values.
func (w *luaWriter) table(name string, quote bool, kv []string) {
	parts := make([]string, 0, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		v := kv[i+1]
		if quote {
			v = luaQuote(v)
		}
		parts = append(parts, "["+luaQuote(kv[i])+"] = "+v)
	}
	w.line("local " + name + " = {" + strings.Join(parts, ", ") + "}")
}

// list defines a list of strings.
func (w *luaWriter) list(name string, vs []string) {
	q := make([]string, len(vs))
	for i, s := range vs {
		q[i] = luaQuote(s)
	}
	w.line("local " + name + " = {" + strings.Join(q, ", ") + "}")
}

// luaQuote quotes s as a Lua string; the constants hold no quote or
// backslash.
func luaQuote(s string) string {
	if strings.ContainsAny(s, "'\\\n") {
		panic("redis: a Lua constant with a quote: " + s)
	}
	return "'" + s + "'"
}
