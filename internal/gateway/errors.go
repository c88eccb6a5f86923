package gateway

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/antler-mcp/antler/internal/apierror"
	"github.com/antler-mcp/antler/internal/dispatch"
)

// errorBody is the JSON error body: every failure answers {"error": ...}.
type errorBody struct {
	Error string `json:"error"`
}

// errorHandler writes every error a handler or middleware returns, the one
// place that does: an *apierror.Error with its status and message (its
// cause logged when it is a 500, the host's fault), Echo's own errors (an unknown
// route, a body over MaxBodyBytes) with theirs, and anything else as a 500
// that shows nothing of the error.
func (s *Server) errorHandler(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	code, msg := http.StatusInternalServerError, "internal error"
	var ae *apierror.Error
	var he *echo.HTTPError
	switch {
	case errors.As(err, &ae):
		code, msg = ae.Code, ae.Message
		if code == http.StatusInternalServerError && ae.Err != nil {
			s.log.Error("request failed", "request_id", requestIDFrom(c), "error", dispatch.Redact(ae.Err.Error()))
		}
	case errors.As(err, &he):
		code = he.Code
		msg = fmt.Sprint(he.Message)
		if he.Code == http.StatusRequestEntityTooLarge {
			msg = fmt.Sprintf("request body larger than %d bytes", MaxBodyBytes)
		}
	default:
		s.log.Error("request failed", "request_id", requestIDFrom(c), "error", dispatch.Redact(err.Error()))
	}
	_ = c.JSON(code, errorBody{Error: msg})
}

// jsonProblem and truncateField render a caller's bad input without
// quoting it (see apierror).
func jsonProblem(err error) string { return apierror.JSONProblem(err) }

func truncateField(s string) string { return apierror.TruncateField(s) }
