package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/antler-mcp/antler/internal/spectask"
	"github.com/antler-mcp/antler/internal/task"
)

// A 2025-11-25 durable task's question, asked on its tasks/result. The
// spec has a requestor call tasks/result once a task is input_required, so
// that the receiver can send its elicitation/create on that request's
// stream. The door does: when the session declared form elicitation, the
// question goes out on the tasks/result response (turned into an SSE
// stream for it), tagged with the related-task _meta, under a request id
// of the door's own; the client's answer comes back as a JSON-RPC response
// POSTed on the same session, which the door takes before mcp-go (which
// knows no such id) would, and spectask records it as tasks/update and the
// REST route record one. The tasks/result then keeps waiting for the
// task's end. A client that does not answer within the door's
// TaskInputTimeout ends the tasks/result with an error; the task stays
// waiting for input.

// inputIDPrefix starts the id of every elicitation/create the door sends
// for a task: mcp-go's own server requests have numeric ids.
const inputIDPrefix = "antler-task-input-"

// inputReply is a client's response to one of the door's requests.
type inputReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// inputWaits are the door's requests waiting for their client's response,
// by session and request id.
type inputWaits struct {
	mu   sync.Mutex
	wait map[string]chan inputReply
}

func waitKey(sessionID, id string) string { return sessionID + "\x00" + id }

// await registers the request id of sessionID; release forgets it.
func (w *inputWaits) await(sessionID, id string) (<-chan inputReply, func()) {
	ch := make(chan inputReply, 1)
	k := waitKey(sessionID, id)
	w.mu.Lock()
	if w.wait == nil {
		w.wait = map[string]chan inputReply{}
	}
	w.wait[k] = ch
	w.mu.Unlock()
	return ch, func() {
		w.mu.Lock()
		delete(w.wait, k)
		w.mu.Unlock()
	}
}

// deliver hands a response to the request it answers and reports whether
// one of sessionID's was waiting for it (only the first response counts).
func (w *inputWaits) deliver(sessionID, id string, r inputReply) bool {
	k := waitKey(sessionID, id)
	w.mu.Lock()
	ch, ok := w.wait[k]
	delete(w.wait, k)
	w.mu.Unlock()
	if ok {
		ch <- r
	}
	return ok
}

// takeInputReply takes a POSTed JSON-RPC response that answers one of the
// door's task questions on sessionID, and reports whether it did (202, as
// the transport answers a response).
func (s *Server) takeInputReply(w http.ResponseWriter, sessionID string, id json.RawMessage, body []byte) bool {
	var key string
	if sessionID == "" || json.Unmarshal(id, &key) != nil || len(key) <= len(inputIDPrefix) || key[:len(inputIDPrefix)] != inputIDPrefix {
		return false
	}
	var r inputReply
	if json.Unmarshal(body, &r) != nil || (r.Error == nil && len(r.Result) == 0) {
		return false
	}
	if !s.spec.inputs.deliver(sessionID, key, r) {
		return false
	}
	w.WriteHeader(http.StatusAccepted)
	return true
}

// elicits reports whether the session's client declared form-mode
// elicitation (an empty elicitation capability is form mode).
func (s *Server) elicits(sessionID string) bool {
	info, ok := s.sessions.clientOf(sessionID).(server.SessionWithClientInfo)
	if !ok {
		return false
	}
	e := info.GetClientCapabilities().Elicitation
	return e != nil && (e.Form != nil || e.URL == nil)
}

// resultStream is a tasks/result response that becomes an SSE stream when
// the door first sends a request on it. One goroutine writes it.
type resultStream struct {
	w    http.ResponseWriter
	open bool
}

// send writes one JSON-RPC message as an SSE event, opening the stream.
func (st *resultStream) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode a task request: %w", err)
	}
	if !st.open {
		st.w.Header().Set("Content-Type", "text/event-stream")
		st.w.Header().Set("Cache-Control", "no-cache")
		st.w.WriteHeader(http.StatusOK)
		st.open = true
	}
	if _, err := fmt.Fprintf(st.w, "event: message\ndata: %s\n\n", b); err != nil {
		return fmt.Errorf("write to the tasks/result stream: %w", err)
	}
	if err := http.NewResponseController(st.w).Flush(); err != nil {
		return fmt.Errorf("flush the tasks/result stream: %w", err)
	}
	return nil
}

// reply writes the tasks/result response: on the stream once it is open,
// else as a JSON body.
func (st *resultStream) reply(id, result json.RawMessage, e *rpcError) {
	if !st.open {
		writeRPC(st.w, id, result, e, false)
		return
	}
	_, body := rpcResponse(id, result, e, false)
	_ = st.send(body)
}

// inputError is how a client's failure to answer a task's question ends
// its tasks/result.
type inputError struct{ rpcError }

func (e *inputError) Error() string { return e.msg }

// asker is the spectask.Asker of a tasks/result on sessionID: it sends the
// question on st and waits, at most the door's TaskInputTimeout, for the
// client's answer.
func (s *Server) asker(st *resultStream, sessionID string) spectask.Asker {
	return func(ctx context.Context, taskID string, params json.RawMessage) (task.Answer, error) {
		var b [12]byte
		_, _ = rand.Read(b[:])
		id := inputIDPrefix + hex.EncodeToString(b[:])
		ch, release := s.spec.inputs.await(sessionID, id)
		defer release()
		req := map[string]any{"jsonrpc": mcp.JSONRPC_VERSION, "id": id, "method": string(mcp.MethodElicitationCreate), "params": params}
		if err := st.send(req); err != nil {
			return task.Answer{}, err
		}
		s.log.Info("MCP task question sent to the client as elicitation/create", "task_id", taskID)
		timer := time.NewTimer(s.spec.inputTimeout)
		defer timer.Stop()
		select {
		case <-ctx.Done():
			return task.Answer{}, ctx.Err()
		case <-timer.C:
			return task.Answer{}, &inputError{rpcError{mcp.INTERNAL_ERROR, fmt.Sprintf(
				"the client did not answer the elicitation/create for task %s within %s; the task still waits for input: call tasks/result again to be asked again, or answer it through Antler's REST task API",
				taskID, s.spec.inputTimeout)}}
		case r := <-ch:
			if r.Error != nil {
				return task.Answer{}, &inputError{rpcError{mcp.INTERNAL_ERROR, fmt.Sprintf(
					"the client answered the elicitation/create for task %s with error %d: %s; the task still waits for input",
					taskID, r.Error.Code, truncate(r.Error.Message))}}
			}
			var a struct {
				Action  string          `json:"action"`
				Content json.RawMessage `json:"content"`
			}
			if err := json.Unmarshal(r.Result, &a); err != nil {
				return task.Answer{}, &inputError{rpcError{mcp.INVALID_PARAMS, fmt.Sprintf(
					"the client's elicitation result for task %s is not an object {action, content}; the task still waits for input", taskID)}}
			}
			return task.Answer{Action: a.Action, Content: a.Content}, nil
		}
	}
}
