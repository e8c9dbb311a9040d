package e2e_test

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	dispatcher "github.com/dispatcher/dispatcher"
	"github.com/dispatcher/dispatcher/client"
)

// clientTypes maps every schema of openapi.yaml to its client type. A
// schema added to the spec fails TestClientFollowsSpec until it is here,
// with a type of the same name in the client.
var clientTypes = map[string]any{
	"Id":               "", // a string
	"Timestamp":        time.Time{},
	"Strategy":         client.Strategy(""),
	"ScaleState":       client.ScaleState(""),
	"OrderState":       client.OrderState(""),
	"ScaleHealth":      client.ScaleHealth(""),
	"OnLapse":          client.OnLapse(""),
	"HeartbeatInput":   client.HeartbeatInput{},
	"FailInput":        client.FailInput{},
	"PoolInput":        client.PoolInput{},
	"Pool":             client.Pool{},
	"PoolList":         client.PoolList{},
	"ScaleInput":       client.ScaleInput{},
	"Scale":            client.Scale{},
	"ScaleList":        client.ScaleList{},
	"OrderList":        client.OrderList{},
	"Reassignment":     client.Reassignment{},
	"OrderInput":       client.OrderInput{},
	"BatchInput":       client.BatchInput{},
	"Assignment":       client.Assignment{},
	"Batch":            client.Batch{},
	"BatchPreview":     client.BatchPreview{},
	"Order":            client.Order{},
	"CompleteInput":    client.CompleteInput{},
	"CancelInput":      client.CancelInput{},
	"CompletionsInput": client.CompletionsInput{},
	"Completed":        client.Completed{},
	"Table":            client.Table{},
	"Health":           client.Health{},
	"Problem":          client.Problem{},
	"Snapshot":         client.Snapshot{},
}

// enumTypes names the client type whose constants must cover each enum
// schema.
var enumTypes = map[string]string{"Strategy": "Strategy", "ScaleState": "ScaleState", "OrderState": "OrderState", "ScaleHealth": "ScaleHealth", "OnLapse": "OnLapse"}

// TestClientFollowsSpec keeps the client in step with openapi.yaml: every
// schema has a client type whose fields are exactly its properties (by
// JSON name, of a matching kind), every enum value a constant, every
// problem type a ProblemType constant, and every operation a method of
// Client named after its operationId that takes a context.Context first
// (and, for a paged list, returns an iterator).
func TestClientFollowsSpec(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(dispatcher.OpenAPI)
	if err != nil {
		t.Fatalf("loading openapi.yaml: %v", err)
	}
	consts := clientConstants(t)

	for name, ref := range doc.Components.Schemas {
		v, ok := clientTypes[name]
		if !ok {
			t.Errorf("schema %s has no client type: add one to the client and to clientTypes", name)
			continue
		}
		s := ref.Value
		if goType := reflect.TypeOf(v); goType.Kind() == reflect.Struct && goType.PkgPath() != "time" {
			if goType.Name() != name {
				t.Errorf("schema %s maps to client.%s: want the same name", name, goType.Name())
			}
			checkObject(t, name, s, goType)
		}
		if typ, ok := enumTypes[name]; ok {
			for _, e := range s.Enum {
				if !slices.Contains(consts[typ], e.(string)) {
					t.Errorf("schema %s: value %q has no client.%s constant", name, e, typ)
				}
			}
		}
	}
	problems, _ := doc.Components.Schemas["Problem"].Value.Extensions["x-problem-types"].(map[string]any)
	if len(problems) == 0 {
		t.Fatal("openapi.yaml: Problem has no x-problem-types")
	}
	for slug := range problems {
		if !slices.Contains(consts["ProblemType"], slug) {
			t.Errorf("problem type %q has no client.ProblemType constant", slug)
		}
	}

	ctxType := reflect.TypeOf((*context.Context)(nil)).Elem()
	cl := reflect.TypeOf(&client.Client{})
	ops := 0
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			ops++
			name := strings.ToUpper(op.OperationID[:1]) + op.OperationID[1:]
			m, ok := cl.MethodByName(name)
			if !ok {
				t.Errorf("%s %s (%s) has no method client.Client.%s", method, path, op.OperationID, name)
				continue
			}
			if m.Type.NumIn() < 2 || m.Type.In(1) != ctxType {
				t.Errorf("client.Client.%s does not take a context.Context first", name)
			}
			paged := false
			for _, p := range op.Parameters {
				paged = paged || p.Value.Name == "cursor"
			}
			if ret := m.Type.Out(0).String(); paged && !strings.HasPrefix(ret, "iter.Seq2[") {
				t.Errorf("client.Client.%s returns %s; a paged list returns an iter.Seq2", name, ret)
			}
		}
	}
	if ops < 21 {
		t.Fatalf("found %d operations in openapi.yaml, want at least the 21 of v1", ops)
	}
}

// checkObject checks that goType has exactly the properties of the object
// schema s, recursing into inline objects (such as array items).
func checkObject(t *testing.T, where string, s *openapi3.Schema, goType reflect.Type) {
	t.Helper()
	fields := map[string]reflect.StructField{}
	for i := range goType.NumField() {
		f := goType.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "" || tag == "-" {
			t.Errorf("%s: field %s.%s has no JSON name", where, goType.Name(), f.Name)
			continue
		}
		fields[tag] = f
		if _, ok := s.Properties[tag]; !ok {
			t.Errorf("%s: field %s.%s (%q) is not a property of the schema", where, goType.Name(), f.Name, tag)
		}
	}
	for prop, ref := range s.Properties {
		f, ok := fields[prop]
		if !ok {
			t.Errorf("%s: property %q has no field in client.%s", where, prop, goType.Name())
			continue
		}
		ps := ref.Value
		if len(ps.AllOf) == 1 && ps.Type == nil {
			ps = ps.AllOf[0].Value
		}
		checkKind(t, where+"."+prop, ref.Ref, ps, f.Type)
	}
}

// checkKind checks that a field of type ft can hold the values of schema s
// (reached through ref when it is not inline).
func checkKind(t *testing.T, where, ref string, s *openapi3.Schema, ft reflect.Type) {
	t.Helper()
	for ft.Kind() == reflect.Pointer {
		ft = ft.Elem()
	}
	want := map[string][]reflect.Kind{
		"string":  {reflect.String},
		"integer": {reflect.Int64, reflect.Int},
		"boolean": {reflect.Bool},
		"array":   {reflect.Slice},
		"object":  {reflect.Struct},
	}
	switch {
	case s.Type.Is("string") && s.Format == "date-time":
		if ft != reflect.TypeOf(time.Time{}) {
			t.Errorf("%s: a date-time held in %s, want time.Time", where, ft)
		}
		return
	case s.Type.Is("object") && ref != "":
		if name := ref[strings.LastIndex(ref, "/")+1:]; ft.Name() != name {
			t.Errorf("%s: held in %s, want client.%s", where, ft, name)
		}
		return
	}
	for typ, kinds := range want {
		if s.Type.Is(typ) && !slices.Contains(kinds, ft.Kind()) {
			t.Errorf("%s: a JSON %s held in %s", where, typ, ft)
			return
		}
	}
	switch {
	case s.Type.Is("array"):
		items := s.Items.Value
		if len(items.AllOf) == 1 && items.Type == nil {
			items = items.AllOf[0].Value
		}
		checkKind(t, where+"[]", s.Items.Ref, items, ft.Elem())
	case s.Type.Is("object"):
		checkObject(t, where, s, ft)
	}
}

// clientConstants returns the values of the client package's string
// constants by the name of their type, read from its source.
func clientConstants(t *testing.T) map[string][]string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("../client/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files in ../client: %v", err)
	}
	out := map[string][]string{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatalf("parsing %s: %v", name, err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				id, ok := vs.Type.(*ast.Ident)
				if !ok {
					continue
				}
				for _, v := range vs.Values {
					if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
						s, _ := strconv.Unquote(lit.Value)
						out[id.Name] = append(out[id.Name], s)
					}
				}
			}
		}
	}
	return out
}
