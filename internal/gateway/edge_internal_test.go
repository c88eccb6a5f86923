package gateway

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
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

// TestReadAll: a body is read whole in one buffer of its declared length,
// or grown as io.ReadAll grows one without a length; a body shorter than
// declared, or a failing read, is an error.
func TestReadAll(t *testing.T) {
	failing := errors.New("read failed")
	for _, tc := range []struct {
		name     string
		body     io.Reader
		declared int64
		want     string
		err      error
	}{
		{"declared", strings.NewReader(`{"a":1}`), 7, `{"a":1}`, nil},
		{"no length", strings.NewReader(`{"a":1}`), -1, `{"a":1}`, nil},
		{"short", strings.NewReader(`{"a"`), 7, `{"a"`, io.ErrUnexpectedEOF},
		{"failing", io.MultiReader(strings.NewReader(`{"a"`), iotest.ErrReader(failing)), 7, `{"a"`, failing},
		{"failing without a length", io.MultiReader(strings.NewReader(`{"a"`), iotest.ErrReader(failing)), -1, `{"a"`, failing},
	} {
		got, err := readAll(tc.body, tc.declared)
		if string(got) != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("%s: %q, %v; want %q, %v", tc.name, got, err, tc.want, tc.err)
		}
	}
}

// TestReadAllDoesNotTrustALargeDeclaredLength: a client that declares a
// body of 4 MiB (BodyLimit's cap) and sends two bytes holds no buffer of
// 4 MiB while the edge waits for the rest.
func TestReadAllDoesNotTrustALargeDeclaredLength(t *testing.T) {
	got, err := readAll(strings.NewReader("{}"), 4<<20)
	if err != nil || string(got) != "{}" {
		t.Fatalf("readAll = %q, %v", got, err)
	}
	if cap(got) > preallocBody {
		t.Errorf("a 2-byte body of declared length 4 MiB got a buffer of %d bytes", cap(got))
	}
}
