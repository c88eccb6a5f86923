package upstream

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// askedRelay counts the requests it is asked.
type askedRelay struct{ asked atomic.Int64 }

func (r *askedRelay) Notify(string, json.RawMessage) {}

func (r *askedRelay) Request(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	r.asked.Add(1)
	return json.RawMessage(`{"action":"decline"}`), nil
}

// TestUntiedRequestIsNeverGuessed: a server request that names no call (it
// came on no call's stream) goes, on stdio, to the call in flight; on a
// connection shared by users it is refused even when exactly one call is
// in flight, since it may be about another user's call that already ended.
// (mcp-go's SSE client drops server requests before the host sees them,
// and its streamable HTTP client opens no GET stream: this is the rule
// for whatever transport hands one over.)
func TestUntiedRequestIsNeverGuessed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		shared bool
		asked  int64
	}{
		{name: "stdio", shared: false, asked: 1},
		{name: "shared", shared: true, asked: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := newRelays(tc.shared, 0, nil, nil)
			alice := &askedRelay{}
			_, _, end := rs.begin(context.Background(), alice, nil)
			defer end()
			next := func(context.Context, transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
				t.Fatal("a relayed method reached the next handler")
				return nil, nil
			}
			resp, err := rs.handler(next)(context.Background(), transport.JSONRPCRequest{
				JSONRPC: mcp.JSONRPC_VERSION, ID: mcp.NewRequestId(int64(1)), Method: string(mcp.MethodElicitationCreate),
				Params: map[string]any{"message": "bob's OTP?", "requestedSchema": map[string]any{"type": "object"}},
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := alice.asked.Load(); got != tc.asked {
				t.Errorf("the call in flight was asked %d times, want %d", got, tc.asked)
			}
			refused := resp.Error != nil && strings.Contains(resp.Error.Message, ErrNoRelay.Error())
			if refused != (tc.asked == 0) {
				t.Errorf("response %+v %+v: refused %v, want %v", resp.Result, resp.Error, refused, tc.asked == 0)
			}
		})
	}
}
