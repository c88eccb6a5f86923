package config_test

import (
	"testing"

	"github.com/antler-mcp/antler/internal/config"
)

func TestIsSensitiveKey(t *testing.T) {
	for key, want := range map[string]bool{
		"apiKey": true, "api_key": true, "API-KEY": true, "clientSecret": true, "accessKey": true,
		"privateKey": true, "token": true, "authToken": true, "refresh-token": true, "password": true,
		"passwd": true, "credentials": true, "Authorization": true, "bearer": true, "x_secret_value": true,
		"secretive": false, "tokenizer": false, "description": false, "keywords": false, "url": false,
		"monkey": false, "author": false, "": false,
	} {
		if got := config.IsSensitiveKey(key); got != want {
			t.Errorf("IsSensitiveKey(%q) = %v, want %v", key, got, want)
		}
	}
}

func TestMaskURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://mcp.example/mcp", "https://mcp.example/mcp"},
		{"https://user:pw@mcp.example/mcp", "https://user:***@mcp.example/mcp"},
		{"https://ghp_token@github.example/x", "https://***@github.example/x"},
		{"https://user:@h/x", "https://user:@h/x"},
		{"https://u:p@ss@h:8443/x?y=1", "https://u:***@h:8443/x?y=1"},
		{"https://h/mcp?a=1&api_key=k1&token=t1&Access-Token=t2#frag", "https://h/mcp?a=1&api_key=***&token=***&Access-Token=***#frag"},
		{"https://h/x?sig=abc&key=K&code=C&page=2&keyword=go", "https://h/x?sig=***&key=***&code=***&page=2&keyword=go"},
		{"https://h/x?token=&token", "https://h/x?token=&token"},
		{"https://h/x?api%5Fkey=v", "https://h/x?api%5Fkey=***"},
		{"https://h/a@b/x?password=$PASS", "https://h/a@b/x?password=***"},
		{"$MCP_URL", "$MCP_URL"},
		{"/relative?token=t", "/relative?token=***"},
		{"", ""},
	} {
		if got := config.MaskURL(tc.in); got != tc.want {
			t.Errorf("MaskURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
