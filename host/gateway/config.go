package gateway

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/antler-mcp/antler/host/config"
)

// getConfig answers GET /api/mcp/config: the servers as written in the file
// ($VAR placeholders kept, never resolved), with secrets masked. It reads
// under both locks, so it never sees a writer's cycle half done.
func (s *Server) getConfig(c echo.Context) error {
	file, err := s.configFile()
	if err != nil {
		return fail(c, http.StatusNotFound, "%s", err.Error())
	}
	data, exists, err := file.Read(c.Request().Context())
	if err != nil {
		return s.configFailure(c, err, "Failed to read MCP configuration")
	}
	servers := config.NewObject()
	if exists {
		if _, err := loadDoc(data, true); err != nil {
			return s.configFailure(c, err, "Failed to read MCP configuration")
		}
		ext, err := config.Parse(data, config.Placeholders)
		if err != nil {
			return s.configFailure(c, invalidConfigError(err), "Failed to read MCP configuration")
		}
		servers = ext.MaskedServers()
	}
	return c.JSON(http.StatusOK, map[string]any{"mcp_servers": servers})
}
