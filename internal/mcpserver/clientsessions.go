package mcpserver

import (
	"context"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// clientSessions are mcp-go's registered sessions by id: notify needs one
// to send a notification whose _meta survives (mcp-go's
// SendNotificationToSpecificClient puts every param in AdditionalFields,
// whose "_meta" its NotificationParams.MarshalJSON drops).
type clientSessions struct{ by sync.Map }

func (c *clientSessions) hook(hooks *server.Hooks) {
	hooks.AddOnRegisterSession(func(_ context.Context, cs server.ClientSession) { c.by.Store(cs.SessionID(), cs) })
	hooks.AddOnUnregisterSession(func(_ context.Context, cs server.ClientSession) { c.by.CompareAndDelete(cs.SessionID(), cs) })
}

// notify sends a notification to one session, params["_meta"] as its
// _meta; it is dropped (server.ErrNotificationChannelBlocked) when the
// session has no open stream and its queue is full.
func (s *Server) notify(sessionID, method string, params map[string]any) error {
	v, ok := s.clients.by.Load(sessionID)
	if !ok {
		return server.ErrSessionNotFound
	}
	cs := v.(server.ClientSession)
	if !cs.Initialized() {
		return server.ErrSessionNotInitialized
	}
	fields := make(map[string]any, len(params))
	var meta map[string]any
	for k, v := range params {
		if m, isMap := v.(map[string]any); k == "_meta" && isMap {
			meta = m
			continue
		}
		fields[k] = v
	}
	n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{Method: method,
		Params: mcp.NotificationParams{Meta: meta, AdditionalFields: fields}}}
	if up, ok := cs.(server.SessionWithStreamableHTTPConfig); ok {
		up.UpgradeToSSEWhenReceiveNotification() // as mcp-go does for its own
	}
	select {
	case cs.NotificationChannel() <- n:
		return nil
	default:
		return server.ErrNotificationChannelBlocked
	}
}
