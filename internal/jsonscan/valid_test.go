package jsonscan_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/jsonscan"
)

// validSeeds are inputs on both sides of every rule of JSON's grammar.
var validSeeds = []string{
	``, ` `, `{}`, `[]`, ` {} `, `{ }`, `[ ]`, `{"a":1}`, `{"a" : 1 , "b":[1,2,{"c":null}]}`,
	`{"a":1,}`, `[1,]`, `{,}`, `[,]`, `{"a"}`, `{"a":}`, `{"a" 1}`, `{1:2}`, `{"a":1 "b":2}`, `[1 2]`,
	`{"a":[}`, `[{]`, `{"a":1]`, `[1}`, `{}}`, `[]]`, `{}{}`, `[][]`, `1 2`, `"a" "b"`,
	`"`, `"a`, `"a"`, `"\"`, `"\\"`, `"\/\b\f\n\r\t"`, `"\u00e9"`, `"\u00E9"`, `"\u00g9"`, `"\u00e"`, `"\u"`, `"\x"`, `"\'"`,
	"\"a\tb\"", "\"a\nb\"", "\"\x1f\"", "\"\x7f\"", "\"\xff\xfe\"", "\"é\"",
	`0`, `-0`, `-`, `01`, `-01`, `1.`, `1.5`, `.5`, `1e`, `1e5`, `1E+5`, `1e-5`, `1.5e`, `1.5e+`, `1.5e+7`, `+1`, `--1`, `1-`, `0x1`, `1.e5`, `123456789012345678901234567890`,
	`true`, `false`, `null`, `tru`, `fals`, `nul`, `truex`, `nulll`, `True`, `NULL`, `[true,false,null]`,
	"\t\r\n {} \n", "\v{}", "\f{}", "\u00a0{}", `{"a":{"b":{"c":[[[[]]]]}}}`, `[[[[[[[[[[]]]]]]]]]]`, `[[[[[[[[[[]]]]]]]]]`,
	`{"jsonrpc":"2.0","id":"antler-1","result":{"content":[{"type":"text","text":"Echo: benchmark"}]}}`,
}

// TestValid: Valid agrees with encoding/json on every seed and on nesting
// at and past encoding/json's limit.
func TestValid(t *testing.T) {
	t.Parallel()
	for _, s := range validSeeds {
		if got, want := jsonscan.Valid([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("Valid(%q) = %v, encoding/json says %v", s, got, want)
		}
	}
	for _, depth := range []int{64, 65, 10000, 10001} {
		for _, open := range []string{"[", `{"a":`} {
			close := map[string]string{"[": "]", `{"a":`: "}"}[open]
			s := []byte(strings.Repeat(open, depth) + "1" + strings.Repeat(close, depth))
			if got, want := jsonscan.Valid(s), json.Valid(s); got != want {
				t.Errorf("%d levels of %s: Valid = %v, encoding/json says %v", depth, open, got, want)
			}
		}
	}
}

// FuzzValid: Valid and encoding/json's Valid agree on any input.
func FuzzValid(f *testing.F) {
	for _, s := range validSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := jsonscan.Valid(b), json.Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, encoding/json says %v", b, got, want)
		}
	})
}

func BenchmarkValid(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","id":"antler-1","method":"tools/call","params":{"name":"echo","arguments":{"message":"benchmark"},"_meta":{"progressToken":null}}}`)
	b.Run("jsonscan", func(b *testing.B) {
		for b.Loop() {
			jsonscan.Valid(line)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			json.Valid(line)
		}
	})
}
