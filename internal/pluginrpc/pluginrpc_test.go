package pluginrpc

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// TestRawCodec: abi's bytes pass through untouched both ways; go-plugin's
// own protobuf messages (the broker's) are encoded as protobuf; anything
// else is refused.
func TestRawCodec(t *testing.T) {
	var c RawCodec
	in := []byte{0x0a, 0x03, 'a', 'b', 'c'}
	wire, err := c.Marshal(&in)
	if err != nil || !bytes.Equal(wire, in) {
		t.Fatalf("marshal raw: %x, %v", wire, err)
	}
	out := []byte("old contents, reused")
	if err := c.Unmarshal(wire, &out); err != nil || !bytes.Equal(out, in) {
		t.Fatalf("unmarshal raw: %x, %v", out, err)
	}
	wire[0] = 0xff // the decoded bytes are a copy
	if out[0] != 0x0a {
		t.Fatal("unmarshal aliases the wire buffer")
	}

	msg := wrapperspb.String("broker")
	wire, err = c.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	var back wrapperspb.StringValue
	if err := c.Unmarshal(wire, &back); err != nil || !proto.Equal(&back, msg) {
		t.Fatalf("protobuf round trip: %v, %v", &back, err)
	}

	for _, v := range []any{"a string", 42} {
		if _, err := c.Marshal(v); err == nil {
			t.Errorf("marshal %T: no error", v)
		}
		if err := c.Unmarshal(nil, v); err == nil {
			t.Errorf("unmarshal into %T: no error", v)
		}
	}
}
