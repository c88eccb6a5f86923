package gateway

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/antler-mcp/antler/internal/apierror"
	"github.com/antler-mcp/antler/internal/dispatch"
	"github.com/antler-mcp/antler/internal/tasktools"
	"github.com/antler-mcp/antler/internal/toolcache"
)

// snapshot returns the current tools or answers 503 with a secret-free reason.
func (s *Server) snapshot(c echo.Context) (*toolcache.ToolSet, error) {
	snap, err := s.cache.ToolSet(c.Request().Context())
	if err != nil {
		s.log.Warn("MCP tools unavailable", "request_id", requestIDFrom(c), "error", err.Error())
		return nil, apierror.New(http.StatusServiceUnavailable, "MCP tools are unavailable: %s", dispatch.Redact(err.Error()))
	}
	return snap, nil
}

func (s *Server) listTools(c echo.Context) error {
	snap, err := s.snapshot(c)
	if snap == nil {
		return err
	}
	tools := append([]toolcache.Tool{}, snap.Tools...)
	tools = append(tools, s.taskTools.Listed()...)
	return c.JSON(http.StatusOK, map[string]any{"tools": tools})
}

func (s *Server) callTool(c echo.Context) error {
	name := c.Param("name")
	body, err := requestBody(c)
	if err != nil {
		var he *echo.HTTPError
		if errors.As(err, &he) {
			return he
		}
		return apierror.New(http.StatusBadRequest, "could not read the request body")
	}
	req, err := ParseCallRequest(body)
	if err != nil {
		return apierror.New(http.StatusBadRequest, "%s", err.Error())
	}
	if tasktools.IsHostTool(name) && s.taskTools.Configured() {
		return s.callHostTool(c, name, req)
	}
	snap, err := s.snapshot(c)
	if snap == nil {
		return err
	}
	tool, ok := snap.Tool(name)
	if !ok {
		return apierror.New(http.StatusNotFound, "unknown tool %q", truncateField(name))
	}
	end := s.doorSpan(c, snap, tool)
	if tool.IsDurable() {
		res, err := s.taskTools.Submit(c.Request().Context(), tool, s.taskCall(c, req))
		end(nil, tasktools.SpanError(res, err))
		if err != nil {
			return err
		}
		return c.JSON(http.StatusOK, res)
	}
	raw, err := snap.Invoke(c.Request().Context(), dispatch.Request{
		Name:      name,
		Arguments: req.Arguments,
		UserID:    s.callerUser(c, req.UserID),
		ThreadID:  req.ThreadID,
		Secrets:   req.Secrets,
		Door:      dispatch.DoorREST,
	})
	end(raw, err)
	return answerREST(c, name, raw, err)
}

// SpanRESTCall is the server span of a REST tool call (a plain call or a
// durable task's submit), the parent of the call path's spans.
const SpanRESTCall = "antler.rest tools/call"

// doorSpan starts the REST door's server span for a call of tool, a child
// of the caller's W3C traceparent header, and puts it in the request's
// context; end records the call's outcome (see dispatch.StartDoorSpan).
func (s *Server) doorSpan(c echo.Context, snap *toolcache.ToolSet, tool toolcache.Tool) (end func(json.RawMessage, error)) {
	tr := snap.Tracer()
	if tr == nil { // off: no header lookups, no new request on the call path
		return func(json.RawMessage, error) {}
	}
	r := c.Request()
	ctx, end := dispatch.StartDoorSpan(r.Context(), tr, dispatch.DoorSpan{Name: SpanRESTCall, Door: dispatch.DoorREST,
		Tool: tool.Name, Server: tool.Server, TraceParent: r.Header.Get("traceparent"), TraceState: r.Header.Get("tracestate")})
	c.SetRequest(r.WithContext(ctx))
	return end
}

// answerREST answers a REST tool call: the result, or a failure as the
// model-safe error result.
func answerREST(c echo.Context, name string, raw json.RawMessage, err error) error {
	if err != nil {
		var ce *dispatch.CallError
		if errors.As(err, &ce) {
			return c.JSON(http.StatusOK, tasktools.ErrorResult(ce.Message))
		}
		if errors.Is(err, toolcache.ErrUnknownTool) {
			return apierror.New(http.StatusNotFound, "unknown tool %q", truncateField(name))
		}
		return err
	}
	return c.JSONBlob(http.StatusOK, raw)
}

// requestBody is the body deadlines read already, or what is left to read.
func requestBody(c echo.Context) ([]byte, error) {
	if body, ok := readBodyOf(c); ok {
		return body, nil
	}
	return io.ReadAll(c.Request().Body)
}

// callerUser is the user a call acts for: the authenticated principal, or
// the user_id an internal principal names. Anyone else's user_id is ignored
// (and logged): an agent must not borrow another user's credentials.
func (s *Server) callerUser(c echo.Context, bodyUser string) string {
	p := principalFrom(c)
	user, ignored := p.ActingUser(bodyUser)
	if ignored {
		s.log.Warn("ignoring user_id from a principal that is not internal", "request_id", requestIDFrom(c), "principal", p.User, "role", p.Role, "user_id", bodyUser)
	}
	return user
}

func (s *Server) routingHints(c echo.Context) error {
	snap, err := s.snapshot(c)
	if snap == nil {
		return err
	}
	deferred := map[string]bool{}
	for _, v := range c.QueryParams()["deferred"] {
		for _, n := range strings.Split(v, ",") {
			if n = strings.TrimSpace(n); n != "" {
				deferred[n] = true
			}
		}
	}
	section, hints := snap.RoutingHints(deferred)
	return c.JSON(http.StatusOK, map[string]any{"section": section, "hints": hints})
}

func (s *Server) servers(c echo.Context) error {
	snap, err := s.snapshot(c)
	if snap == nil {
		return err
	}
	warnings := snap.Warnings
	if warnings == nil {
		warnings = []string{}
	}
	body := map[string]any{
		"generation":    snap.Generation,
		"discovered_at": snap.DiscoveredAt,
		"warnings":      warnings,
	}
	statuses := snap.ServerStatuses()
	if principalFrom(c).IsAdmin() {
		body["config_path"], body["servers"] = snap.ConfigPath, statuses
		return c.JSON(http.StatusOK, body)
	}
	// Where the host keeps its config, how many sessions other users hold
	// and what a failed process or connection said are host internals: a
	// non-admin gets the kind of failure only.
	views := make([]agentServerStatus, len(statuses))
	for i, st := range statuses {
		st.Error = st.PublicError
		views[i] = agentServerStatus{ServerStatus: st}
	}
	body["servers"] = views
	return c.JSON(http.StatusOK, body)
}

// agentServerStatus is a server's status without its session count: the
// outer, always-nil Sessions shadows the embedded one, so encoding/json
// leaves the field out.
type agentServerStatus struct {
	toolcache.ServerStatus
	Sessions *int `json:"sessions,omitempty"`
}

func (s *Server) resetCache(c echo.Context) error {
	s.cache.Reset()
	s.log.Info("MCP tool cache reset", "request_id", requestIDFrom(c), "by", principalFrom(c).User)
	return c.JSON(http.StatusOK, map[string]any{"success": true, "message": "MCP tools cache reset. Tools will reload on next use.",
		"reset": true, "generation": s.cache.Generation()})
}
