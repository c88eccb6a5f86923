package testmcp

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// Hostile is a streamable HTTP MCP server for attacks from the upstream
// side: it answers initialize (with session "s1") and tools/list (one tool,
// x) as a server would, and leaves tools/call, and the POSTs that carry
// the host's replies to its own requests, to the test. Everything else is
// 202.
type Hostile struct {
	// OnCall answers a tools/call whose JSON-RPC id is id.
	OnCall func(w http.ResponseWriter, r *http.Request, id json.RawMessage)
	// OnReply, when set, answers a POST carrying a reply of the host's.
	OnReply func(w http.ResponseWriter, r *http.Request)
}

func (s *Hostile) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"params"`
	}
	body, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(body, &m)
	switch {
	case m.Method == "initialize":
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Mcp-Session-Id", "s1")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"hostile","version":"1"}}}`, m.ID, m.Params.ProtocolVersion)
	case m.Method == "tools/list":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"x","inputSchema":{"type":"object"}}]}}`, m.ID)
	case m.Method == "tools/call":
		s.OnCall(w, r, m.ID)
	case m.Method == "" && m.ID != nil && s.OnReply != nil:
		s.OnReply(w, r)
	default:
		w.WriteHeader(http.StatusAccepted)
	}
}
