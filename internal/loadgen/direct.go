package loadgen

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// direct is one worker's own stdio server, called with mcp-go's client: the
// baseline every gateway is compared with.
type direct struct {
	c   *client.Client
	req mcp.CallToolRequest
}

var _ caller = (*direct)(nil)

func newDirect(ctx context.Context, opts Options) (*direct, error) {
	c, err := client.NewStdioMCPClient(opts.Command, append(os.Environ(), opts.Env...), opts.Args...)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", opts.Command, err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = opts.ProtocolVersion
	init.Params.ClientInfo = mcp.Implementation{Name: "antler-load", Version: "0"}
	if _, err := c.Initialize(ctx, init); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("initialize %s: %w", opts.Command, err)
	}
	d := &direct{c: c}
	d.req.Params.Name = opts.Tool
	d.req.Params.Arguments = json.RawMessage(opts.Arguments)
	return d, nil
}

func (d *direct) call(ctx context.Context, _ int) error {
	res, err := d.c.CallTool(ctx, d.req)
	if err != nil {
		return err
	}
	if !res.IsError {
		return nil
	}
	r := toolResult{IsError: true}
	if len(res.Content) > 0 {
		if tc, ok := mcp.AsTextContent(res.Content[0]); ok {
			r.Content = []textContent{{Text: tc.Text}}
		}
	}
	return r.err()
}

func (d *direct) close() error { return d.c.Close() }
