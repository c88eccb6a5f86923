package gateway

import (
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"testing/iotest"
	"time"
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

// countingConn counts the deadlines given to a connection.
type countingConn struct {
	net.Conn
	reads, writes int
}

func (c *countingConn) SetReadDeadline(t time.Time) error {
	c.reads++
	return c.Conn.SetReadDeadline(t)
}

func (c *countingConn) SetWriteDeadline(t time.Time) error {
	c.writes++
	return c.Conn.SetWriteDeadline(t)
}

// TestLimitedConnDeadlines: a deferred read deadline bounds a read that
// waits for the network and is dropped by a deadline set before one; a
// deadline set again as it stands reaches no timer, and one that differs
// always does.
func TestLimitedConnDeadlines(t *testing.T) {
	t.Parallel()
	client, server := net.Pipe()
	t.Cleanup(func() { client.Close(); server.Close() })
	inner := &countingConn{Conn: server}
	c := &limitedConn{Conn: inner, free: func() {}}
	buf := make([]byte, 8)
	past := time.Now().Add(-time.Second)

	// A deferred deadline long past fails the next read that waits.
	c.deferReadDeadline(past)
	if _, err := c.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read under a deferred past deadline: %v, want a timeout", err)
	}
	// Lifted, the read waits for the peer.
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = client.Write([]byte("one")) }()
	if n, err := c.Read(buf); err != nil || string(buf[:n]) != "one" {
		t.Fatalf("read after the lift: %q, %v", buf[:n], err)
	}
	// A deferred deadline lifted before any read never reaches the socket.
	before := inner.reads
	c.deferReadDeadline(past)
	if err := c.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	if inner.reads != before {
		t.Errorf("a deferred deadline lifted unread gave %d deadlines to the socket", inner.reads-before)
	}
	go func() { _, _ = client.Write([]byte("two")) }()
	if n, err := c.Read(buf); err != nil || string(buf[:n]) != "two" {
		t.Fatalf("read after a deferred deadline was lifted: %q, %v", buf[:n], err)
	}
	// The same write deadline twice is one; another one reaches the socket.
	future := time.Now().Add(time.Hour)
	for range 2 {
		if err := c.SetWriteDeadline(future); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.SetWriteDeadline(past); err != nil {
		t.Fatal(err)
	}
	if inner.writes != 2 {
		t.Errorf("%d write deadlines reached the socket, want 2", inner.writes)
	}
	if _, err := c.Write([]byte("x")); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("write under a past deadline: %v, want a timeout", err)
	}
	// SetDeadline drops a deferred one and sets both.
	c.deferReadDeadline(past)
	if err := c.SetDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = client.Write([]byte("three")) }()
	if n, err := c.Read(buf); err != nil || string(buf[:n]) != "three" {
		t.Fatalf("read after SetDeadline: %q, %v", buf[:n], err)
	}
}
