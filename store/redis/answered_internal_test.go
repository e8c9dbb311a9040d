package redis

import (
	"go/ast"
	"go/parser"
	gotoken "go/token"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// talksToRedis lists the functions of the package that use the Store's
// client (s.c) and why each is allowed to: every other answer of the Store
// reaches Redis through them, so that with Options.WaitReplicas no answer
// rests on a reply that answered (wait.go) did not confirm.
var talksToRedis = map[string]string{
	"send":                 "a function call, through answered",
	"loadLibrary":          "FUNCTION LOAD: shows no state",
	"Ping":                 "PING: shows no state",
	"confirm":              "the WAIT itself",
	"PutPool":              "the pool list: listCmd, confirm",
	"ListPools":            "the pool list: listCmd",
	"readPools":            "the pools' records: confirm",
	"DeletePool":           "the pool list: listCmd (EXISTS only decides whether to add the name again)",
	"OutstandingCollector": "the metrics' collector: an operator's gauge, not an answer (docs/durability.md)",
}

// TestEveryAnswerConfirmed fails when a function that talks to Redis is
// not among talksToRedis: a method that calls a function through call or
// callToken gets the WAIT without a line of its own; one that
// uses the client another way must pass its reply through answered (or
// confirm) and be listed here.
func TestEveryAnswerConfirmed(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	fset := gotoken.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil || fn.Recv == nil || len(fn.Recv.List[0].Names) == 0 {
				continue
			}
			recv := fn.Recv.List[0].Names[0].Name
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "c" {
					return true
				}
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == recv && isStore(fn) {
					found[fn.Name.Name] = true
					if _, ok := talksToRedis[fn.Name.Name]; !ok {
						t.Errorf("%s: %s uses the Store's client directly: pass its reply through answered "+
							"(or call a function through call or callToken) and list it in talksToRedis",
							fset.Position(sel.Pos()), fn.Name.Name)
					}
				}
				return true
			})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(talksToRedis)) {
		if !found[name] {
			t.Errorf("talksToRedis lists %s, which does not use the Store's client: remove it", name)
		}
	}
}

// isStore reports whether fn is a method of *Store.
func isStore(fn *ast.FuncDecl) bool {
	star, ok := fn.Recv.List[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	id, ok := star.X.(*ast.Ident)
	return ok && id.Name == "Store"
}
