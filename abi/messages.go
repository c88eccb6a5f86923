package abi

import (
	"encoding/binary"
	"math"
)

// Header is one HTTP header (or one string map entry).
type Header struct {
	Name  string // 1
	Value string // 2
}

func encodeHeaders(e *Encoder, field int, hs []Header) {
	for _, h := range hs {
		// The embedded message's size is known up front: write it directly
		// instead of through Message's splice.
		size := 0
		if h.Name != "" {
			size += 1 + varintLen(uint64(len(h.Name))) + len(h.Name)
		}
		if h.Value != "" {
			size += 1 + varintLen(uint64(len(h.Value))) + len(h.Value)
		}
		e.tag(field, wireBytes)
		e.buf = binary.AppendUvarint(e.buf, uint64(size))
		e.String(1, h.Name)
		e.String(2, h.Value)
	}
}

func varintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

func decodeHeader(d *Decoder) Header {
	var h Header
	m := d.Message()
	for m.Next() {
		switch m.Field() {
		case 1:
			h.Name = m.String()
		case 2:
			h.Value = m.String()
		}
	}
	d.Fail(m.Err())
	return h
}

// InterceptRequest is what an interceptor sees of a tool call. Secrets holds
// values only when the plugin's configuration grants them; SecretNames always
// lists the keys the call carries.
type InterceptRequest struct {
	Server       string   // 1
	Transport    string   // 2
	Tool         string   // 3: the name agents see
	OriginalTool string   // 4: the upstream's own name
	Arguments    []byte   // 5: JSON object
	Headers      []Header // 6
	UserID       string   // 7
	ThreadID     string   // 8
	SecretNames  []string // 9
	Secrets      []Header // 10: only when granted
	Config       []byte   // 11: the plugin's config, JSON
}

// Encode appends the message to e.
func (r *InterceptRequest) Encode(e *Encoder) {
	e.String(1, r.Server)
	e.String(2, r.Transport)
	e.String(3, r.Tool)
	e.String(4, r.OriginalTool)
	e.BytesField(5, r.Arguments)
	encodeHeaders(e, 6, r.Headers)
	e.String(7, r.UserID)
	e.String(8, r.ThreadID)
	for _, n := range r.SecretNames {
		e.RepeatedString(9, n)
	}
	encodeHeaders(e, 10, r.Secrets)
	e.BytesField(11, r.Config)
}

// Decode reads the message from b. Repeated fields reuse r's capacity, so a
// guest that decodes into the same value on every call does not allocate.
func (r *InterceptRequest) Decode(b []byte) error {
	*r = InterceptRequest{Headers: r.Headers[:0], SecretNames: r.SecretNames[:0], Secrets: r.Secrets[:0]}
	d := Decoder{buf: b}
	for d.Next() {
		switch d.Field() {
		case 1:
			r.Server = d.String()
		case 2:
			r.Transport = d.String()
		case 3:
			r.Tool = d.String()
		case 4:
			r.OriginalTool = d.String()
		case 5:
			r.Arguments = d.Bytes()
		case 6:
			r.Headers = append(r.Headers, decodeHeader(&d))
		case 7:
			r.UserID = d.String()
		case 8:
			r.ThreadID = d.String()
		case 9:
			r.SecretNames = append(r.SecretNames, d.String())
		case 10:
			r.Secrets = append(r.Secrets, decodeHeader(&d))
		case 11:
			r.Config = d.Bytes()
		}
	}
	// Absent repeated fields read as nil, as from a fresh value.
	if len(r.Headers) == 0 {
		r.Headers = nil
	}
	if len(r.SecretNames) == 0 {
		r.SecretNames = nil
	}
	if len(r.Secrets) == 0 {
		r.Secrets = nil
	}
	return d.Err()
}

// Actions an interceptor can answer with.
const (
	ActionContinue = 0 // forward the call, with the changes in the response
	ActionDeny     = 1 // refuse the call; Message is shown to the model
)

// InterceptResponse is an interceptor's answer. The zero value (an empty
// message) continues unchanged.
type InterceptResponse struct {
	Action        uint64   // 1
	Message       string   // 2: model-safe denial text
	SetHeaders    []Header // 3: written case-insensitively, in order
	RemoveHeaders []string // 4
	Arguments     []byte   // 5: replacement arguments (JSON object) when non-nil
	Error         string   // 15: the plugin failed; the call fails closed
}

// Encode appends the message to e.
func (r *InterceptResponse) Encode(e *Encoder) {
	e.Uint(1, r.Action)
	e.String(2, r.Message)
	encodeHeaders(e, 3, r.SetHeaders)
	for _, n := range r.RemoveHeaders {
		e.RepeatedString(4, n)
	}
	e.BytesField(5, r.Arguments)
	e.String(15, r.Error)
}

// Decode reads the message from b.
func (r *InterceptResponse) Decode(b []byte) error {
	*r = InterceptResponse{}
	d := Decoder{buf: b}
	for d.Next() {
		switch d.Field() {
		case 1:
			r.Action = d.Uint()
		case 2:
			r.Message = d.String()
		case 3:
			r.SetHeaders = append(r.SetHeaders, decodeHeader(&d))
		case 4:
			r.RemoveHeaders = append(r.RemoveHeaders, d.String())
		case 5:
			r.Arguments = d.Bytes()
		case 15:
			r.Error = d.String()
		}
	}
	return d.Err()
}

// ResultRequest is a tool result on its way back to the agent.
type ResultRequest struct {
	Server       string // 1
	Tool         string // 2
	OriginalTool string // 3
	UserID       string // 4
	ThreadID     string // 5
	Result       []byte // 6: the CallToolResult, JSON
	Config       []byte // 7
}

// Encode appends the message to e.
func (r *ResultRequest) Encode(e *Encoder) {
	e.String(1, r.Server)
	e.String(2, r.Tool)
	e.String(3, r.OriginalTool)
	e.String(4, r.UserID)
	e.String(5, r.ThreadID)
	e.BytesField(6, r.Result)
	e.BytesField(7, r.Config)
}

// Decode reads the message from b.
func (r *ResultRequest) Decode(b []byte) error {
	*r = ResultRequest{}
	d := Decoder{buf: b}
	for d.Next() {
		switch d.Field() {
		case 1:
			r.Server = d.String()
		case 2:
			r.Tool = d.String()
		case 3:
			r.OriginalTool = d.String()
		case 4:
			r.UserID = d.String()
		case 5:
			r.ThreadID = d.String()
		case 6:
			r.Result = d.Bytes()
		case 7:
			r.Config = d.Bytes()
		}
	}
	return d.Err()
}

// ResultResponse rewrites a result when Result is non-nil.
type ResultResponse struct {
	Result []byte // 1: replacement CallToolResult, JSON
	Error  string // 15
}

// Encode appends the message to e.
func (r *ResultResponse) Encode(e *Encoder) {
	e.BytesField(1, r.Result)
	e.String(15, r.Error)
}

// Decode reads the message from b.
func (r *ResultResponse) Decode(b []byte) error {
	*r = ResultResponse{}
	d := Decoder{buf: b}
	for d.Next() {
		switch d.Field() {
		case 1:
			r.Result = d.Bytes()
		case 15:
			r.Error = d.String()
		}
	}
	return d.Err()
}

// Task statuses (DeerFlow's TaskStatus).
const (
	StatusSubmitted     = "submitted"
	StatusWorking       = "working"
	StatusInputRequired = "input_required"
	StatusCompleted     = "completed"
	StatusFailed        = "failed"
	StatusCancelled     = "cancelled"
)

// TaskSubmitRequest mirrors DeerFlow's TaskSubmitRequest.
type TaskSubmitRequest struct {
	UserID      string // 1
	ThreadID    string // 2
	RunID       string // 3
	ToolCallID  string // 4
	ServerName  string // 5
	TaskName    string // 6
	Arguments   []byte // 7: JSON object
	DriverData  []byte // 8: JSON object
	LocalTaskID string // 9
}

// Encode appends the message to e.
func (r *TaskSubmitRequest) Encode(e *Encoder) {
	e.String(1, r.UserID)
	e.String(2, r.ThreadID)
	e.String(3, r.RunID)
	e.String(4, r.ToolCallID)
	e.String(5, r.ServerName)
	e.String(6, r.TaskName)
	e.BytesField(7, r.Arguments)
	e.BytesField(8, r.DriverData)
	e.String(9, r.LocalTaskID)
}

// Decode reads the message from b.
func (r *TaskSubmitRequest) Decode(b []byte) error {
	*r = TaskSubmitRequest{}
	d := Decoder{buf: b}
	for d.Next() {
		switch d.Field() {
		case 1:
			r.UserID = d.String()
		case 2:
			r.ThreadID = d.String()
		case 3:
			r.RunID = d.String()
		case 4:
			r.ToolCallID = d.String()
		case 5:
			r.ServerName = d.String()
		case 6:
			r.TaskName = d.String()
		case 7:
			r.Arguments = d.Bytes()
		case 8:
			r.DriverData = d.Bytes()
		case 9:
			r.LocalTaskID = d.String()
		}
	}
	return d.Err()
}

// TaskReference mirrors DeerFlow's TaskReference.
type TaskReference struct {
	LocalTaskID  string // 1
	UserID       string // 2
	ThreadID     string // 3
	ServerName   string // 4
	RemoteTaskID string // 5
	DriverData   []byte // 6: JSON object
}

// Encode appends the message to e.
func (r *TaskReference) Encode(e *Encoder) {
	e.String(1, r.LocalTaskID)
	e.String(2, r.UserID)
	e.String(3, r.ThreadID)
	e.String(4, r.ServerName)
	e.String(5, r.RemoteTaskID)
	e.BytesField(6, r.DriverData)
}

// Decode reads the message from b.
func (r *TaskReference) Decode(b []byte) error {
	*r = TaskReference{}
	d := Decoder{buf: b}
	r.decode(&d)
	return d.Err()
}

func (r *TaskReference) decode(d *Decoder) {
	for d.Next() {
		switch d.Field() {
		case 1:
			r.LocalTaskID = d.String()
		case 2:
			r.UserID = d.String()
		case 3:
			r.ThreadID = d.String()
		case 4:
			r.ServerName = d.String()
		case 5:
			r.RemoteTaskID = d.String()
		case 6:
			r.DriverData = d.Bytes()
		}
	}
}

// TaskAnswerRequest (1.1) carries a user's answer to a task waiting for
// input, in the shape of an MCP elicitation result. The driver answers a
// TaskDriverResponse with the task's snapshot after the answer, as status
// does.
type TaskAnswerRequest struct {
	Task     TaskReference // 1
	Question []byte        // 2: the task's stored input_required, JSON object
	Action   string        // 3: accept, decline or cancel
	Content  []byte        // 4: with accept, a JSON object
	AnswerID string        // 5: stable across redeliveries: the remote's idempotency key
}

// Answer actions, as in an MCP elicitation result.
const (
	AnswerAccept  = "accept"
	AnswerDecline = "decline"
	AnswerCancel  = "cancel"
)

// Encode appends the message to e.
func (r *TaskAnswerRequest) Encode(e *Encoder) {
	if t := &r.Task; t.LocalTaskID != "" || t.UserID != "" || t.ThreadID != "" || t.ServerName != "" || t.RemoteTaskID != "" || t.DriverData != nil {
		e.Message(1, t.Encode)
	}
	e.BytesField(2, r.Question)
	e.String(3, r.Action)
	e.BytesField(4, r.Content)
	e.String(5, r.AnswerID)
}

// Decode reads the message from b.
func (r *TaskAnswerRequest) Decode(b []byte) error {
	*r = TaskAnswerRequest{}
	d := Decoder{buf: b}
	for d.Next() {
		switch d.Field() {
		case 1:
			m := d.Message()
			r.Task = TaskReference{}
			r.Task.decode(&m)
			d.Fail(m.Err())
		case 2:
			r.Question = d.Bytes()
		case 3:
			r.Action = d.String()
		case 4:
			r.Content = d.Bytes()
		case 5:
			r.AnswerID = d.String()
		}
	}
	return d.Err()
}

// TaskSnapshot mirrors DeerFlow's TaskSnapshot. Nil byte fields and an unset
// PollAfterSeconds (HasPollAfter false) mean null.
type TaskSnapshot struct {
	Status           string   // 1
	Result           []byte   // 2: JSON
	ResultPreview    string   // 3
	ResultTruncated  bool     // 4
	ResultArtifact   []Header // 5: string map (uri, mime_type)
	Error            string   // 6
	InputRequired    []byte   // 7: JSON object
	PollAfterSeconds float64  // 8
	HasPollAfter     bool
}

// Encode appends the message to e.
func (s *TaskSnapshot) Encode(e *Encoder) {
	e.String(1, s.Status)
	e.BytesField(2, s.Result)
	e.String(3, s.ResultPreview)
	e.Bool(4, s.ResultTruncated)
	encodeHeaders(e, 5, s.ResultArtifact)
	e.String(6, s.Error)
	e.BytesField(7, s.InputRequired)
	e.Double(8, s.PollAfterSeconds, s.HasPollAfter)
}

func (s *TaskSnapshot) decode(d *Decoder) {
	for d.Next() {
		switch d.Field() {
		case 1:
			s.Status = d.String()
		case 2:
			s.Result = d.Bytes()
		case 3:
			s.ResultPreview = d.String()
		case 4:
			s.ResultTruncated = d.Bool()
		case 5:
			s.ResultArtifact = append(s.ResultArtifact, decodeHeader(d))
		case 6:
			s.Error = d.String()
		case 7:
			s.InputRequired = d.Bytes()
		case 8:
			s.PollAfterSeconds, s.HasPollAfter = d.Double(), true
			if math.IsNaN(s.PollAfterSeconds) {
				d.Fail(ErrMalformed)
			}
		}
	}
}

// TaskDriverResponse is a task driver's answer: a submission (to submit), a
// snapshot (to status and cancel), or an error.
type TaskDriverResponse struct {
	RemoteTaskID string        // 1: submit only
	Snapshot     *TaskSnapshot // 2
	DriverData   []byte        // 3: submit only, JSON object
	Error        string        // 4
	Retryable    bool          // 5: the error is transient (poll again later)
}

// Encode appends the message to e.
func (r *TaskDriverResponse) Encode(e *Encoder) {
	e.String(1, r.RemoteTaskID)
	if r.Snapshot != nil {
		e.Message(2, r.Snapshot.Encode)
	}
	e.BytesField(3, r.DriverData)
	e.String(4, r.Error)
	e.Bool(5, r.Retryable)
}

// Decode reads the message from b.
func (r *TaskDriverResponse) Decode(b []byte) error {
	*r = TaskDriverResponse{}
	d := Decoder{buf: b}
	for d.Next() {
		switch d.Field() {
		case 1:
			r.RemoteTaskID = d.String()
		case 2:
			s := &TaskSnapshot{}
			m := d.Message()
			s.decode(&m)
			d.Fail(m.Err())
			r.Snapshot = s
		case 3:
			r.DriverData = d.Bytes()
		case 4:
			r.Error = d.String()
		case 5:
			r.Retryable = d.Bool()
		}
	}
	return d.Err()
}

// CallToolRequest is a task driver's request to call an upstream tool
// through the host (import call_tool): the host keeps owning transports and
// credentials.
type CallToolRequest struct {
	Server               string // 1
	Tool                 string // 2: the upstream's own name
	Arguments            []byte // 3: JSON object
	UserID               string // 4
	ThreadID             string // 5
	RequestScopedHeaders bool   // 6
}

// Encode appends the message to e.
func (r *CallToolRequest) Encode(e *Encoder) {
	e.String(1, r.Server)
	e.String(2, r.Tool)
	e.BytesField(3, r.Arguments)
	e.String(4, r.UserID)
	e.String(5, r.ThreadID)
	e.Bool(6, r.RequestScopedHeaders)
}

// Decode reads the message from b.
func (r *CallToolRequest) Decode(b []byte) error {
	*r = CallToolRequest{}
	d := Decoder{buf: b}
	for d.Next() {
		switch d.Field() {
		case 1:
			r.Server = d.String()
		case 2:
			r.Tool = d.String()
		case 3:
			r.Arguments = d.Bytes()
		case 4:
			r.UserID = d.String()
		case 5:
			r.ThreadID = d.String()
		case 6:
			r.RequestScopedHeaders = d.Bool()
		}
	}
	return d.Err()
}

// CallToolResponse is the host's answer to call_tool.
type CallToolResponse struct {
	Result []byte // 1: the CallToolResult, JSON
	Error  string // 2: a model-safe failure
}

// Encode appends the message to e.
func (r *CallToolResponse) Encode(e *Encoder) {
	e.BytesField(1, r.Result)
	e.String(2, r.Error)
}

// Decode reads the message from b.
func (r *CallToolResponse) Decode(b []byte) error {
	*r = CallToolResponse{}
	d := Decoder{buf: b}
	for d.Next() {
		switch d.Field() {
		case 1:
			r.Result = d.Bytes()
		case 2:
			r.Error = d.String()
		}
	}
	return d.Err()
}
