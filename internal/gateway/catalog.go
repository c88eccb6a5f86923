package gateway

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/antler-mcp/antler/internal/apierror"
)

// listCatalog answers the tool catalog's pending changes with their diffs.
func (s *Server) listCatalog(c echo.Context) error {
	pending, err := s.admin.PendingTools(c.Request().Context())
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

// approveCatalog approves pending tool definitions of one server; the tool
// set is rebuilt, so tools held back appear.
func (s *Server) approveCatalog(c echo.Context) error {
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
	approved, err := s.admin.ApproveTools(editCtx(c), body.Server, body.Tools)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"server": body.Server, "approved": approved})
}
