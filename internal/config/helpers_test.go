package config_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/envvar"
)

// env is a fake environment for $VAR lookups.
func env(vars map[string]string) envvar.Lookup {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

// noEnv is an environment where nothing is set.
var noEnv = env(nil)

// constant returns a lookup that answers value for every name.
func constant(value string) envvar.Lookup {
	return func(string) (string, bool) { return value, true }
}

func readTestdata(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func mustParse(t testing.TB, doc []byte, lookup envvar.Lookup) *config.Extensions {
	t.Helper()
	ext, err := config.Parse(doc, lookup)
	if err != nil {
		t.Fatalf("Parse: %v\ndocument: %s", err, doc)
	}
	return ext
}

func mustServer(t testing.TB, ext *config.Extensions, name string) *config.Server {
	t.Helper()
	s, ok := ext.Server(name)
	if !ok {
		t.Fatalf("server %q not found; have %v", name, serverNames(ext.Servers))
	}
	return s
}

func serverNames(servers []*config.Server) []string {
	names := []string{}
	for _, s := range servers {
		names = append(names, s.Name)
	}
	return names
}

// problemsOf asserts err is a config.Problems and returns it.
func problemsOf(t testing.TB, err error) config.Problems {
	t.Helper()
	var p config.Problems
	if !errors.As(err, &p) {
		t.Fatalf("error %v (%T) is not config.Problems", err, err)
	}
	return p
}

func problemPaths(p config.Problems) []string {
	out := []string{}
	for _, e := range p {
		out = append(out, e.Path)
	}
	return out
}

func equal[T any](t testing.TB, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %#v, want %#v", what, got, want)
	}
}

// jsonAt walks a marshalled document along keys and returns the value there.
func jsonAt(t testing.TB, doc []byte, keys ...string) (any, bool) {
	t.Helper()
	tree, err := config.ParseJSON(doc)
	if err != nil {
		t.Fatalf("ParseJSON: %v", err)
	}
	cur := tree
	for _, k := range keys {
		o, ok := cur.(*config.Object)
		if !ok {
			return nil, false
		}
		if cur, ok = o.Get(k); !ok {
			return nil, false
		}
	}
	return cur, true
}

// compact renders an ordered value as JSON text for comparisons.
func compact(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// editDoc parses doc, lets edit change the ordered tree and returns the new text.
func editDoc(t testing.TB, doc string, edit func(root *config.Object)) []byte {
	t.Helper()
	tree, err := config.ParseJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	root := tree.(*config.Object)
	edit(root)
	b, err := json.Marshal(root)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// obj returns the object at the dotted path of keys below root.
func obj(t testing.TB, root *config.Object, keys ...string) *config.Object {
	t.Helper()
	cur := root
	for _, k := range keys {
		v, ok := cur.Get(k)
		if !ok {
			t.Fatalf("no key %q", k)
		}
		if cur, ok = v.(*config.Object); !ok {
			t.Fatalf("%q is not an object", k)
		}
	}
	return cur
}
