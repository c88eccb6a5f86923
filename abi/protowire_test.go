package abi_test

// Cross-checks against the reference protobuf implementation's wire package:
// bytes our Encoder writes are parsed by protowire field by field, and bytes
// protowire writes (in any field order, with unknown fields) are read by our
// Decode. The expected field numbers and wire types below are written by hand
// from the `// N` comments in messages.go, independently of the codec.

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/antler-mcp/antler/abi"
)

// wf is one expected wire field. v is a uint64 for varint, fixed64 and
// fixed32 fields, a string or []byte for length-delimited scalars, and a
// []wf for embedded messages.
type wf struct {
	num protowire.Number
	typ protowire.Type
	v   any
}

func str(n protowire.Number, s string) wf { return wf{n, protowire.BytesType, s} }
func byt(n protowire.Number, b []byte) wf { return wf{n, protowire.BytesType, b} }
func vint(n protowire.Number, v uint64) wf {
	return wf{n, protowire.VarintType, v}
}
func f64(n protowire.Number, v float64) wf {
	return wf{n, protowire.Fixed64Type, math.Float64bits(v)}
}
func f32(n protowire.Number, v uint32) wf { return wf{n, protowire.Fixed32Type, uint64(v)} }
func msg(n protowire.Number, fs ...wf) wf { return wf{n, protowire.BytesType, fs} }

// hdr is an embedded Header{Name: 1, Value: 2}, defaults omitted.
func hdr(n protowire.Number, name, value string) wf {
	var fs []wf
	if name != "" {
		fs = append(fs, str(1, name))
	}
	if value != "" {
		fs = append(fs, str(2, value))
	}
	return msg(n, fs...)
}

func boolean(n protowire.Number) wf { return vint(n, 1) }

// appendFields writes fs with protowire.
func appendFields(b []byte, fs []wf) []byte {
	for _, f := range fs {
		b = protowire.AppendTag(b, f.num, f.typ)
		switch v := f.v.(type) {
		case uint64:
			switch f.typ {
			case protowire.VarintType:
				b = protowire.AppendVarint(b, v)
			case protowire.Fixed64Type:
				b = protowire.AppendFixed64(b, v)
			case protowire.Fixed32Type:
				b = protowire.AppendFixed32(b, uint32(v))
			default:
				panic("bad wire type for a number")
			}
		case string:
			b = protowire.AppendString(b, v)
		case []byte:
			b = protowire.AppendBytes(b, v)
		case []wf:
			b = protowire.AppendBytes(b, appendFields(nil, v))
		default:
			panic(fmt.Sprintf("bad value %T", v))
		}
	}
	return b
}

// checkWire parses b with protowire and compares it, field by field and in
// order, with want.
func checkWire(t *testing.T, path string, b []byte, want []wf) {
	t.Helper()
	i := 0
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			t.Fatalf("%s: protowire: bad tag: %v", path, protowire.ParseError(n))
		}
		b = b[n:]
		var (
			u   uint64
			raw []byte
		)
		switch typ {
		case protowire.VarintType:
			u, n = protowire.ConsumeVarint(b)
		case protowire.Fixed64Type:
			u, n = protowire.ConsumeFixed64(b)
		case protowire.Fixed32Type:
			var u32 uint32
			u32, n = protowire.ConsumeFixed32(b)
			u = uint64(u32)
		case protowire.BytesType:
			raw, n = protowire.ConsumeBytes(b)
		default:
			t.Fatalf("%s: field %d has unexpected wire type %d", path, num, typ)
		}
		if n < 0 {
			t.Fatalf("%s: protowire: field %d: %v", path, num, protowire.ParseError(n))
		}
		b = b[n:]
		if i >= len(want) {
			t.Fatalf("%s: unexpected extra field %d (wire type %d)", path, num, typ)
		}
		w := want[i]
		i++
		where := fmt.Sprintf("%s.%d", path, num)
		if num != w.num || typ != w.typ {
			t.Fatalf("%s: got field %d wire type %d, want field %d wire type %d", path, num, typ, w.num, w.typ)
		}
		switch v := w.v.(type) {
		case uint64:
			if u != v {
				t.Errorf("%s: got %#x, want %#x", where, u, v)
			}
		case string:
			if string(raw) != v {
				t.Errorf("%s: got %q, want %q", where, raw, v)
			}
		case []byte:
			if !bytes.Equal(raw, v) {
				t.Errorf("%s: got %q, want %q", where, raw, v)
			}
		case []wf:
			checkWire(t, where, raw, v)
		}
	}
	if i != len(want) {
		t.Fatalf("%s: %d fields, want %d (missing field %d)", path, i, len(want), want[i].num)
	}
}

// wireCases are values with their expected wire fields in field-number
// order, repeated fields in element order.
// fullTaskReferenceFields are fullTaskReference's fields on the wire, alone
// and embedded in a TaskAnswerRequest.
var fullTaskReferenceFields = []wf{
	str(1, "local-1"),
	str(2, "u1"),
	str(3, "t1"),
	str(4, "jobs"),
	str(5, "remote-77"),
	byt(6, []byte(`{"queue":"gpu"}`)),
}

var wireCases = []struct {
	name string
	msg  message
	want []wf
}{
	{"InterceptRequest", fullInterceptRequest, []wf{
		str(1, "github"),
		str(2, "streamable-http"),
		str(3, "github__create_issue"),
		str(4, "create_issue"),
		byt(5, []byte(`{"title":"bug","body":"ünïcødé ✓"}`)),
		hdr(6, "Authorization", "Bearer t0k3n"),
		hdr(6, "X-Trace", "abc"),
		hdr(6, "X-Empty-Value", ""),
		str(7, "user-1"),
		str(8, "thread-9"),
		str(9, "GITHUB_TOKEN"),
		str(9, ""), // repeated elements are written even when empty
		str(9, "NPM_TOKEN"),
		hdr(10, "GITHUB_TOKEN", "ghp_x"),
		byt(11, []byte(`{"deny":["delete_repo"]}`)),
	}},
	{"InterceptRequest/present-empty", &abi.InterceptRequest{Arguments: []byte{}, Headers: []abi.Header{{}}}, []wf{
		byt(5, []byte{}),
		msg(6),
	}},
	{"InterceptResponse", fullInterceptResponse, []wf{
		vint(1, abi.ActionDeny),
		str(2, "not allowed"),
		hdr(3, "X-A", "1"),
		hdr(3, "X-B", "2"),
		str(4, "Cookie"),
		str(4, "X-Debug"),
		byt(5, []byte(`{}`)),
		str(15, "plugin exploded"),
	}},
	{"InterceptResponse/continue", &abi.InterceptResponse{Action: abi.ActionContinue, Arguments: []byte{}}, []wf{
		byt(5, nil), // present, empty: replaces arguments with nothing
	}},
	{"InterceptResponse/max-action", &abi.InterceptResponse{Action: math.MaxUint64}, []wf{
		vint(1, math.MaxUint64),
	}},
	{"ResultRequest", fullResultRequest, []wf{
		str(1, "fs"),
		str(2, "fs__read"),
		str(3, "read_file"),
		str(4, "u"),
		str(5, "t"),
		byt(6, []byte(`{"content":[{"type":"text","text":"hi"}]}`)),
		byt(7, []byte(`{"redact":true}`)),
	}},
	{"ResultResponse", fullResultResponse, []wf{
		byt(1, []byte(`{"content":[]}`)),
		str(15, "boom"),
	}},
	{"TaskSubmitRequest", fullTaskSubmitRequest, []wf{
		str(1, "u1"),
		str(2, "t1"),
		str(3, "r1"),
		str(4, "call_1"),
		str(5, "jobs"),
		str(6, "render"),
		byt(7, []byte(`{"scene":1}`)),
		byt(8, []byte(`{"queue":"gpu"}`)),
		str(9, "local-1"),
	}},
	{"TaskReference", fullTaskReference, fullTaskReferenceFields},
	{"TaskDriverResponse", fullTaskDriverResponse, []wf{
		str(1, "remote-77"),
		msg(2,
			str(1, "completed"),
			byt(2, []byte(`{"ok":true}`)),
			str(3, "ok"),
			boolean(4),
			hdr(5, "uri", "s3://b/k"),
			hdr(5, "mime_type", "image/png"),
			str(6, "partial"),
			byt(7, []byte(`{"question":"?"}`)),
			f64(8, 2.5),
		),
		byt(3, []byte(`{"etag":"x"}`)),
		str(4, "transient"),
		boolean(5),
	}},
	{"TaskDriverResponse/no-snapshot", &abi.TaskDriverResponse{RemoteTaskID: "r"}, []wf{
		str(1, "r"),
	}},
	{"TaskDriverResponse/empty-snapshot", &abi.TaskDriverResponse{Snapshot: &abi.TaskSnapshot{}}, []wf{
		msg(2),
	}},
	{"TaskDriverResponse/poll-after-zero", &abi.TaskDriverResponse{Snapshot: &abi.TaskSnapshot{HasPollAfter: true}}, []wf{
		msg(2, f64(8, 0)), // presence is written even for 0
	}},
	{"TaskDriverResponse/poll-after-unset", &abi.TaskDriverResponse{Snapshot: &abi.TaskSnapshot{PollAfterSeconds: 3}}, []wf{
		msg(2), // a value without HasPollAfter is null
	}},
	{"TaskAnswerRequest", fullTaskAnswerRequest, []wf{
		msg(1, fullTaskReferenceFields...),
		byt(2, []byte(`{"message":"Which colour?","requestedSchema":{"type":"object"}}`)),
		str(3, "accept"),
		byt(4, []byte(`{"colour":"blue ✓"}`)),
		str(5, "mcp-answer-0f1e"),
	}},
	{"TaskAnswerRequest/empty-task", &abi.TaskAnswerRequest{Action: "cancel"}, []wf{
		str(3, "cancel"), // an empty task reference is not written
	}},
	{"CallToolRequest", fullCallToolRequest, []wf{
		str(1, "github"),
		str(2, "list_issues"),
		byt(3, []byte(`{"state":"open"}`)),
		str(4, "u"),
		str(5, "t"),
		boolean(6),
	}},
	{"CallToolResponse", fullCallToolResponse, []wf{
		byt(1, []byte(`{"content":[]}`)),
		str(2, "upstream down"),
	}},
}

// TestEncodeMatchesProtowire parses our bytes with protowire.
func TestEncodeMatchesProtowire(t *testing.T) {
	for _, tc := range wireCases {
		t.Run(tc.name, func(t *testing.T) {
			b := encode(tc.msg)
			checkWire(t, tc.name, b, tc.want)
			// Our Encoder writes fields in field-number order, as protobuf
			// serializers do, so the bytes are the canonical encoding.
			if want := appendFields(nil, tc.want); !bytes.Equal(b, want) {
				t.Errorf("bytes differ from protowire's\n got  %x\n want %x", b, want)
			}
		})
	}
}

// unknownFields are fields of every wire type no message of v1 defines, as a
// newer minor of the ABI may add.
var unknownFields = []wf{
	vint(99, 1<<63|42),
	f64(99, -7.25),
	f32(99, 0xDEADBEEF),
	str(99, "from the future"),
	msg(100, str(1, "nested"), vint(2, 3), msg(3, f32(4, 5))),
	vint(16, 0),
	byt(19000, []byte{0xff, 0x00}),
	vint(protowire.MaxValidNumber, math.MaxUint64),
	f64(protowire.MaxValidNumber, 1),
}

// scramble returns fs in descending field-number order (keeping the order of
// a repeated field's elements, which is significant) with unknown fields
// before, between and after, recursively in embedded messages.
func scramble(fs []wf, depth int) []wf {
	fs = slices.Clone(fs)
	slices.SortStableFunc(fs, func(a, b wf) int { return int(b.num) - int(a.num) })
	var out []wf
	for i, f := range fs {
		out = append(out, unknownFields[(i+depth)%len(unknownFields)])
		if sub, ok := f.v.([]wf); ok {
			f.v = scramble(sub, depth+1)
		}
		out = append(out, f)
	}
	return append(out, unknownFields...)
}

// TestDecodeProtowire reads protowire-built bytes with our Decode: fields out
// of order and unknown fields of every wire type interleaved everywhere.
func TestDecodeProtowire(t *testing.T) {
	for _, tc := range wireCases {
		t.Run(tc.name, func(t *testing.T) {
			for _, variant := range []struct {
				name string
				fs   []wf
			}{
				{"canonical", tc.want},
				{"scrambled", scramble(tc.want, 0)},
			} {
				got := newLike(tc.msg)
				if err := got.Decode(appendFields(nil, variant.fs)); err != nil {
					t.Fatalf("%s: Decode: %v", variant.name, err)
				}
				want := newLike(tc.msg)
				// tc.msg may hold values Decode normalizes (PollAfterSeconds
				// without HasPollAfter): compare with its own round trip.
				if err := want.Decode(encode(tc.msg)); err != nil {
					t.Fatal(err)
				}
				if !equal(got, want) {
					t.Fatalf("%s: got %s\nwant %s", variant.name, show(got), show(want))
				}
			}
		})
	}
}

// TestDecodeUnknownOnly: a message of only unknown fields is the zero value.
func TestDecodeUnknownOnly(t *testing.T) {
	b := appendFields(nil, unknownFields)
	for _, k := range kinds {
		m := k.new()
		if err := m.Decode(b); err != nil {
			t.Errorf("%s: %v", k.name, err)
		} else if !equal(m, k.new()) {
			t.Errorf("%s: got %s, want zero", k.name, show(m))
		}
	}
}

// TestDecodeLastWins: a scalar field seen twice takes its last value, as in
// protobuf; repeated fields accumulate.
func TestDecodeLastWins(t *testing.T) {
	b := appendFields(nil, []wf{
		str(1, "first"),
		str(9, "a"),
		str(1, "second"),
		str(9, "b"),
		byt(5, []byte("x")),
		byt(5, []byte("y")),
	})
	var r abi.InterceptRequest
	if err := r.Decode(b); err != nil {
		t.Fatal(err)
	}
	want := abi.InterceptRequest{Server: "second", Arguments: []byte("y"), SecretNames: []string{"a", "b"}}
	if !equal(r, want) {
		t.Fatalf("got %s, want %s", show(r), show(want))
	}

	var resp abi.TaskDriverResponse
	b = appendFields(nil, []wf{
		vint(5, 7), // any non-zero varint is true
		msg(2, f64(8, 1), str(1, "working")),
		msg(2, f64(8, 4)),
	})
	if err := resp.Decode(b); err != nil {
		t.Fatal(err)
	}
	// A repeated embedded message replaces the previous one (protobuf
	// would merge them); a v1 encoder never writes it twice.
	wantResp := abi.TaskDriverResponse{Retryable: true, Snapshot: &abi.TaskSnapshot{PollAfterSeconds: 4, HasPollAfter: true}}
	if !equal(resp, wantResp) {
		t.Fatalf("got %s, want %s", show(&resp), show(&wantResp))
	}
}

// TestDecodeNonMinimalVarints: protobuf allows padded varints (up to 10
// bytes), for tags, lengths and values alike.
func TestDecodeNonMinimalVarints(t *testing.T) {
	b := []byte{
		0x8a, 0x80, 0x00, // tag 1, bytes, padded to 3 bytes
		0x82, 0x80, 0x80, 0x00, // length 2, padded
		'h', 'i',
		0x30,                                                       // tag 6, varint
		0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, // 1 in 10 bytes
	}
	if _, _, n := protowire.ConsumeField(b); n < 0 {
		t.Fatalf("protowire rejects the input: %v", protowire.ParseError(n))
	}
	var r abi.CallToolRequest
	if err := r.Decode(b); err != nil {
		t.Fatal(err)
	}
	if want := (abi.CallToolRequest{Server: "hi", RequestScopedHeaders: true}); !equal(r, want) {
		t.Fatalf("got %s, want %s", show(r), show(want))
	}
}
