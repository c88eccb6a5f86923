package mcpserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// DefaultToolPageSize is the page size of tools/list when
// Options.ToolPageSize is 0: large, so an ordinary client sees one page.
const DefaultToolPageSize = 500

// ErrInvalidCursor answers a tools/list whose cursor this door did not
// issue: the client learns that much, never a decoder's text.
var ErrInvalidCursor = errors.New("invalid cursor")

// refuseBadToolCursor is an OnRequestInitialization hook: mcp-go pages
// tools/list by a base64 cursor and would answer one that is not with the
// decoder's error text. (The hook's error is -32600; mcp-go offers no way
// to answer -32602 with a text of the door's.)
func refuseBadToolCursor(_ context.Context, _ any, message any) error {
	raw, ok := message.(json.RawMessage)
	if !ok {
		return nil
	}
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Cursor *string `json:"cursor"`
		} `json:"params"`
	}
	if json.Unmarshal(raw, &msg) != nil || msg.Method != string(mcp.MethodToolsList) || msg.Params.Cursor == nil || *msg.Params.Cursor == "" {
		return nil
	}
	if _, err := base64.StdEncoding.DecodeString(*msg.Params.Cursor); err != nil {
		return ErrInvalidCursor
	}
	return nil
}

// toolPaging is mcp-go's list pagination at the tool page size. It pages
// every list mcp-go serves itself; the aggregated resource, template and
// prompt lists replace mcp-go's (a catch-all entry at most) and their
// cursor in their after-hooks (aggregate.go), so only tools/list is paged
// by it.
func toolPaging(size int) server.ServerOption {
	if size <= 0 {
		size = DefaultToolPageSize
	}
	return server.WithPaginationLimit(size)
}
