package abi_test

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/antler-mcp/antler/abi"
)

func TestRoundTrip(t *testing.T) {
	for _, tc := range roundTripCases {
		t.Run(tc.name, func(t *testing.T) {
			b := encode(tc.msg)
			got := newLike(tc.msg)
			if err := got.Decode(b); err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !equal(got, tc.msg) {
				t.Fatalf("round trip changed the value\n got  %s\n want %s", show(got), show(tc.msg))
			}
			// Encoding is deterministic.
			if b2 := encode(got); !bytes.Equal(b, b2) {
				t.Fatalf("re-encoding differs:\n %x\n %x", b, b2)
			}
		})
	}
}

// TestRoundTripRandom round-trips random values of every message type, so a
// field added to a struct but forgotten in Encode or Decode is caught.
func TestRoundTripRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			for i := range 500 {
				want := k.new()
				fill(r, reflect.ValueOf(want).Elem())
				got := k.new()
				if err := got.Decode(encode(want)); err != nil {
					t.Fatalf("#%d: Decode: %v", i, err)
				}
				if !equal(got, want) {
					t.Fatalf("#%d: round trip changed the value\n got  %s\n want %s", i, show(got), show(want))
				}
			}
		})
	}
}

func TestEmptyValuesEncodeToNothing(t *testing.T) {
	// proto3: default values are not written, so zero messages are empty.
	for _, k := range kinds {
		if b := encode(k.new()); len(b) != 0 {
			t.Errorf("%s{} encodes to %x, want no bytes", k.name, b)
		}
	}
	// And an empty or nil input decodes to the zero value.
	for _, k := range kinds {
		for _, in := range [][]byte{nil, {}} {
			m := k.new()
			if err := m.Decode(in); err != nil {
				t.Errorf("%s.Decode(%#v): %v", k.name, in, err)
			}
			if !equal(m, k.new()) {
				t.Errorf("%s.Decode(%#v) = %s, want zero", k.name, in, show(m))
			}
		}
	}
}

// TestDecodeResets checks Decode overwrites every field of a reused value.
func TestDecodeResets(t *testing.T) {
	for _, tc := range roundTripCases {
		m := newLike(tc.msg)
		full := encode(tc.msg)
		// Fill m with a different full value of its type, then decode.
		for _, other := range roundTripCases {
			if reflect.TypeOf(other.msg) == reflect.TypeOf(tc.msg) && other.name != tc.name {
				if err := m.Decode(encode(other.msg)); err != nil {
					t.Fatal(err)
				}
				break
			}
		}
		if err := m.Decode(full); err != nil {
			t.Fatal(err)
		}
		if !equal(m, tc.msg) {
			t.Errorf("%s: decoding into a used value kept stale fields: %s", tc.name, show(m))
		}
	}
}

// TestDecodeBytesCapped: decoded bytes fields may share the input buffer
// (wire.go: decoded messages are valid as long as their input), so each must
// be capped at its length: appending to one must never overwrite the bytes
// that follow it in the input.
func TestDecodeBytesCapped(t *testing.T) {
	b := encode(fullInterceptRequest)
	orig := bytes.Clone(b)
	var req abi.InterceptRequest
	if err := req.Decode(b); err != nil {
		t.Fatal(err)
	}
	for _, f := range [][]byte{req.Arguments, req.Config} {
		if cap(f) != len(f) {
			t.Errorf("decoded bytes field has len %d cap %d: appending would clobber the input", len(f), cap(f))
		}
	}
	req.Arguments = append(req.Arguments, "XXXXXXXXXXXXXXXX"...)
	if !bytes.Equal(b, orig) {
		t.Fatal("appending to a decoded field changed the input")
	}
	req.Arguments = fullInterceptRequest.Arguments
	if !equal(&req, fullInterceptRequest) {
		t.Fatalf("decoded value changed: %s", show(&req))
	}

	var resp abi.TaskDriverResponse
	b = encode(fullTaskDriverResponse)
	if err := resp.Decode(b); err != nil {
		t.Fatal(err)
	}
	for _, f := range [][]byte{resp.DriverData, resp.Snapshot.Result, resp.Snapshot.InputRequired} {
		if cap(f) != len(f) {
			t.Errorf("decoded bytes field has len %d cap %d", len(f), cap(f))
		}
	}
}

func TestEncoderReuse(t *testing.T) {
	var e abi.Encoder
	for range 3 {
		for _, tc := range roundTripCases {
			e.Reset()
			tc.msg.Encode(&e)
			if want := encode(tc.msg); !bytes.Equal(e.Bytes(), want) {
				t.Fatalf("%s: reused encoder wrote %x, want %x", tc.name, e.Bytes(), want)
			}
		}
	}
}

// TestEncodeAppends checks Encode appends after what the encoder holds, with
// embedded messages framed correctly at a non-zero offset.
func TestEncodeAppends(t *testing.T) {
	var e abi.Encoder
	fullInterceptRequest.Encode(&e)
	first := len(e.Bytes())
	fullTaskDriverResponse.Encode(&e)
	if got, want := e.Bytes()[:first], encode(fullInterceptRequest); !bytes.Equal(got, want) {
		t.Fatalf("prefix changed: %x, want %x", got, want)
	}
	if got, want := e.Bytes()[first:], encode(fullTaskDriverResponse); !bytes.Equal(got, want) {
		t.Fatalf("appended message %x, want %x", got, want)
	}
}
