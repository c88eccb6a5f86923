package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/antler-mcp/antler/internal/jsonscan"
)

// The raw tools/call. mcp-go's CallTool decodes every result into a typed
// CallToolResult that Antler throws away (it keeps the bytes), so calls go
// raw instead (Request's send), and the multi round-trip exchange of 2026-07-28
// (SEP-2322: a result of resultType input_required, whose questions the
// call's relay answers before the call is sent again with the answers) is
// driven here with mcp-go's limits. Only a result that says input_required
// is decoded.

const (
	// maxInputRoundTrips bounds the retries of one call with answers, as
	// mcp-go's client does by default.
	maxInputRoundTrips = 10
	// maxLoadShedding bounds consecutive input_required results asking for
	// nothing (a server shedding load), as mcp-go's client does.
	maxLoadShedding = 3
)

// callParams are a tools/call request's params as the raw path sends them:
// the fields mcp-go's CallToolParams writes.
type callParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Meta      map[string]any  `json:"_meta,omitempty"`
	// Task is params.task: a 2025-11-25 task-augmented call.
	Task json.RawMessage `json:"task,omitempty"`
	mcp.MultiRoundTripParams
}

// encodeCallParams is json.Marshal(p), written directly for the usual call
// (a plain name and valid arguments, nothing else), which skips the
// reflection walk and the re-encoding of the arguments on every call. The
// bytes may differ from json.Marshal's (no HTML escaping, whitespace kept)
// but decode to the same value.
func encodeCallParams(p callParams) (json.RawMessage, error) {
	if len(p.Meta) > 0 || len(p.Task) > 0 || p.InputResponses != nil || p.RequestState != "" ||
		!plainJSONString(p.Name) || (len(p.Arguments) > 0 && !jsonscan.Valid(p.Arguments)) {
		return json.Marshal(p)
	}
	b := make([]byte, 0, len(`{"name":"","arguments":}`)+len(p.Name)+len(p.Arguments))
	b = append(append(append(b, `{"name":"`...), p.Name...), '"')
	if len(p.Arguments) > 0 {
		b = append(append(b, `,"arguments":`...), p.Arguments...)
	}
	return append(b, '}'), nil
}

// plainJSONString reports whether s is written in JSON as itself between
// quotes, as json.Marshal would write it: printable ASCII without '"',
// '\\' or the HTML characters it escapes.
func plainJSONString(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// callRaw sends tools/call as Request does (relay, result cap, protocol
// _meta, cancellation), the _meta put in before the params are encoded,
// and answers input_required results until the final one.
func (c *Conn) callRaw(ctx context.Context, name string, args json.RawMessage, meta map[string]any) (json.RawMessage, error) {
	return c.callParams(ctx, callParams{Name: name, Arguments: args, Meta: meta})
}

// CallToolAsTask calls the tool as a 2025-11-25 task: task is params.task
// ({"ttl": ms} or {}), and the server answers with a CreateTaskResult,
// returned raw like CallTool's result.
func (c *Conn) CallToolAsTask(ctx context.Context, name string, args json.RawMessage, meta map[string]any, task json.RawMessage) (json.RawMessage, error) {
	return c.callParams(ctx, callParams{Name: name, Arguments: args, Meta: meta, Task: task})
}

// callParams sends p (see callRaw).
func (c *Conn) callParams(ctx context.Context, p callParams) (json.RawMessage, error) {
	meta := p.Meta
	modern := mcp.IsModernProtocol(c.protocol)
	if !modern && len(meta) > 0 {
		meta = c.callLogLevel(ctx, meta)
		p.Meta = meta
	}
	shed := 0
	for attempt := 1; ; attempt++ {
		// A caller's _meta gets the protocol fields before encoding; without
		// one they are spliced into the encoded params. (Again each round:
		// the log level may have changed.)
		if modern && len(meta) > 0 {
			var err error
			if p.Meta, err = c.withCallMeta(ctx, meta); err != nil {
				return nil, &RPCError{Code: mcp.INVALID_PARAMS, Message: "tools/call: " + err.Error()}
			}
		}
		params, err := encodeCallParams(p)
		if err != nil {
			return nil, &RPCError{Code: mcp.INVALID_PARAMS, Message: "tools/call: " + err.Error()}
		}
		if modern && len(meta) == 0 {
			if params, err = c.withProtocolMeta(ctx, params, true); err != nil {
				return nil, &RPCError{Code: mcp.INVALID_PARAMS, Message: "tools/call: " + err.Error()}
			}
		}
		raw, err := c.send(ctx, string(mcp.MethodToolsCall), params, modern)
		if err != nil || !bytes.Contains(raw, []byte(`"input_required"`)) {
			return raw, err
		}
		res, err := mcp.ParseCallToolResult((*json.RawMessage)(&raw))
		if err != nil || !res.NeedsInput() {
			return raw, nil // the words were in the content; the bytes stay the server's
		}
		if shed = shed + 1; len(res.InputRequests) > 0 {
			shed = 0
		}
		switch {
		case shed >= maxLoadShedding:
			return nil, fmt.Errorf("tools/call: %w: server asked to retry %d times without requesting input", client.ErrMaxInputRoundTripsExceeded, shed)
		case attempt >= maxInputRoundTrips:
			return nil, fmt.Errorf("tools/call: %w (%d)", client.ErrMaxInputRoundTripsExceeded, maxInputRoundTrips)
		}
		answers, err := c.answerInputs(ctx, res.InputRequests)
		if err != nil {
			return nil, err
		}
		p.MultiRoundTripParams = mcp.MultiRoundTripParams{InputResponses: answers, RequestState: res.RequestState}
	}
}

// answerInputs asks the call's relay each question of an input_required
// result, at once (they are independent); the first failure fails all.
func (c *Conn) answerInputs(ctx context.Context, requests mcp.InputRequests) (mcp.InputResponses, error) {
	if len(requests) == 0 {
		return nil, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	h := inputHandler{c.relays}
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		answers  = make(mcp.InputResponses, len(requests))
		firstErr error
	)
	for id, req := range requests {
		wg.Go(func() {
			ans, err := h.answer(ctx, req)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = fmt.Errorf("multi round-trip: input request %q: %w", id, err)
					cancel()
				}
				return
			}
			answers[id] = ans
		})
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	return answers, nil
}

// answer asks the relay one question. Roots are not offered upstream, so a
// roots/list question is refused, as mcp-go refuses it without a handler.
func (h inputHandler) answer(ctx context.Context, req mcp.InputRequest) (mcp.InputResponse, error) {
	switch {
	case req.Method == mcp.MethodElicitationCreate && req.Elicitation != nil:
		var res mcp.ElicitationResult
		if err := h.ask(ctx, string(req.Method), req.Elicitation, &res); err != nil {
			return mcp.InputResponse{}, err
		}
		return mcp.NewElicitationInputResponse(res), nil
	case req.Method == mcp.MethodSamplingCreateMessage && req.Sampling != nil:
		var res mcp.CreateMessageResult
		if err := h.ask(ctx, string(req.Method), req.Sampling, &res); err != nil {
			return mcp.InputResponse{}, err
		}
		return mcp.NewSamplingInputResponse(res), nil
	}
	return mcp.InputResponse{}, fmt.Errorf("unsupported input request %q", req.Method)
}
