package upstream

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// decoded is what an upstream reads from encoded tools/call params, numbers
// kept as written (1E700 is valid JSON, though no float64).
func decoded(t *testing.T, b []byte) map[string]any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v map[string]any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("params %s do not decode: %v", b, err)
	}
	return v
}

// TestEncodeCallParams: the direct encoding of a call's params decodes to
// what json.Marshal's does, for names and arguments of every kind, and
// refuses what json.Marshal refuses.
func TestEncodeCallParams(t *testing.T) {
	t.Parallel()
	for _, p := range []callParams{
		{Name: "echo", Arguments: json.RawMessage(`{"message":"hi"}`)},
		{Name: "echo"},
		{Name: "echo", Arguments: json.RawMessage(`null`)},
		{Name: "a/b.c-d_e", Arguments: json.RawMessage("{\n \"x\" : [1, 2.5e3, true],\n\t\"y\": \"<&>\"\n}")},
		{Name: "quote\"d", Arguments: json.RawMessage(`{}`)},
		{Name: "back\\slash"},
		{Name: "<html>&"},
		{Name: "naïve"},
		{Name: "tab\there"},
		{Name: "", Arguments: json.RawMessage(`{}`)},
		{Name: "echo", Arguments: json.RawMessage(`{"a":1}`), Meta: map[string]any{"progressToken": 3}},
		{Name: "echo", Task: json.RawMessage(`{"ttl":1000}`)},
		{Name: "echo", MultiRoundTripParams: mcp.MultiRoundTripParams{RequestState: "s"}},
	} {
		got, err := encodeCallParams(p)
		if err != nil {
			t.Fatalf("%+v: %v", p, err)
		}
		want, _ := json.Marshal(p)
		if !reflect.DeepEqual(decoded(t, got), decoded(t, want)) {
			t.Errorf("%+v: encoded %s, json.Marshal %s", p, got, want)
		}
	}
	for _, args := range []string{`{"a":1},"name":"other"`, `{"a":`, `1 2`, "{\"a\":\"\x00\"}"} {
		if got, err := encodeCallParams(callParams{Name: "echo", Arguments: json.RawMessage(args)}); err == nil {
			t.Errorf("arguments %q encoded as %s, want an error", args, got)
		}
	}
}

// FuzzEncodeCallParams: whatever the name and arguments, the direct
// encoding fails where json.Marshal fails and otherwise is one JSON object
// that decodes to json.Marshal's value (so arguments cannot smuggle in a
// field of their own).
func FuzzEncodeCallParams(f *testing.F) {
	f.Add("echo", `{"message":"hi"}`)
	f.Add("a\"b", `{}`)
	f.Add("x", `{"a":1},"name":"y"`)
	f.Add("x", " [1, {\"k\": \"\\u003c\"}] ")
	f.Fuzz(func(t *testing.T, name, args string) {
		p := callParams{Name: name}
		if args != "" {
			p.Arguments = json.RawMessage(args)
		}
		got, err := encodeCallParams(p)
		want, werr := json.Marshal(p)
		if (err == nil) != (werr == nil) {
			t.Fatalf("name %q arguments %q: error %v, json.Marshal's %v", name, args, err, werr)
		}
		if err != nil {
			return
		}
		if !json.Valid(got) {
			t.Fatalf("name %q arguments %q: invalid params %q", name, args, got)
		}
		if !reflect.DeepEqual(decoded(t, got), decoded(t, want)) {
			t.Fatalf("name %q arguments %q: encoded %s, json.Marshal %s", name, args, got, want)
		}
	})
}
