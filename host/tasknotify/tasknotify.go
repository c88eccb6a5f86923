// Package tasknotify delivers durable task events to the agent side: the
// envelope every consumer receives (webhook body and SSE data alike), the
// webhook sender with its signature, idempotency key and W3C trace context
// headers, and how a receiver's answer is classified.
//
// An event carries what a remote MCP server said (results, errors, input
// questions). That is data, never instructions: the envelope's trusted
// instruction is fixed text, and the event travels beside it both as JSON
// and as text wrapped in an untrusted-data frame that the event cannot close.
package tasknotify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/antler-mcp/antler/internal/egress"
)

// Instruction is the trusted text that tells an agent how to treat an event
// (DeerFlow's, naming Antler).
const Instruction = "A durable background MCP task has an update that requires the user's attention. " +
	"Explain the update clearly and concisely. Do not expose or ask for a remote task ID. " +
	"When status is input_required, show the question but explain that this MCP integration cannot resume " +
	"the remote task with user input yet. When tracking_degraded is true, explain that Antler will continue " +
	"retrying at a lower frequency."

// AnswerInstruction is Instruction for a task whose driver can take
// answers: it says how the user's answer reaches the remote task.
const AnswerInstruction = "A durable background MCP task has an update that requires the user's attention. " +
	"Explain the update clearly and concisely. Do not expose or ask for a remote task ID. " +
	"When status is input_required, show the question and ask the user for an answer: this task can resume with it. " +
	"Send the user's answer with POST /api/threads/{thread_id}/mcp-tasks/{task_id}/input and the body " +
	"{\"action\": \"accept\", \"content\": {...}} (the answer, a JSON object), {\"action\": \"decline\"} " +
	"or {\"action\": \"cancel\"}; never invent an answer the user did not give. " +
	"When tracking_degraded is true, explain that Antler will continue retrying at a lower frequency."

// Frame tags around EventText.
const (
	frameOpen  = "<untrusted_mcp_task_event>"
	frameClose = "</untrusted_mcp_task_event>"
)

// Event is one delivery of one event version of a task.
type Event struct {
	TaskID   string
	ThreadID string
	UserID   string
	// Version is the task's event version being delivered; Attempt counts
	// the deliveries of that version the receiver has refused.
	Version int
	Attempt int
	// Data is the event document (status, result, error, input_required,
	// tracking_degraded, …) as the task store records it.
	Data json.RawMessage
	// Answerable says the task's driver can take answers, which picks
	// AnswerInstruction over Instruction.
	Answerable bool
	// TraceParent and TraceState are the W3C trace context of the delivery
	// ("" for none: tracing off). The webhook sends them as the traceparent
	// and tracestate headers, never in the envelope: a resend of one
	// attempt keeps its body (and idempotency key) while each delivery is
	// traced anew, and the signature covers the body only.
	TraceParent string
	TraceState  string
}

// IdempotencyKey is "mcp-task:<task id>:<version>:<attempt>": equal for
// resends of one attempt (the receiver may have it already), new for each
// attempt the receiver refused and for each new event version.
func (e Event) IdempotencyKey() string {
	return fmt.Sprintf("mcp-task:%s:%d:%d", e.TaskID, e.Version, e.Attempt)
}

// Envelope is the JSON every consumer receives.
type Envelope struct {
	Type           string `json:"type"` // always "mcp_task.event"
	TaskID         string `json:"task_id"`
	ThreadID       string `json:"thread_id"`
	UserID         string `json:"user_id,omitempty"`
	Version        int    `json:"version"`
	Attempt        int    `json:"attempt"`
	IdempotencyKey string `json:"idempotency_key"`
	// Instruction is trusted (Instruction, or AnswerInstruction for a task
	// that can take answers); everything under Event is not.
	Instruction string          `json:"instruction"`
	Event       json.RawMessage `json:"event"`
	// EventText is Event framed for a model's context: inside
	// <untrusted_mcp_task_event> tags, with <, > and & escaped in the JSON
	// so the content can never close the frame.
	EventText string `json:"event_text"`
}

// EnvelopeOf builds the envelope of e. withUser includes the user id (the
// webhook needs it; a user's own SSE stream does not).
func EnvelopeOf(e Event, withUser bool) Envelope {
	data := e.Data
	if len(data) == 0 || !json.Valid(data) {
		data = json.RawMessage(`null`)
	}
	var esc bytes.Buffer
	json.HTMLEscape(&esc, data)
	env := Envelope{
		Type: "mcp_task.event", TaskID: e.TaskID, ThreadID: e.ThreadID,
		Version: e.Version, Attempt: e.Attempt, IdempotencyKey: e.IdempotencyKey(),
		Instruction: Instruction, Event: data,
		EventText: frameOpen + "\n" + esc.String() + "\n" + frameClose,
	}
	if e.Answerable {
		env.Instruction = AnswerInstruction
	}
	if withUser {
		env.UserID = e.UserID
	}
	return env
}

// Notifier delivers one event. A nil error means delivered. Otherwise the
// error wraps ErrPermanent (stop: dead letter), ErrBusy (retry later without
// spending the failure budget) or ErrRefused (the receiver answered with a
// failure: counted, and the next attempt gets a new idempotency key); any
// other error means the receiver's answer is unknown (counted, resent with
// the same key).
type Notifier interface {
	Notify(ctx context.Context, e Event) error
}

// Outcomes of a delivery, for errors.Is.
var (
	ErrPermanent = errors.New("the receiver will never accept this notification")
	ErrBusy      = errors.New("the receiver is busy")
	ErrRefused   = errors.New("the receiver refused the notification")
)

// Webhook headers.
const (
	HeaderSignature      = "X-Antler-Signature"
	HeaderIdempotencyKey = "Idempotency-Key"
	HeaderEvent          = "X-Antler-Event"
	// HeaderTraceParent and HeaderTraceState carry the delivery's W3C trace
	// context when it has one; they are not signed.
	HeaderTraceParent = "traceparent"
	HeaderTraceState  = "tracestate"
)

// Webhook POSTs each event's envelope as JSON to URL, signed with Secret.
type Webhook struct {
	URL    string
	Secret []byte
	// Client sends the requests (nil: a client with Timeout).
	Client *http.Client
	// Timeout bounds one delivery (0: 10 s).
	Timeout time.Duration
	// Now is the clock for signatures (nil: time.Now).
	Now func() time.Time
}

var _ Notifier = (*Webhook)(nil)

// Notify sends e, with e's trace context, if any, as the traceparent and
// tracestate headers. The receiver's answer decides: 2xx delivered; 404 or 410
// ErrPermanent; 409 ErrBusy; any other status, redirects included (they are
// never followed), ErrRefused. Error texts name
// the status or the transport failure, never the URL (it may carry a token).
func (w *Webhook) Notify(ctx context.Context, e Event) error {
	body, err := json.Marshal(EnvelopeOf(e, true))
	if err != nil {
		return fmt.Errorf("encode notification: %w", err)
	}
	timeout := w.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return errors.New("webhook request could not be built (check mcp_tasks.notifications.webhook_url)")
	}
	now := time.Now
	if w.Now != nil {
		now = w.Now
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "antler-task-notifier")
	req.Header.Set(HeaderIdempotencyKey, e.IdempotencyKey())
	req.Header.Set(HeaderEvent, "mcp_task.event")
	req.Header.Set(HeaderSignature, Sign(w.Secret, now(), body))
	if e.TraceParent != "" {
		req.Header.Set(HeaderTraceParent, e.TraceParent)
		if e.TraceState != "" {
			req.Header.Set(HeaderTraceState, e.TraceState)
		}
	}
	client := http.Client{Timeout: timeout}
	if w.Client != nil {
		client = *w.Client
	}
	// A redirect is an answer, not a delivery: following it would turn the
	// POST into a bodiless GET (301-303) whose 200 looks like success, or
	// send the signed body elsewhere (307, 308).
	client.CheckRedirect = egress.NoRedirects
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return errors.New("webhook request timed out")
		}
		return &TransportError{Reason: transportReason(err), Err: err}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	code := resp.StatusCode
	switch {
	case code >= 200 && code < 300:
		return nil
	case code == http.StatusNotFound || code == http.StatusGone:
		return fmt.Errorf("webhook answered %d %s: %w", code, http.StatusText(code), ErrPermanent)
	case code == http.StatusConflict:
		return fmt.Errorf("webhook answered %d %s: %w", code, http.StatusText(code), ErrBusy)
	default:
		return fmt.Errorf("webhook answered %d %s: %w", code, http.StatusText(code), ErrRefused)
	}
}

// TransportError is a delivery that got no answer. Its text names the kind
// of failure only: the transport's own messages carry the receiver's host,
// address or certificate names, and the text is stored on the task, where
// its owner reads it.
type TransportError struct {
	Reason string
	Err    error
}

func (e *TransportError) Error() string { return "webhook request failed: " + e.Reason }
func (e *TransportError) Unwrap() error { return e.Err }

// transportReason classifies a failed request without naming the receiver.
func transportReason(err error) string {
	var dns *net.DNSError
	var cert *tls.CertificateVerificationError
	var rec tls.RecordHeaderError
	switch {
	case errors.As(err, &dns):
		return "the receiver's host name could not be resolved"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed by the receiver"
	case errors.As(err, &cert), errors.As(err, &rec), strings.Contains(err.Error(), "tls:"), strings.Contains(err.Error(), "x509:"):
		return "TLS handshake failed"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "receiver unreachable"
	}
	return "transport error"
}

// Sign returns the signature header value of body sent at t:
// "t=<unix seconds>,v1=<hex HMAC-SHA256 of "<unix seconds>.<body>">".
// Signing the time with the body lets a receiver refuse replays.
func Sign(secret []byte, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
}

func mac(secret []byte, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// ErrBadSignature is returned by Verify for a missing, malformed, wrong or
// stale signature.
var ErrBadSignature = errors.New("tasknotify: bad webhook signature")

// Verify checks a signature header value for body at now, allowing the
// signing time to be at most tolerance away. Receivers use it.
func Verify(secret []byte, header string, body []byte, now time.Time, tolerance time.Duration) error {
	var ts, sig string
	for part := range strings.SplitSeq(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sig = v
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return ErrBadSignature
	}
	if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
		return ErrBadSignature
	}
	got, err := hex.DecodeString(sig)
	if err != nil || !hmac.Equal(got, mac(secret, ts, body)) {
		return ErrBadSignature
	}
	return nil
}
