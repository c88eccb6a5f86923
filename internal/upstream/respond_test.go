package upstream_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/upstream"
)

// TestRespondLater holds server-everything's elicitation/create (the relay
// returns ErrRespondLater, so no response is sent and the tool call waits)
// and answers it afterwards with Conn.Respond, by the id ServerRequestID
// gave: the call completes with the answer's content, over stdio and
// streamable HTTP. Over HTTP a response on a session the server does not
// have fails with the server's refusal.
func TestRespondLater(t *testing.T) {
	for name, srv := range everythingServers(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			server := srv(t)
			c := dial(t, server, upstream.Options{})
			ids := make(chan json.RawMessage, 1)
			relay := &testRelay{answer: func(ctx context.Context, method string, _ json.RawMessage) (json.RawMessage, error) {
				id, ok := upstream.ServerRequestID(ctx)
				if !ok || method != "elicitation/create" {
					return nil, fmt.Errorf("unexpected %s (id %v)", method, ok)
				}
				ids <- id
				return nil, fmt.Errorf("held: %w", upstream.ErrRespondLater)
			}}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			type outcome struct {
				res json.RawMessage
				err error
			}
			done := make(chan outcome, 1)
			go func() {
				res, err := c.CallTool(upstream.WithRelay(ctx, relay), "trigger-elicitation-request", json.RawMessage(`{}`), nil)
				done <- outcome{res, err}
			}()
			var id json.RawMessage
			select {
			case id = <-ids:
			case o := <-done:
				t.Fatalf("the call ended before its elicitation: %s %v", o.res, o.err)
			}
			if err := c.Respond(ctx, id, json.RawMessage(`{"action": "accept", "content": {"name": "Ada Lovelace-7f3e"}}`)); err != nil {
				t.Fatalf("Respond: %v", err)
			}
			o := <-done
			if o.err != nil || !strings.Contains(string(o.res), "Ada Lovelace-7f3e") {
				t.Errorf("call after the response: %s %v, want the answer's content", o.res, o.err)
			}
			if server.Type != config.TransportHTTP {
				return
			}
			gone, err := upstream.Resume(ctx, server, upstream.Options{}, "no-such-session", c.ProtocolVersion())
			if err != nil {
				t.Fatal(err)
			}
			defer gone.Close()
			// server-everything answers 400 for a session it does not have.
			if err := gone.Respond(ctx, id, json.RawMessage(`{"action": "decline"}`)); err == nil || !strings.Contains(err.Error(), "HTTP 400") {
				t.Errorf("Respond on a session the server does not have: %v, want its refusal", err)
			}
		})
	}
}
