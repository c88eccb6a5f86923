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

// requestHead is what the door's request initialization hook reads of a
// request mcp-go is about to handle, in one decode.
type requestHead struct {
	Method mcp.MCPMethod `json:"method"`
	Params struct {
		Cursor *string `json:"cursor"`
		URI    string  `json:"uri"`
	} `json:"params"`
}

// initRequest is the door's one OnRequestInitialization hook (its error is
// the answer, -32600): it refuses a tools/list cursor the door did not
// issue, and admits the request under the caller's bounds (admitRequest).
func (s *Server) initRequest(ctx context.Context, _ any, message any) error {
	raw, ok := message.(json.RawMessage)
	if !ok {
		return nil
	}
	var msg requestHead
	if json.Unmarshal(raw, &msg) != nil {
		return nil
	}
	if err := checkToolCursor(msg); err != nil {
		return err
	}
	return s.admitRequest(ctx, msg)
}

// checkToolCursor refuses a tools/list cursor that is not base64: mcp-go
// pages tools/list by a base64 cursor and would answer one that is not with
// the decoder's error text. (mcp-go offers no way to answer -32602 with a
// text of the door's.)
func checkToolCursor(msg requestHead) error {
	if msg.Method != mcp.MethodToolsList || msg.Params.Cursor == nil || *msg.Params.Cursor == "" {
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
