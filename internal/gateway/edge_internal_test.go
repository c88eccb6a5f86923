package gateway

import (
	"io"
	"testing"
)

// TestReadBodyUnread: the edge's body hands out its bytes only while none
// has been read; after a partial read the rest is what Read returns, and
// Unread says so.
func TestReadBodyUnread(t *testing.T) {
	b := newReadBody([]byte(`{"jsonrpc":"2.0"}`))
	if got, ok := b.Unread(); !ok || string(got) != `{"jsonrpc":"2.0"}` {
		t.Fatalf("Unread() = %q, %v before any read", got, ok)
	}
	head := make([]byte, 5)
	if _, err := io.ReadFull(b, head); err != nil {
		t.Fatal(err)
	}
	if _, ok := b.Unread(); ok {
		t.Error("Unread() reports the whole body after 5 bytes were read")
	}
	rest, err := io.ReadAll(b)
	if err != nil || string(head)+string(rest) != `{"jsonrpc":"2.0"}` {
		t.Errorf("read %q + %q, %v", head, rest, err)
	}
	if err := b.Close(); err != nil {
		t.Error(err)
	}
}
