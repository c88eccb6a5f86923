package upstream_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/antler-mcp/antler/host/config"
	"github.com/antler-mcp/antler/host/upstream"
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
)

// brokenServer answers initialize; tools/list with one tool per page and a
// new cursor for brokenPagesEnv pages; and tools/call by the tool's name:
// "noid" with 4 MiB whose id is missing, "notify" with a 4 MiB notification
// before a small result, anything else with a small result.
func brokenServer() {
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
				Name string `json:"name"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &req) != nil || req.ID == nil {
			continue
		}
		switch req.Method {
		case "initialize":
			reply(req.ID, `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"broken","version":"1"}}`)
		case "tools/call":
			switch req.Params.Name {
			case "noid":
				fmt.Fprintf(out, `{"jsonrpc":"2.0","result":{"content":[{"type":"text","text":"%s"}]}}`+"\n", big)
			case "notify":
				fmt.Fprintf(out, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"%s"}}`+"\n", big)
				reply(req.ID, `{"content":[{"type":"text","text":"after the notification"}]}`)
			default:
				reply(req.ID, fmt.Sprintf(`{"content":[{"type":"text","text":"pid %d"}]}`, os.Getpid()))
			}
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
func dial(t *testing.T, srv *config.Server, opts upstream.Options) *upstream.Conn {
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
			if _, err := call(c, "ok"); err != nil {
				t.Errorf("a call after the listing: %v", err)
			}
		})
	}
}
