// Package slowclient is a slowloris client for tests: it sends a request a
// byte at a time and reports how the server ended the connection.
package slowclient

import (
	"errors"
	"io"
	"net"
	"os"
	"time"
)

// Drip writes prefix to c, then one filler byte every 20ms, until a write
// fails or stop is closed. Run it in its own goroutine.
func Drip(c net.Conn, prefix string, filler byte, stop <-chan struct{}) {
	if _, err := io.WriteString(c, prefix); err != nil {
		return
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		if _, err := c.Write([]byte{filler}); err != nil {
			return
		}
	}
}

// ErrStillOpen means the server kept the connection past the guard.
var ErrStillOpen = errors.New("the server kept the slow connection open")

// Run drips a request to addr and waits until the server closes the
// connection, returning what it answered first. The guard only keeps a
// broken server from hanging the test: reaching it is ErrStillOpen.
func Run(addr, prefix string, filler byte, guard time.Duration) ([]byte, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	stop := make(chan struct{})
	defer close(stop)
	go Drip(c, prefix, filler, stop)
	_ = c.SetReadDeadline(time.Now().Add(guard))
	got, err := io.ReadAll(c)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return got, ErrStillOpen
	}
	return got, nil
}
