package upstream_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/upstream"
)

// floodBytes is how much one attack event carries, far above the 1 MiB cap
// of the tests: the host must never allocate anything like it.
const floodBytes = 64 << 20

// floodLine is one of the data lines the attack event is made of.
var floodLine = "data: " + strings.Repeat("x", 256<<10) + "\n"

// sseFloodServer is an MCP server over streamable HTTP (POST /mcp) and
// legacy HTTP+SSE (GET /sse, POST /msg). Its tool "flood" answers with ONE
// event of floodBytes in 256 KiB data lines before the blank line that ends
// it; with withID the event is a JSON-RPC response whose id comes first,
// else junk. Any other tool answers with a small result.
type sseFloodServer struct {
	withID bool

	stream chan func(io.Writer) // legacy SSE: what to write on the stream
}

func (s *sseFloodServer) writeEvent(w io.Writer, fl http.Flusher, id json.RawMessage, tool string) {
	if tool != "flood" {
		fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"small\"}]}}\n\n", id)
		fl.Flush()
		return
	}
	if s.withID {
		fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"\n", id)
	} else {
		io.WriteString(w, "event: message\n")
	}
	for sent := 0; sent < floodBytes; sent += len(floodLine) {
		if _, err := io.WriteString(w, floodLine); err != nil {
			return // the host hung up
		}
		fl.Flush()
	}
	io.WriteString(w, "data: \"}]}}\n\n")
	fl.Flush()
}

type rpcIn struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		ProtocolVersion string `json:"protocolVersion"`
		Name            string `json:"name"`
	} `json:"params"`
}

func (s *sseFloodServer) answer(m rpcIn) (string, bool) {
	switch m.Method {
	case "initialize":
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"flood","version":"1"}}}`, m.ID, m.Params.ProtocolVersion), true
	case "tools/call", "":
		return "", false
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"no"}}`, m.ID), true
}

func (s *sseFloodServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	fl := w.(http.Flusher)
	if r.Method == http.MethodGet && r.URL.Path == "/sse" {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: endpoint\ndata: /msg\n\n")
		fl.Flush()
		for {
			select {
			case write := <-s.stream:
				write(w)
				fl.Flush()
			case <-r.Context().Done():
				return
			}
		}
	}
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	var m rpcIn
	if err := json.NewDecoder(r.Body).Decode(&m); err != nil || m.ID == nil {
		w.WriteHeader(http.StatusAccepted) // a notification
		return
	}
	reply, plain := s.answer(m)
	if r.URL.Path == "/msg" { // legacy SSE: answers go on the stream
		w.WriteHeader(http.StatusAccepted)
		s.stream <- func(w io.Writer) {
			if plain {
				fmt.Fprintf(w, "event: message\ndata: %s\n\n", reply)
				return
			}
			s.writeEvent(w, w.(http.Flusher), m.ID, m.Params.Name)
		}
		return
	}
	if plain {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, reply)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	s.writeEvent(w, fl, m.ID, m.Params.Name)
}

// The attack: a server answers a call over an event stream with ONE event
// of 64 MiB in 256 KiB data lines and no blank line until the end, while the
// cap is 1 MiB. Counted per line, every line passed and the SSE reader
// joined them all. Counted per event, the host allocates far less than the
// event: a response whose id was read fails at once with the cap error and
// the connection answers the next call; junk whose id is lost ends the
// connection. A small call is the legitimate use and works.
func TestSSEEventOfEndlessDataLinesIsBounded(t *testing.T) {
	// Not parallel: the allocation it measures is the whole process's.
	tests := []struct {
		transport string
		withID    bool
	}{
		{config.TransportHTTP, true},
		{config.TransportHTTP, false},
		{config.TransportSSE, true},
		{config.TransportSSE, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s id=%v", tt.transport, tt.withID), func(t *testing.T) {
			ts := httptest.NewServer(&sseFloodServer{withID: tt.withID, stream: make(chan func(io.Writer))})
			t.Cleanup(ts.Close)
			url := ts.URL + "/mcp"
			if tt.transport == config.TransportSSE {
				url = ts.URL + "/sse"
			}
			srv := &config.Server{Name: "flood", Type: tt.transport, URL: url, MaxResultBytes: 1 << 20}
			exited := make(chan struct{})
			c := dial(t, srv, upstream.Options{OnExit: sync.OnceFunc(func() { close(exited) })})
			if got, err := call(c, "small"); err != nil || !strings.Contains(got, "small") {
				t.Fatalf("a small call: %q, %v", got, err)
			}
			var floodErr, nextErr error
			grew := allocated(func() {
				_, floodErr = call(c, "flood")
				if !tt.withID {
					<-exited // the connection was cut
				}
				_, nextErr = call(c, "small") // on legacy SSE, after the stream was drained
			})
			var tl *upstream.ResultTooLargeError
			if !errors.As(floodErr, &tl) || tl.Limit != 1<<20 || tl.Ended == tt.withID {
				t.Fatalf("the flood call: %v, want a cap error (ended: %v)", floodErr, !tt.withID)
			}
			if tt.withID && nextErr != nil {
				t.Errorf("the call after the flood: %v", nextErr)
			}
			if !tt.withID && !upstream.IsConnectionClosed(nextErr) {
				t.Errorf("the call after the cut: %v, want a closed connection", nextErr)
			}
			if grew > floodBytes/2 {
				t.Errorf("the host allocated %d MiB for a %d MiB event under a 1 MiB cap", grew>>20, floodBytes>>20)
			}
			t.Logf("allocated %.1f MiB for a %d MiB event", float64(grew)/(1<<20), floodBytes>>20)
		})
	}
}

// allocated returns how many bytes the process allocated while f ran.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
