package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/antler-mcp/antler/internal/apierror"
	"github.com/antler-mcp/antler/internal/catalog"
)

// listCatalog answers the tool catalog's pending changes with their diffs.
func (s *Server) listCatalog(c echo.Context) error {
	if s.catalog == nil {
		return apierror.New(http.StatusServiceUnavailable, "The tool catalog is not available (no store is open)")
	}
	pending, err := s.catalog.Pending(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"pending": pending})
}

// approveBody is POST /api/mcp/catalog/approve's body.
type approveBody struct {
	Server string   `json:"server"`
	Tools  []string `json:"tools"`
}

// approveCatalog approves pending tool definitions of one server and
// rebuilds the tool set, so tools held back appear.
func (s *Server) approveCatalog(c echo.Context) error {
	if s.catalog == nil {
		return apierror.New(http.StatusServiceUnavailable, "The tool catalog is not available (no store is open)")
	}
	raw, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return err
	}
	var body approveBody
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil || dec.More() {
		return apierror.New(http.StatusBadRequest, `body: must be one JSON object {"server": "<name>", "tools"?: ["<tool>", ...]}`)
	}
	if body.Server == "" {
		return apierror.New(http.StatusBadRequest, "server: must be a non-empty string")
	}
	approved, err := s.catalog.Approve(c.Request().Context(), body.Server, body.Tools, principalFrom(c).User)
	if errors.Is(err, catalog.ErrNothingPending) {
		return apierror.New(http.StatusNotFound, "No pending tool definition to approve on MCP server '%s'", body.Server)
	}
	if err != nil {
		return err
	}
	s.cache.Rebuild()
	s.log.Info("MCP tool catalog approved", "request_id", requestIDFrom(c), "by", principalFrom(c).User, "server", body.Server, "tools", approved)
	return c.JSON(http.StatusOK, map[string]any{"server": body.Server, "approved": approved})
}
