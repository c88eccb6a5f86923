package gateway

import (
	"errors"
	"net/http"
	"os"

	"github.com/labstack/echo/v4"

	"github.com/antler-mcp/antler/host/config"
)

// getConfig answers GET /api/mcp/config: the servers as written in the file
// ($VAR placeholders kept, never resolved), with secrets masked.
func (s *Server) getConfig(c echo.Context) error {
	path, err := s.cache.ConfigPath()
	if err != nil {
		return fail(c, http.StatusNotFound, "%s", err.Error())
	}
	servers := config.NewObject()
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fail(c, http.StatusInternalServerError, "Failed to read MCP configuration")
		}
		if err == nil {
			ext, err := config.Parse(data, config.Placeholders)
			if err != nil {
				return fail(c, http.StatusBadRequest, "Invalid MCP configuration: %s", err.Error())
			}
			servers = ext.MaskedServers()
		}
	}
	return c.JSON(http.StatusOK, map[string]any{"mcp_servers": servers})
}
