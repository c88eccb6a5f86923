package abi_test

import (
	"errors"
	"math"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/antler-mcp/antler/abi"
)

// decodeSafely decodes b into m, turning a panic into a test failure.
func decodeSafely(t *testing.T, m message, b []byte) (err error) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("Decode(%x) panicked: %v", b, p)
		}
	}()
	return m.Decode(b)
}

// TestMalformedFraming: inputs no message type can accept.
func TestMalformedFraming(t *testing.T) {
	tag := func(num protowire.Number, typ protowire.Type) []byte { return protowire.AppendTag(nil, num, typ) }
	cat := func(bs ...[]byte) []byte {
		var out []byte
		for _, b := range bs {
			out = append(out, b...)
		}
		return out
	}
	cases := []struct {
		name string
		b    []byte
	}{
		{"truncated tag", []byte{0x80}},
		{"truncated tag, long", []byte{0xff, 0xff, 0xff}},
		{"tag overflows 64 bits", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}},
		{"tag longer than 10 bytes", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}},
		{"field number beyond int32", protowire.AppendVarint(nil, uint64(math.MaxInt32+1)<<3)},
		{"truncated varint", cat(tag(99, protowire.VarintType), []byte{0x80})},
		{"truncated varint at end", cat(tag(99, protowire.VarintType))},
		{"varint overflows 64 bits", cat(tag(99, protowire.VarintType),
			[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02})},
		{"length past the end", cat(tag(99, protowire.BytesType), []byte{0x05, 'a', 'b'})},
		{"length past the end by one", cat(tag(99, protowire.BytesType), []byte{0x03, 'a', 'b'})},
		{"huge length", cat(tag(99, protowire.BytesType), protowire.AppendVarint(nil, math.MaxUint64), []byte("abc"))},
		{"length near int64 max", cat(tag(99, protowire.BytesType), protowire.AppendVarint(nil, math.MaxInt64), []byte("abc"))},
		{"truncated length", cat(tag(99, protowire.BytesType), []byte{0x80})},
		{"missing length", cat(tag(99, protowire.BytesType))},
		{"truncated fixed64", cat(tag(99, protowire.Fixed64Type), []byte{1, 2, 3, 4, 5, 6, 7})},
		{"truncated fixed32", cat(tag(99, protowire.Fixed32Type), []byte{1, 2, 3})},
		{"wire type 6", cat(tag(99, 6), []byte{0})},
		{"wire type 7", cat(tag(99, 7), []byte{0})},
		{"wire type 6 on a known field", cat(tag(1, 6), []byte{0})},
		{"wire type 7 on a known field", cat(tag(2, 7), []byte{0})},
		// Groups do not exist in proto3 and the ABI never writes them.
		{"start group", cat(tag(99, protowire.StartGroupType), tag(99, protowire.EndGroupType))},
		{"end group", cat(tag(99, protowire.EndGroupType))},
		{"field number 0, varint", []byte{0x00, 0x01}},
		{"field number 0, bytes", []byte{0x02, 0x00}},
		{"field number 0 after a valid field", cat(protowire.AppendVarint(tag(99, protowire.VarintType), 1), []byte{0x00, 0x00})},
		{"valid field then garbage", cat(protowire.AppendString(tag(99, protowire.BytesType), "ok"), []byte{0x80})},
	}
	for _, tc := range cases {
		for _, k := range kinds {
			err := decodeSafely(t, k.new(), tc.b)
			if !errors.Is(err, abi.ErrMalformed) {
				t.Errorf("%s: %s.Decode(%x) = %v, want ErrMalformed", tc.name, k.name, tc.b, err)
			}
		}
	}
}

// TestMalformedTypes: known fields sent with the wrong wire type, and bad
// values, per message.
func TestMalformedTypes(t *testing.T) {
	cases := []struct {
		name string
		m    message
		fs   []wf
	}{
		{"string field as varint", &abi.InterceptRequest{}, []wf{vint(1, 1)}},
		{"string field as fixed64", &abi.InterceptRequest{}, []wf{f64(3, 1)}},
		{"string field as fixed32", &abi.TaskReference{}, []wf{f32(5, 1)}},
		{"repeated string as varint", &abi.InterceptRequest{}, []wf{str(9, "ok"), vint(9, 1)}},
		{"bytes field as varint", &abi.InterceptRequest{}, []wf{vint(5, 1)}},
		{"bytes field as fixed64", &abi.CallToolResponse{}, []wf{f64(1, 1)}},
		{"embedded message as varint", &abi.InterceptRequest{}, []wf{vint(6, 1)}},
		{"embedded message as fixed32", &abi.InterceptResponse{}, []wf{f32(3, 1)}},
		{"varint field as bytes", &abi.InterceptResponse{}, []wf{str(1, "1")}},
		{"varint field as fixed64", &abi.InterceptResponse{}, []wf{f64(1, 1)}},
		{"bool field as bytes", &abi.CallToolRequest{}, []wf{str(6, "true")}},
		{"bool field as fixed32", &abi.TaskDriverResponse{}, []wf{f32(5, 1)}},
		{"snapshot as varint", &abi.TaskDriverResponse{}, []wf{vint(2, 1)}},
		{"error field as varint", &abi.ResultResponse{}, []wf{vint(15, 1)}},
		{"header name as varint", &abi.InterceptRequest{}, []wf{msg(6, vint(1, 1))}},
		{"header value as fixed64", &abi.InterceptResponse{}, []wf{msg(3, str(1, "n"), f64(2, 1))}},
		{"secret as fixed32", &abi.InterceptRequest{}, []wf{msg(10, f32(2, 1))}},
		{"snapshot status as varint", &abi.TaskDriverResponse{}, []wf{msg(2, vint(1, 1))}},
		{"snapshot truncated flag as bytes", &abi.TaskDriverResponse{}, []wf{msg(2, str(4, "x"))}},
		{"artifact entry as varint", &abi.TaskDriverResponse{}, []wf{msg(2, vint(5, 1))}},
		{"artifact name as varint", &abi.TaskDriverResponse{}, []wf{msg(2, msg(5, vint(1, 1)))}},
		{"poll_after as varint", &abi.TaskDriverResponse{}, []wf{msg(2, vint(8, 1))}},
		{"poll_after as fixed32", &abi.TaskDriverResponse{}, []wf{msg(2, f32(8, 1))}},
		{"poll_after as bytes", &abi.TaskDriverResponse{}, []wf{msg(2, str(8, "1.5"))}},
		{"answer task as varint", &abi.TaskAnswerRequest{}, []wf{vint(1, 1)}},
		{"answer task's remote id as varint", &abi.TaskAnswerRequest{}, []wf{msg(1, vint(5, 1))}},
		{"answer action as fixed64", &abi.TaskAnswerRequest{}, []wf{f64(3, 1)}},
		{"poll_after NaN", &abi.TaskDriverResponse{}, []wf{msg(2, f64(8, math.NaN()))}},
		{"poll_after NaN with payload", &abi.TaskDriverResponse{}, []wf{
			msg(2, str(1, "working"), wf{8, protowire.Fixed64Type, uint64(0x7ff8000000000001)}),
		}},
		{"poll_after negative NaN", &abi.TaskDriverResponse{}, []wf{
			msg(2, wf{8, protowire.Fixed64Type, uint64(0xfff0000000000001)}),
		}},
	}
	for _, tc := range cases {
		b := appendFields(nil, tc.fs)
		if err := decodeSafely(t, tc.m, b); !errors.Is(err, abi.ErrMalformed) {
			t.Errorf("%s: %T.Decode(%x) = %v, want ErrMalformed", tc.name, tc.m, b, err)
		}
	}
}

// TestMalformedEmbedded: framing errors inside embedded messages surface.
func TestMalformedEmbedded(t *testing.T) {
	bad := [][]byte{
		{0x80},               // truncated tag
		{0x0a, 0x05, 'a'},    // length past the end
		{0x0e, 0x00},         // wire type 6
		{0x0f, 0x00},         // wire type 7
		{0x00, 0x00},         // field number 0
		{0x41, 1, 2, 3},      // truncated fixed64 in field 8
		{0x08, 0xff, 0xff},   // truncated varint
		{0x0b, 0x0c},         // group
		{0x12, 0x01, 'x', 0}, // trailing field number 0
	}
	for _, body := range bad {
		for _, tc := range []struct {
			m     message
			field protowire.Number
		}{
			{&abi.InterceptRequest{}, 6},
			{&abi.InterceptRequest{}, 10},
			{&abi.InterceptResponse{}, 3},
			{&abi.TaskDriverResponse{}, 2},
		} {
			b := protowire.AppendBytes(protowire.AppendTag(nil, tc.field, protowire.BytesType), body)
			if err := decodeSafely(t, tc.m, b); !errors.Is(err, abi.ErrMalformed) {
				t.Errorf("%T field %d with body %x: err %v, want ErrMalformed", tc.m, tc.field, body, err)
			}
		}
	}
	// Two levels deep: a bad artifact entry inside the snapshot.
	b := appendFields(nil, []wf{msg(2, str(1, "completed"), byt(5, []byte{0x0a, 0x09, 'u'}))})
	if err := decodeSafely(t, &abi.TaskDriverResponse{}, b); !errors.Is(err, abi.ErrMalformed) {
		t.Errorf("bad artifact in snapshot: err %v, want ErrMalformed", err)
	}
	// An error in an embedded message stops decoding of its parent too.
	b = appendFields(nil, []wf{msg(6, vint(1, 1)), str(1, "after")})
	var r abi.InterceptRequest
	if err := decodeSafely(t, &r, b); !errors.Is(err, abi.ErrMalformed) {
		t.Errorf("err %v, want ErrMalformed", err)
	}
}

// TestTruncations: every strict prefix of a valid message either decodes (it
// ends on a field boundary) or fails with ErrMalformed; none panics.
func TestTruncations(t *testing.T) {
	for _, tc := range roundTripCases {
		b := encode(tc.msg)
		if len(b) > 4096 {
			continue
		}
		for i := range len(b) {
			if err := decodeSafely(t, newLike(tc.msg), b[:i]); err != nil && !errors.Is(err, abi.ErrMalformed) {
				t.Errorf("%s[:%d]: %v", tc.name, i, err)
			}
		}
	}
	// A prefix that cuts the last field is always malformed.
	b := encode(fullCallToolResponse)
	if err := decodeSafely(t, &abi.CallToolResponse{}, b[:len(b)-1]); !errors.Is(err, abi.ErrMalformed) {
		t.Errorf("cut last field: err %v, want ErrMalformed", err)
	}
}

// TestDecoderErrSticky: after an error, Next reports no more fields and Fail
// does not replace the first error.
func TestDecoderErrSticky(t *testing.T) {
	d := abi.NewDecoder([]byte{0x08, 0x01, 0x0e, 0x00, 0x08, 0x01})
	if !d.Next() || d.Field() != 1 || d.Uint() != 1 {
		t.Fatal("first field not read")
	}
	if d.Next() {
		t.Fatal("Next accepted wire type 6")
	}
	if d.Next() {
		t.Fatal("Next went on after an error")
	}
	other := errors.New("other")
	d.Fail(other)
	if d.Err() != abi.ErrMalformed {
		t.Fatalf("Err = %v, want ErrMalformed", d.Err())
	}
	d = abi.NewDecoder(nil)
	d.Fail(nil)
	if d.Err() != nil {
		t.Fatalf("Fail(nil) set %v", d.Err())
	}
	d.Fail(other)
	if d.Err() != other {
		t.Fatalf("Err = %v, want the failure", d.Err())
	}
	if d.Next() {
		t.Fatal("Next went on after Fail")
	}
}
