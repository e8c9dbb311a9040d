package redis_test

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dispatcher/dispatcher/balancing"
	"github.com/dispatcher/dispatcher/store/redis/redistest"
)

// luaStrategiesTail lists pickers.lua's STRATEGIES as "name cost state how"
// lines, how being plan or pick (both, or none, shows as such).
const luaStrategiesTail = `
local out = {}
for name, s in pairs(STRATEGIES) do
  local how = (s.plan and 'plan' or '') .. (s.pick and 'pick' or '')
  out[#out + 1] = name .. ' ' .. tostring(s.cost) .. ' ' .. tostring(s.state ~= nil) .. ' ' .. how
end
return out
`

// TestLuaStrategiesMatchRegistry runs lua/pickers.lua in Redis and asks it
// for its table of strategies: the same names as balancing's registry,
// each with the registry's cost class, a state shape exactly for the
// stateful ones, and a plan of the whole batch exactly for Levels (a pick
// for the others). The files before pickers.lua in the library give it
// three names when it loads, waterfill.lua's wfAssign, wfOnePick and
// wfOneTake, stubbed here.
func TestLuaStrategiesMatchRegistry(t *testing.T) {
	src, err := os.ReadFile("lua/pickers.lua")
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(t, redistest.Start(t))
	script := "local wfAssign = function() end\nlocal wfOnePick, wfOneTake = wfAssign, wfAssign\n" + string(src) + luaStrategiesTail
	v, err := c.Eval(context.Background(), script, nil).StringSlice()
	if err != nil {
		t.Fatalf("running pickers.lua: %v", err)
	}
	var want []string
	for _, s := range balancing.Strategies() {
		how := "pick"
		if s.Kind == balancing.Levels {
			how = "plan"
		}
		want = append(want, strings.Join([]string{s.Name, s.Cost.String(), strconv.FormatBool(s.Stateful), how}, " "))
	}
	slices.Sort(v)
	slices.Sort(want)
	if !slices.Equal(v, want) {
		t.Errorf("Lua's STRATEGIES (name cost stateful how):\n%s\nwant, from balancing's registry:\n%s",
			strings.Join(v, "\n"), strings.Join(want, "\n"))
	}
}
