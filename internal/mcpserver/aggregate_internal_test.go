package mcpserver

import (
	"context"
	"errors"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// mcp-go reports a session's blocked notification channel to OnError with
// a map (session.go); the hook must take it, and still drop a failed
// list's parked page.
func TestOnErrorTakesEveryMessageMCPGoSends(t *testing.T) {
	s := &Server{agg: newAggregate(0)}
	hooks := &server.Hooks{}
	s.aggregateHooks(hooks)
	list := &mcp.ListResourcesRequest{}
	s.agg.pending.Store(list, listPage{})
	for _, message := range []any{
		map[string]any{"method": "notifications/resources/list_changed", "sessionID": "s"},
		list,
	} {
		for _, hook := range hooks.OnError {
			hook(context.Background(), nil, "notification", message, errors.New("notification channel blocked"))
		}
	}
	if _, ok := s.agg.pending.Load(list); ok {
		t.Error("a failed list's page stayed parked")
	}
}
