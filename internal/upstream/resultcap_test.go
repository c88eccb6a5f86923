package upstream_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/upstream"
)

// brokenServerEnv makes the test binary a stdio MCP server that misbehaves
// on purpose (see brokenServer).
const brokenServerEnv = "ANTLER_TEST_BROKEN_MCP_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(brokenServerEnv) == "1" {
		brokenServer()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// Pages of the broken server's tools/list: how many come before the last
// one, and how many bytes of description each tool has.
const (
	brokenPagesEnv     = "ANTLER_TEST_BROKEN_PAGES"
	brokenPageBytesEnv = "ANTLER_TEST_BROKEN_PAGE_BYTES"
	// brokenFloodEnv makes the server, once initialized, stop reading its
	// stdin and send this many roots/list requests, then say "flood done"
	// on stderr and hang.
	brokenFloodEnv = "ANTLER_TEST_BROKEN_FLOOD"
	// brokenFloodFormatEnv, when set, is the flood's request, a format of
	// its id (floodSpellings); else a padded roots/list.
	brokenFloodFormatEnv = "ANTLER_TEST_BROKEN_FLOOD_FORMAT"
	// askPings is how many pings the tool "ask" sends at once before it
	// reads the replies and answers.
	askPings = 100
)

// brokenServer answers initialize; tools/list with one tool per page and a
// new cursor for brokenPagesEnv pages; and tools/call by the tool's name:
// "noid" with 4 MiB whose id is missing, "notify" with a 4 MiB notification
// before a small result, "ask" with the number of replies to askPings pings
// it sent first, "endless" with the start of a reply (its id first) that
// grows past 4 MiB and never ends, anything else with a small result;
// "hang" never; "big" with 4 MiB; and
// says "cancelled <id>" on stderr for each notifications/cancelled.
func brokenServer() {
	flood, _ := strconv.Atoi(os.Getenv(brokenFloodEnv))
	var asking json.RawMessage // the "ask" call waiting for its pongs
	pongs := 0
	pages, _ := strconv.Atoi(os.Getenv(brokenPagesEnv))
	pageBytes, _ := strconv.Atoi(os.Getenv(brokenPageBytesEnv))
	pad := strings.Repeat("p", pageBytes)
	page := 0
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	big := strings.Repeat("x", 4<<20)
	reply := func(id json.RawMessage, result string) {
		fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", id, result)
	}
	for in.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string          `json:"name"`
				RequestID json.RawMessage `json:"requestId"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &req) != nil {
			continue
		}
		if req.Method == "notifications/cancelled" {
			fmt.Fprintf(os.Stderr, "cancelled %s\n", req.Params.RequestID)
		}
		if req.ID == nil {
			continue
		}
		switch req.Method {
		case "initialize":
			reply(req.ID, `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"broken","version":"1"}}`)
			if flood > 0 {
				out.Flush()
				floodRequests(out, flood)
			}
		case "": // the host's reply to a ping
			if pongs++; pongs == askPings {
				reply(asking, fmt.Sprintf(`{"content":[{"type":"text","text":"pongs %d"}]}`, pongs))
			}
		case "tools/call":
			switch req.Params.Name {
			case "ask":
				asking, pongs = req.ID, 0
				for i := range askPings {
					fmt.Fprintf(out, `{"jsonrpc":"2.0","id":"s%d","method":"ping"}`+"\n", i)
				}
			case "noid":
				fmt.Fprintf(out, `{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":"%s"}]}}`+"\n", big)
			case "endless":
				fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"%s`, req.ID, big)
				out.Flush()
				select {}
			case "notify":
				fmt.Fprintf(out, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"%s"}}`+"\n", big)
				reply(req.ID, `{"content":[{"type":"text","text":"after the notification"}]}`)
			default:
				reply(req.ID, fmt.Sprintf(`{"content":[{"type":"text","text":"pid %d"}]}`, os.Getpid()))
			}
		case "hang": // never answered
		case "big":
			reply(req.ID, fmt.Sprintf(`{"text":"%s"}`, big))
		case "tools/list":
			next := ""
			if page < pages {
				next = fmt.Sprintf(`,"nextCursor":"c%d"`, page+1)
			}
			reply(req.ID, fmt.Sprintf(`{"tools":[{"name":"t%d","description":"%s","inputSchema":{"type":"object"}}]%s}`, page, pad, next))
			page++
		default:
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"no"}}`+"\n", req.ID)
		}
		out.Flush()
	}
}

// floodRequests writes n server requests without reading a reply, then
// says so on stderr and hangs until it is killed.
func floodRequests(out *bufio.Writer, n int) {
	format := os.Getenv(brokenFloodFormatEnv)
	if format == "" {
		format = `{"jsonrpc":"2.0","id":%d,"method":"roots/list","params":{"_meta":{"pad":"` + strings.Repeat("r", 1<<10) + `"}}}`
	}
	for i := range n {
		fmt.Fprintf(out, format+"\n", i)
	}
	out.Flush()
	fmt.Fprintln(os.Stderr, "flood done")
	select {}
}

func dialBroken(t *testing.T, onExit func(), env ...config.Pair) *upstream.Conn {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	srv := &config.Server{Name: "broken", Type: config.TransportStdio, Command: exe,
		Env: append(config.Pairs{{Key: brokenServerEnv, Value: "1"}}, env...), MaxResultBytes: 1 << 20}
	return dial(t, srv, upstream.Options{OnExit: onExit})
}

// dial connects to srv for the length of the test.
func dial(t testing.TB, srv *config.Server, opts upstream.Options) *upstream.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := upstream.Dial(ctx, srv, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func call(c *upstream.Conn, tool string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	raw, err := c.CallTool(ctx, tool, json.RawMessage(`{}`), nil)
	return string(raw), err
}

// A 4 MiB response without an id cannot be failed by itself: the
// connection ends, the call fails with the cap error at once (no wait for a
// timeout), the session's OnExit runs so a pool evicts it, and the
// connection refuses further calls as closed.
func TestOversizeMessageWithoutIDEndsTheSession(t *testing.T) {
	t.Parallel()
	exited := make(chan struct{})
	c := dialBroken(t, func() { close(exited) })
	if _, err := call(c, "ok"); err != nil {
		t.Fatalf("a small call: %v", err)
	}
	_, err := call(c, "noid")
	var tl *upstream.ResultTooLargeError
	if !errors.As(err, &tl) || !tl.Ended || tl.Limit != 1<<20 || !upstream.IsConnectionClosed(err) {
		t.Fatalf("got %v, want an ended cap error", err)
	}
	<-exited
	if _, err := call(c, "ok"); !upstream.IsConnectionClosed(err) {
		t.Errorf("a call after the cut: %v, want a closed connection", err)
	}
}

// A reply that passes max_result_bytes fails its call as soon as its id is
// known, without waiting for an end that never comes.
func TestEndlessReplyFailsItsCallAtOnce(t *testing.T) {
	t.Parallel()
	c := dialBroken(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := c.CallTool(ctx, "endless", json.RawMessage(`{}`), nil)
	var tl *upstream.ResultTooLargeError
	if !errors.As(err, &tl) || tl.Ended || tl.Limit != 1<<20 {
		t.Fatalf("got %v, want the cap error of this call", err)
	}
}

// A 4 MiB notification is dropped: the call it came with, and the next,
// succeed on the same session.
func TestOversizeNotificationIsDropped(t *testing.T) {
	t.Parallel()
	c := dialBroken(t, nil)
	before, err := call(c, "ok")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := call(c, "notify"); err != nil || !strings.Contains(got, "after the notification") {
		t.Fatalf("the call behind an oversize notification: %q, %v", got, err)
	}
	if after, err := call(c, "ok"); err != nil || after != before {
		t.Errorf("the session did not survive: %q then %q, %v", before, after, err)
	}
}

// The attack: a server answers every tools/list with a page under the cap
// and a new cursor. mcp-go follows cursors for as long as they come, so the
// listing as a whole is bounded: past max_result_bytes over all its pages,
// or past MaxListPages pages however small, it fails with an error naming
// the limit, having held no more than the limit, and the session still
// answers calls. A listing of a few pages within the cap is the legitimate
// use and arrives whole.
func TestPagesOfOneListingAreBoundedTogether(t *testing.T) {
	// Not parallel: the allocation it measures is the whole process's.
	tests := []struct {
		name             string
		pages, pageBytes int
		want             *upstream.ListingTooLargeError
		tools            int
	}{
		{name: "200 pages of 256 KiB pass the cap together", pages: 200, pageBytes: 256 << 10,
			want: &upstream.ListingTooLargeError{Limit: 1 << 20}},
		{name: "1,500 tiny pages pass the page limit", pages: 1500, pageBytes: 10,
			want: &upstream.ListingTooLargeError{Pages: upstream.MaxListPages}},
		{name: "a few pages within the cap", pages: 3, pageBytes: 100 << 10, tools: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := dialBroken(t, nil, config.Pair{Key: brokenPagesEnv, Value: strconv.Itoa(tt.pages)},
				config.Pair{Key: brokenPageBytesEnv, Value: strconv.Itoa(tt.pageBytes)})
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var tools []upstream.Tool
			var err error
			grew := allocated(func() { tools, err = c.ListTools(ctx) })
			if tt.want == nil {
				if err != nil || len(tools) != tt.tools {
					t.Fatalf("got %d tools, %v; want %d", len(tools), err, tt.tools)
				}
			} else {
				var tl *upstream.ListingTooLargeError
				if !errors.As(err, &tl) || *tl != *tt.want {
					t.Fatalf("got %d tools, %v; want %v", len(tools), err, tt.want)
				}
				if !strings.Contains(err.Error(), tt.want.Error()) {
					t.Errorf("the error %q does not name the limit", err)
				}
			}
			if total := uint64(tt.pages * tt.pageBytes); tt.want != nil && tt.want.Limit > 0 && grew > total/4 {
				t.Errorf("listing %d MiB of pages allocated %d MiB under a 1 MiB cap", total>>20, grew>>20)
			}
			t.Logf("allocated %.1f MiB", float64(grew)/(1<<20))
			if _, err := call(c, "ok"); err != nil {
				t.Errorf("a call after the listing: %v", err)
			}
		})
	}
}

// The attack: once initialized, a stdio child stops reading its stdin and
// floods requests to the host. mcp-go started a goroutine per request, each
// stuck writing its reply to the full pipe (59,000 in 12 s). Now the host
// stops reading the child while 32 requests are unanswered, and a reply
// stuck past the write timeout ends the session: OnExit runs (the pool
// evicts it) with the goroutines bounded, the child never gets its 100,000
// requests out, and the connection reports itself closed. A burst of 100
// pings answered during a call is the legitimate use and works.
func TestRequestFloodFromAChildThatStopsReadingEndsTheSession(t *testing.T) {
	// Not parallel: it counts the process's goroutines.
	t.Run("a burst of pings during a call", func(t *testing.T) {
		c := dialBroken(t, nil)
		if got, err := call(c, "ask"); err != nil || !strings.Contains(got, fmt.Sprintf("pongs %d", askPings)) {
			t.Fatalf("the call that pings: %q, %v", got, err)
		}
		if _, err := call(c, "ok"); err != nil {
			t.Errorf("the call after: %v", err)
		}
	})
	for name, format := range floodSpellings {
		t.Run("a flood from a child that stops reading, "+name, func(t *testing.T) {
			floodFromAChild(t, format)
		})
	}
}

// floodSpellings are server requests as a hostile server may spell them,
// each a format of its id: small (many in one read of the pipe or the
// stream), and with keys JSON lets be spelled other ways, which mcp-go
// reads as a request all the same (encoding/json matches a field in any
// case, and decodes escapes). "" is the padded roots/list.
var floodSpellings = map[string]string{
	"padded roots/list":     "",
	"small pings":           `{"jsonrpc":"2.0","id":%d,"method":"ping"}`,
	"ID in capitals":        `{"jsonrpc":"2.0","ID":%d,"method":"ping"}`,
	"Method in capitals":    `{"jsonrpc":"2.0","id":%d,"Method":"ping"}`,
	"an escaped id key":     `{"jsonrpc":"2.0","\u0069d":%d,"method":"ping"}`,
	"an escaped method key": `{"jsonrpc":"2.0","id":%d,"\u006dethod":"ping"}`,
}

// floodFromAChild is the flood of a child that stops reading, its requests
// spelled format.
func floodFromAChild(t *testing.T, format string) {
	before := runtime.NumGoroutine()
	atExit := make(chan int, 1)
	floodDone := make(chan struct{})
	log := slog.New(&stderrWatch{line: "flood done", seen: sync.OnceFunc(func() { close(floodDone) })})
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	srv := &config.Server{Name: "flood", Type: config.TransportStdio, Command: exe, MaxResultBytes: 1 << 20,
		Env: config.Pairs{{Key: brokenServerEnv, Value: "1"}, {Key: brokenFloodEnv, Value: "100000"}, {Key: brokenFloodFormatEnv, Value: format}}}
	c := dial(t, srv, upstream.Options{Logger: log, OnExit: func() { atExit <- runtime.NumGoroutine() }})
	select {
	case n := <-atExit:
		if n-before > 500 {
			t.Errorf("%d goroutines when the session ended (%d before)", n, before)
		}
		t.Logf("%d goroutines when the session ended (%d before)", n, before)
	case <-floodDone:
		t.Fatalf("the child sent all its requests: %d goroutines (%d before)", runtime.NumGoroutine(), before)
	}
	if _, err := call(c, "ok"); !upstream.IsConnectionClosed(err) {
		t.Errorf("a call after the session ended: %v, want a closed connection", err)
	}
}

// stderrWatch is a log handler that reports a line of a child's stderr.
type stderrWatch struct {
	line string
	seen func()
}

func (w *stderrWatch) Enabled(context.Context, slog.Level) bool { return true }
func (w *stderrWatch) WithAttrs([]slog.Attr) slog.Handler       { return w }
func (w *stderrWatch) WithGroup(string) slog.Handler            { return w }
func (w *stderrWatch) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "line" && a.Value.String() == w.line {
			w.seen()
		}
		return true
	})
	return nil
}
