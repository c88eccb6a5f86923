package mcpserver

import (
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// notify sends a notification to one session, params["_meta"] as its
// _meta; it is dropped (server.ErrNotificationChannelBlocked) when the
// session has no open stream and its queue is full.
func (s *Server) notify(sessionID, method string, params map[string]any) error {
	cs := s.sessions.clientOf(sessionID)
	if cs == nil {
		return server.ErrSessionNotFound
	}
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
