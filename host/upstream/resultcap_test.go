package upstream_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
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

// brokenServer answers initialize, and tools/call by the tool's name:
// "noid" with 4 MiB whose id is missing, "notify" with a 4 MiB notification
// before a small result, anything else with a small result.
func brokenServer() {
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
		default:
			fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32601,"message":"no"}}`+"\n", req.ID)
		}
		out.Flush()
	}
}

func dialBroken(t *testing.T, onExit func()) *upstream.Conn {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	srv := &config.Server{Name: "broken", Type: config.TransportStdio, Command: exe,
		Env: config.Pairs{{Key: brokenServerEnv, Value: "1"}}, MaxResultBytes: 1 << 20}
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
