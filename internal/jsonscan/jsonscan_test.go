package jsonscan_test

import (
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/jsonscan"
)

// TestMembers: the members of valid objects, as written, in order; not an
// object, or a key with an escape, is refused.
func TestMembers(t *testing.T) {
	tests := []struct {
		body string
		ok   bool
		want string // key=value pairs joined by " "
	}{
		{`{}`, true, ""},
		{` { } `, true, ""},
		{`{"a":1,"b":"x,y","c":{"d":[1,{"e":"}"}]},"f":null}`, true, `a=1 b="x,y" c={"d":[1,{"e":"}"}]} f=null`},
		{"{\n \"a\" : \"q\\\"uote\" ,\t\"b\":[ 1 , 2 ] }", true, `a="q\"uote" b=[ 1 , 2 ]`},
		{`{"a":1,"a":2}`, true, `a=1 a=2`},
		{`{"\u0061":1}`, false, ""},
		{`[1]`, false, ""},
		{`"s"`, false, ""},
		{``, false, ""},
	}
	for _, tc := range tests {
		var got []string
		ok := jsonscan.Members([]byte(tc.body), func(k, v []byte) bool {
			got = append(got, string(k)+"="+string(v))
			return true
		})
		if ok != tc.ok || (ok && strings.Join(got, " ") != tc.want) {
			t.Errorf("%s: %v %q, want %v %q", tc.body, ok, got, tc.ok, tc.want)
		}
	}
	// visit stops the walk.
	n := 0
	if jsonscan.Members([]byte(`{"a":1,"b":2}`), func([]byte, []byte) bool { n++; return false }) || n != 1 {
		t.Errorf("a stopped walk: %d members, reported true", n)
	}
}

// TestElements: the elements of valid arrays, as written, in order; not an
// array is refused.
func TestElements(t *testing.T) {
	tests := []struct {
		body string
		ok   bool
		want string // elements joined by " | "
	}{
		{`[]`, true, ""},
		{` [ ] `, true, ""},
		{`[1,"a,b",{"c":[1,2]},[3,[4]],null,true]`, true, `1 | "a,b" | {"c":[1,2]} | [3,[4]] | null | true`},
		{"[\n {\"t\" : \"x\"} ,\t\"]\" ]", true, `{"t" : "x"} | "]"`},
		{`{"a":1}`, false, ""},
		{`"s"`, false, ""},
		{``, false, ""},
	}
	for _, tc := range tests {
		var got []string
		ok := jsonscan.Elements([]byte(tc.body), func(v []byte) bool {
			got = append(got, string(v))
			return true
		})
		if ok != tc.ok || (ok && strings.Join(got, " | ") != tc.want) {
			t.Errorf("%s: %v %q, want %v %q", tc.body, ok, got, tc.ok, tc.want)
		}
	}
	n := 0
	if jsonscan.Elements([]byte(`[1,2]`), func([]byte) bool { n++; return false }) || n != 1 {
		t.Errorf("a stopped walk: %d elements, reported true", n)
	}
}
