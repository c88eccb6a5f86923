package abi_test

import (
	"bytes"
	"errors"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/antler-mcp/antler/abi"
)

// FuzzDecode decodes arbitrary bytes as every message type. Decode never
// panics and fails only with ErrMalformed; a value it accepts re-encodes to
// bytes protowire parses, which decode to an equal value and re-encode to
// the same bytes.
func FuzzDecode(f *testing.F) {
	for _, tc := range roundTripCases {
		if b := encode(tc.msg); len(b) < 4096 {
			f.Add(b)
		}
	}
	for _, tc := range wireCases {
		f.Add(appendFields(nil, scramble(tc.want, 0)))
	}
	for _, b := range [][]byte{
		nil,
		{0x00},
		{0x80},
		{0x0e, 0x00},
		{0x0f, 0x00},
		{0x0b, 0x0c},
		{0x0a, 0x05, 'a'},
		{0x12, 0x09, 0x41, 0, 0, 0, 0, 0, 0, 0xf8, 0x7f}, // NaN poll_after
		{0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02},
		[]byte("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff"),
		[]byte(`{"jsonrpc":"2.0"}`),
	} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, k := range kinds {
			m := k.new()
			if err := m.Decode(data); err != nil {
				if !errors.Is(err, abi.ErrMalformed) {
					t.Fatalf("%s: error %v is not ErrMalformed", k.name, err)
				}
				continue
			}
			b1 := bytes.Clone(encode(m))
			checkParses(t, k.name, b1)
			m2 := k.new()
			if err := m2.Decode(b1); err != nil {
				t.Fatalf("%s: re-encoded value does not decode: %v\n in  %x\n out %x", k.name, err, data, b1)
			}
			if !equal(m, m2) {
				t.Fatalf("%s: decode(encode(v)) != v\n v    %s\n got  %s", k.name, show(m), show(m2))
			}
			if b2 := encode(m2); !bytes.Equal(b1, b2) {
				t.Fatalf("%s: encoding is not stable\n %x\n %x", k.name, b1, b2)
			}
		}
	})
}

// checkParses checks protowire accepts b as a sequence of valid fields.
func checkParses(t *testing.T, name string, b []byte) {
	t.Helper()
	for len(b) > 0 {
		_, _, n := protowire.ConsumeField(b)
		if n < 0 {
			t.Fatalf("%s: protowire rejects our encoding: %v", name, protowire.ParseError(n))
		}
		b = b[n:]
	}
}
