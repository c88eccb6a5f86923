package toolcache_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/dispatch"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/testnpm"
	"github.com/antler-mcp/antler/internal/toolcache"
	"github.com/antler-mcp/antler/internal/upstream"
)

// TestSendReadsResourcesThroughThePooledSession drives server-everything's
// resources over stdio with ToolSet.Send: the request runs in the caller's
// (user, thread) session, the one its tool calls use, and its failures are
// model-safe CallErrors.
func TestSendReadsResourcesThroughThePooledSession(t *testing.T) {
	index := testnpm.Everything(t)
	b := newBundle(t, doc(`"everything": {"command": "node", "args": ["`+index+`"]}`))
	s := b.snap()
	ctx := context.Background()
	alice := dispatch.Request{UserID: "alice", ThreadID: "t1"}

	list := alice
	list.Method = "resources/list"
	raw, err := s.Send(ctx, "everything", list, nil)
	if err != nil {
		t.Fatalf("resources/list: %v", err)
	}
	var listed struct {
		Resources []struct {
			URI string `json:"uri"`
		} `json:"resources"`
	}
	if err := json.Unmarshal(raw, &listed); err != nil || len(listed.Resources) == 0 {
		t.Fatalf("resources/list = %s (%v), want resources", raw, err)
	}
	uri := listed.Resources[0].URI

	read := alice
	read.Method = "resources/read"
	read.Params, _ = json.Marshal(map[string]string{"uri": uri})
	read.Meta = map[string]any{"progressToken": "p1", "headers": map[string]string{"X-Forged": "1"}}
	raw, err = s.Send(ctx, "everything", read, nil)
	if err != nil {
		t.Fatalf("resources/read %s: %v", uri, err)
	}
	var contents struct {
		Contents []struct {
			URI string `json:"uri"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(raw, &contents); err != nil || len(contents.Contents) == 0 || contents.Contents[0].URI != uri {
		t.Fatalf("resources/read = %s (%v), want the contents of %s", raw, err, uri)
	}
	if got := status(t, s, "everything").Sessions; got != 1 {
		t.Errorf("sessions after alice's requests = %d, want 1 (discovery keeps none)", got)
	}

	// A tool call in the same thread reuses the session; another user's
	// request gets one of its own.
	echo := alice
	echo.Name, echo.Arguments = "everything_echo", json.RawMessage(`{"message": "hi"}`)
	if _, err := s.Invoke(ctx, echo); err != nil {
		t.Fatalf("echo: %v", err)
	}
	if got := status(t, s, "everything").Sessions; got != 1 {
		t.Errorf("sessions after alice's tool call = %d, want the same 1", got)
	}
	bob := read
	bob.UserID = "bob"
	if _, err := s.Send(ctx, "everything", bob, nil); err != nil {
		t.Fatalf("bob's resources/read: %v", err)
	}
	if got := status(t, s, "everything").Sessions; got != 2 {
		t.Errorf("sessions after bob's request = %d, want 2", got)
	}

	tests := []struct {
		name   string
		server string
		method string
		params string
		check  func(t *testing.T, err error)
	}{
		{"server error", "everything", "resources/read", `{"uri": "nope://missing"}`, func(t *testing.T, err error) {
			var ce *dispatch.CallError
			if !errors.As(err, &ce) || ce.Method != "resources/read" || ce.Server != "everything" ||
				!strings.HasPrefix(ce.Message, "MCP server 'everything' returned an error for 'resources/read': ") {
				t.Errorf("err = %#v, want a CallError naming the server and method", err)
			}
		}},
		{"unknown method", "everything", "antler/nothing", `{}`, func(t *testing.T, err error) {
			var ce *dispatch.CallError
			if !errors.As(err, &ce) || !strings.Contains(ce.Message, "'antler/nothing'") {
				t.Errorf("err = %#v, want a CallError naming the method", err)
			}
		}},
		{"unknown server", "nowhere", "resources/list", ``, func(t *testing.T, err error) {
			if !errors.Is(err, toolcache.ErrUnknownServer) {
				t.Errorf("err = %v, want ErrUnknownServer", err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := alice
			req.Method, req.Params = tt.method, json.RawMessage(tt.params)
			raw, err := s.Send(ctx, tt.server, req, nil)
			if err == nil {
				t.Fatalf("got %s, want an error", raw)
			}
			tt.check(t, err)
		})
	}
}

// TestSendPutsCredentialHeadersOnTheWire runs an Op on an HTTP server's
// shared connection: user_auth's header reaches the server (the demo's
// whoami reports it), and a user without a credential is denied with
// DeerFlow's message before anything is sent.
func TestSendPutsCredentialHeadersOnTheWire(t *testing.T) {
	testmcp.Build(t)
	url := testmcp.StartHTTP(t, "http")
	b := newBundle(t, doc(`"remote": {"type": "http", "url": "`+url+`/mcp", "headers": {"X-Static": "s"},
		"user_auth": {"header": "X-User-Token", "users": {"alice": "tok-a"}}}`))
	s := b.snap()
	whoami := func(ctx context.Context, conn *upstream.Conn) (json.RawMessage, error) {
		return conn.Request(ctx, "tools/call", json.RawMessage(`{"name": "whoami", "arguments": {}}`))
	}
	raw, err := s.Send(context.Background(), "remote", dispatch.Request{Method: "antler/whoami", UserID: "alice"}, whoami)
	if err != nil {
		t.Fatalf("send as alice: %v", err)
	}
	var res struct {
		StructuredContent struct {
			Headers map[string]string `json:"headers"`
		} `json:"structuredContent"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	if h := res.StructuredContent.Headers; h["x-user-token"] != "tok-a" || h["x-static"] != "s" {
		t.Errorf("headers on the wire = %v, want x-user-token tok-a and x-static s", h)
	}

	sent := false
	_, err = s.Send(context.Background(), "remote", dispatch.Request{Method: "antler/whoami", UserID: "bob"},
		func(ctx context.Context, conn *upstream.Conn) (json.RawMessage, error) {
			sent = true
			return whoami(ctx, conn)
		})
	var ce *dispatch.CallError
	if !errors.As(err, &ce) || !ce.Denied || !strings.Contains(ce.Message, "user id 'bob'") || sent {
		t.Errorf("bob: err = %v (sent %v), want a denial before the op ran", err, sent)
	}
}
