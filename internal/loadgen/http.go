package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
)

// maxBody bounds how much of one response is read, so a runaway server
// cannot exhaust the generator's memory.
const maxBody = 16 << 20

// Header names of the streamable HTTP transport.
const (
	headerSession  = "Mcp-Session-Id"
	headerProtocol = "MCP-Protocol-Version"
)

// ErrToolResult marks, wrapped with the result's first text, a call that
// returned a tool result with isError.
var ErrToolResult = errors.New("tool result has isError")

// maxErrorText bounds how much of a failed result's text an error carries.
const maxErrorText = 200

// toolResult is the part of a CallToolResult a run looks at.
type toolResult struct {
	IsError bool          `json:"isError"`
	Content []textContent `json:"content"`
}

// textContent is a content block's text (empty for other kinds).
type textContent struct {
	Text string `json:"text"`
}

// err is nil for a success, else ErrToolResult with the result's first text.
func (r *toolResult) err() error {
	if !r.IsError {
		return nil
	}
	text := ""
	if len(r.Content) > 0 {
		text = r.Content[0].Text
	}
	if len(text) > maxErrorText {
		text = text[:maxErrorText] + "…"
	}
	return fmt.Errorf("%w: %s", ErrToolResult, text)
}

// session is one worker's MCP session over streamable HTTP.
type session struct {
	hc      *http.Client
	url     string
	auth    string
	extra   http.Header
	version string
	id      string // Mcp-Session-Id; empty for a stateless server
	ready   bool   // initialize answered: later requests carry the version header
	// prefix and suffix frame a tools/call body around its request id.
	prefix, suffix []byte
}

var _ caller = (*session)(nil)

// newSession initializes a session: initialize, then
// notifications/initialized, as an MCP client does.
func newSession(ctx context.Context, opts Options, hc *http.Client) (*session, error) {
	params, err := json.Marshal(map[string]any{"name": opts.Tool, "arguments": opts.Arguments})
	if err != nil {
		return nil, fmt.Errorf("encode call params: %w", err)
	}
	s := &session{
		hc:      hc,
		url:     opts.URL,
		auth:    opts.Authorization,
		extra:   opts.Header,
		version: opts.ProtocolVersion,
		prefix:  []byte(`{"jsonrpc":"2.0","id":`),
		suffix:  append(append([]byte(`,"method":"tools/call","params":`), params...), '}'),
	}
	init := fmt.Sprintf(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"antler-load","version":"0"}}}`, opts.ProtocolVersion)
	resp, err := s.post(ctx, []byte(init), false)
	if err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	if err := rpcOutcome(resp); err != nil {
		return nil, fmt.Errorf("initialize: %w", err)
	}
	s.ready = true
	if _, err := s.post(ctx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), true); err != nil {
		return nil, fmt.Errorf("notifications/initialized: %w", err)
	}
	return s, nil
}

func (s *session) call(ctx context.Context, seq int) error {
	body := make([]byte, 0, len(s.prefix)+len(s.suffix)+8)
	body = append(body, s.prefix...)
	body = strconv.AppendInt(body, int64(seq), 10)
	body = append(body, s.suffix...)
	resp, err := s.post(ctx, body, false)
	if err != nil {
		return err
	}
	return rpcOutcome(resp)
}

// close ends the session with DELETE, as a polite client does; a server
// that does not support it answers 405, which is fine.
func (s *session) close() error {
	if s.id == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), DefaultCallTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, s.url, nil)
	if err != nil {
		return fmt.Errorf("close session: %w", err)
	}
	s.headers(req)
	resp, err := s.hc.Do(req)
	if err != nil {
		return fmt.Errorf("close session: %w", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

func (s *session) headers(req *http.Request) {
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range s.extra {
		req.Header[k] = v
	}
	if s.auth != "" {
		req.Header.Set("Authorization", s.auth)
	}
	if s.id != "" {
		req.Header.Set(headerSession, s.id)
	}
	// The initialize request itself carries its version in the body.
	if s.ready {
		req.Header.Set(headerProtocol, s.version)
	}
}

// post sends one JSON-RPC message and returns the JSON-RPC response in the
// answer (a JSON body or the first SSE event carrying an id). A
// notification expects 202 or 200 and no response.
func (s *session) post(ctx context.Context, body []byte, notification bool) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	s.headers(req)
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	defer func() { _, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBody)) }()
	if id := resp.Header.Get(headerSession); id != "" && s.id == "" {
		s.id = id
	}
	if notification {
		if resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusOK {
			return nil, statusError(resp)
		}
		return nil, nil
	}
	if resp.StatusCode != http.StatusOK {
		return nil, statusError(resp)
	}
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct == "text/event-stream" {
		return sseResponse(resp.Body)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("read response: %w", err)
	}
	return data, nil
}

// sseResponse reads SSE events until one whose data is a JSON-RPC response
// (it has an id and a result or error); notifications before it are skipped.
func sseResponse(r io.Reader) ([]byte, error) {
	sc := bufio.NewScanner(io.LimitReader(r, maxBody))
	sc.Buffer(make([]byte, 0, 64<<10), maxBody)
	var data []byte
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 { // end of an event
			if isResponse(data) {
				return data, nil
			}
			data = data[:0]
			continue
		}
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			if len(data) > 0 {
				data = append(data, '\n')
			}
			data = append(data, bytes.TrimPrefix(v, []byte(" "))...)
		}
	}
	if isResponse(data) {
		return data, nil
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read event stream: %w", err)
	}
	return nil, errors.New("event stream ended without a response")
}

// isResponse reports whether data is a JSON-RPC response rather than a
// notification or request.
func isResponse(data []byte) bool {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	return len(data) > 0 && json.Unmarshal(data, &m) == nil && len(m.ID) > 0 && m.Method == ""
}

// rpcOutcome says whether a JSON-RPC response is a success: a result that is
// not a tool error.
func rpcOutcome(data []byte) error {
	var m struct {
		Result *toolResult `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return fmt.Errorf("decode response: %w", err)
	}
	switch {
	case m.Error != nil:
		return fmt.Errorf("JSON-RPC error %d: %s", m.Error.Code, m.Error.Message)
	case m.Result == nil:
		return errors.New("response has no result")
	}
	return m.Result.err()
}

// statusError describes an unexpected HTTP status, with the start of the
// body (servers put their reason there).
func statusError(resp *http.Response) error {
	snippet, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
	return fmt.Errorf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(snippet))
}

// restCaller posts to Antler's REST door.
type restCaller struct {
	hc    *http.Client
	url   string
	auth  string
	extra http.Header
	body  []byte
}

var _ caller = (*restCaller)(nil)

func newRESTCaller(opts Options, hc *http.Client) *restCaller {
	body, _ := json.Marshal(map[string]json.RawMessage{"arguments": opts.Arguments}) // Arguments is valid JSON (checked)
	return &restCaller{
		hc:    hc,
		url:   opts.URL + "/api/mcp/tools/" + url.PathEscape(opts.Tool) + "/call",
		auth:  opts.Authorization,
		extra: opts.Header,
		body:  body,
	}
}

func (c *restCaller) call(ctx context.Context, _ int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(c.body))
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range c.extra {
		req.Header[k] = v
	}
	if c.auth != "" {
		req.Header.Set("Authorization", c.auth)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return statusError(resp)
	}
	var res toolResult
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxBody)).Decode(&res); err != nil {
		return fmt.Errorf("decode response: %w", err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBody))
	return res.err()
}

func (c *restCaller) close() error { return nil }
