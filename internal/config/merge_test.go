package config_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/config"
)

// obj parses a JSON object in document order.
func jsonObject(t *testing.T, doc string) *config.Object {
	t.Helper()
	if doc == "" {
		return nil
	}
	v, err := config.ParseJSON([]byte(doc))
	if err != nil {
		t.Fatalf("bad test JSON %s: %v", doc, err)
	}
	o, ok := v.(*config.Object)
	if !ok {
		t.Fatalf("test JSON is not an object: %s", doc)
	}
	return o
}

// plain decodes JSON for an order-insensitive comparison.
func plain(t *testing.T, data []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("bad JSON %s: %v", data, err)
	}
	return v
}

func marshal(t *testing.T, o *config.Object) []byte {
	t.Helper()
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sameJSON(t *testing.T, what string, got *config.Object, want string) {
	t.Helper()
	g := marshal(t, got)
	if !reflect.DeepEqual(plain(t, g), plain(t, []byte(want))) {
		t.Errorf("%s:\n got %s\nwant %s", what, g, want)
	}
}

const (
	bulk    = config.MergeBulk
	replace = config.MergeReplace
)

// TestMergeServer ports the merge cases of DeerFlow's
// test_mcp_config_secrets.py, test_mcp_user_scoped_auth.py and
// test_mcp_context_headers.py (the names are DeerFlow's test names).
// "masked" as incoming means the GET-masked form of stored.
func TestMergeServer(t *testing.T) {
	for _, tc := range []struct {
		name      string
		incoming  string
		stored    string
		mode      config.MergeMode
		want      string
		wantErr   string // the whole message
		wantInErr []string
	}{
		// --- env and headers ---
		{name: "test_merge_preserves_masked_env_values",
			incoming: `{"env": {"KEY": "***"}}`, stored: `{"env": {"KEY": "real_secret"}}`,
			want: `{"env": {"KEY": "real_secret"}}`},
		{name: "test_merge_preserves_masked_header_values",
			incoming: `{"headers": {"Authorization": "***"}}`, stored: `{"headers": {"Authorization": "Bearer real"}}`,
			want: `{"headers": {"Authorization": "Bearer real"}}`},
		{name: "test_merge_rejects_masked_value_for_new_env_key",
			incoming: `{"env": {"NEW_KEY": "***"}}`, stored: `{"env": {}}`,
			wantErr: "Cannot set env key 'NEW_KEY' to masked value '***'; provide a real value."},
		{name: "test_merge_rejects_masked_value_for_new_header_key",
			incoming: `{"headers": {"X-New-Auth": "***"}}`, stored: `{"headers": {}}`,
			wantErr: "Cannot set header 'X-New-Auth' to masked value '***'; provide a real value."},
		{name: "env keys absent from the request are dropped",
			incoming: `{"env": {"A": "***"}}`, stored: `{"env": {"A": "$A_TOKEN", "B": "b-secret"}}`,
			want: `{"env": {"A": "$A_TOKEN"}}`},
		{name: "placeholders are restored as written",
			incoming: `{"env": {"GITHUB_TOKEN": "***"}, "args": ["--api-key", "$EDITOR_TOKEN"], "provider_note": "$EDITOR_TOKEN"}`,
			stored:   `{"env": {"GITHUB_TOKEN": "$GITHUB_TOKEN"}, "args": ["--api-key", "$EDITOR_TOKEN"], "provider_note": "$EDITOR_TOKEN"}`,
			mode:     replace,
			want:     `{"env": {"GITHUB_TOKEN": "$GITHUB_TOKEN"}, "args": ["--api-key", "$EDITOR_TOKEN"], "provider_note": "$EDITOR_TOKEN"}`},

		// --- OAuth ---
		{name: "test_merge_preserves_oauth_secrets_when_none",
			incoming: `{"oauth": {"client_secret": null, "refresh_token": null, "token_url": "https://auth.example.com/token"}}`,
			stored:   `{"oauth": {"client_secret": "existing-secret", "refresh_token": "existing-refresh", "token_url": "https://auth.example.com/token"}}`,
			want:     `{"oauth": {"client_secret": "existing-secret", "refresh_token": "existing-refresh", "token_url": "https://auth.example.com/token"}}`},
		{name: "omitted OAuth secrets are preserved too",
			incoming: `{"oauth": {"token_url": "https://auth.example.com/token"}}`,
			stored:   `{"oauth": {"client_secret": "existing-secret", "refresh_token": "existing-refresh", "token_url": "https://auth.example.com/token"}}`,
			mode:     replace,
			want:     `{"oauth": {"client_secret": "existing-secret", "refresh_token": "existing-refresh", "token_url": "https://auth.example.com/token"}}`},
		{name: "test_merge_empty_string_clears_oauth_client_secret",
			incoming: `{"oauth": {"client_secret": "", "refresh_token": null, "token_url": "https://auth.example.com/token"}}`,
			stored:   `{"oauth": {"client_secret": "existing-secret", "refresh_token": "existing-refresh", "token_url": "https://auth.example.com/token"}}`,
			want:     `{"oauth": {"client_secret": null, "refresh_token": "existing-refresh", "token_url": "https://auth.example.com/token"}}`},
		{name: "test_merge_empty_string_clears_oauth_refresh_token",
			incoming: `{"oauth": {"client_secret": null, "refresh_token": "", "token_url": "https://auth.example.com/token"}}`,
			stored:   `{"oauth": {"client_secret": "existing-secret", "refresh_token": "existing-refresh", "token_url": "https://auth.example.com/token"}}`,
			want:     `{"oauth": {"client_secret": "existing-secret", "refresh_token": null, "token_url": "https://auth.example.com/token"}}`},
		{name: "test_merge_accepts_new_secret_values",
			incoming: `{"env": {"KEY": "new_secret"}, "oauth": {"client_secret": "new-client-secret", "refresh_token": "new-refresh-token", "token_url": "https://auth.example.com/token"}}`,
			stored:   `{"env": {"KEY": "old_secret"}, "oauth": {"client_secret": "old-secret", "refresh_token": "old-refresh", "token_url": "https://auth.example.com/token"}}`,
			want:     `{"env": {"KEY": "new_secret"}, "oauth": {"client_secret": "new-client-secret", "refresh_token": "new-refresh-token", "token_url": "https://auth.example.com/token"}}`},
		{name: "test_merge_handles_no_existing_oauth",
			incoming: `{"oauth": {"client_secret": "new-secret", "token_url": "https://auth.example.com/token"}}`,
			stored:   `{"oauth": null}`,
			want:     `{"oauth": {"client_secret": "new-secret", "token_url": "https://auth.example.com/token"}}`},
		{name: "an omitted oauth block is removed (DeerFlow keeps no stored oauth)",
			incoming: `{"type": "http", "url": "https://x/mcp"}`,
			stored:   `{"type": "http", "url": "https://x/mcp", "oauth": {"token_url": "https://t", "client_secret": "s"}}`,
			want:     `{"type": "http", "url": "https://x/mcp"}`},
		{name: "test_merge_round_trip_preserves_masked_oauth_extras",
			incoming: "masked", mode: replace,
			stored: `{"oauth": {"token_url": "https://auth.example.com/token", "vendor_endpoint": "https://vendor.example.com/oauth", "vendor_api_key": "vendor-secret", "nested": {"refreshToken": "refresh-secret", "safe": "visible"}}}`,
			want:   `{"oauth": {"token_url": "https://auth.example.com/token", "vendor_endpoint": "https://vendor.example.com/oauth", "vendor_api_key": "vendor-secret", "nested": {"refreshToken": "refresh-secret", "safe": "visible"}}}`},
		{name: "test_merge_round_trip_preserves_masked_oauth_extra_token_params", mode: replace,
			incoming: `{"oauth": {"token_url": "https://auth.example.com/token", "extra_token_params": {"api_key": "***", "client_assertion": "***", "resource": "***"}}}`,
			stored:   `{"oauth": {"token_url": "https://auth.example.com/token", "extra_token_params": {"api_key": "vendor-secret", "client_assertion": "signed-assertion", "resource": "https://resource.example.com"}}}`,
			want:     `{"oauth": {"token_url": "https://auth.example.com/token", "extra_token_params": {"api_key": "vendor-secret", "client_assertion": "signed-assertion", "resource": "https://resource.example.com"}}}`},
		{name: "test_merge_targeted_oauth_replacement_removes_omitted_extras", mode: replace,
			incoming: `{"oauth": {"token_url": "https://auth.example.com/token", "vendor_api_key": "***"}}`,
			stored:   `{"oauth": {"token_url": "https://auth.example.com/token", "extra_token_params": {"client_assertion": "remove-me"}, "vendor_api_key": "vendor-secret", "vendor_note": "remove-me"}}`,
			want:     `{"oauth": {"token_url": "https://auth.example.com/token", "vendor_api_key": "vendor-secret"}}`},
		{name: "test_merge_bulk_oauth_update_preserves_omitted_extras",
			incoming: `{"oauth": {"enabled": false, "token_url": "https://auth.example.com/token"}}`,
			stored:   `{"oauth": {"token_url": "https://auth.example.com/token", "extra_token_params": {"client_assertion": "keep-me"}, "vendor_api_key": "vendor-secret", "vendor_note": "keep-me"}}`,
			want:     `{"oauth": {"enabled": false, "token_url": "https://auth.example.com/token", "extra_token_params": {"client_assertion": "keep-me"}, "vendor_api_key": "vendor-secret", "vendor_note": "keep-me"}}`},
		{name: "test_merge_rejects_masked_new_oauth_extra_token_param", mode: replace,
			incoming: `{"oauth": {"token_url": "https://auth.example.com/token", "extra_token_params": {"client_assertion": "***"}}}`,
			stored:   `{"oauth": {"token_url": "https://auth.example.com/token"}}`,
			wantErr:  "Cannot set oauth extra_token_params key 'client_assertion' to masked value '***'; provide a real value."},
		{name: "test_merge_rejects_structural_edits_to_masked_oauth_extra_arrays",
			incoming: `{"oauth": {"token_url": "https://auth.example.com/token", "providers": [{"name": "alpha", "apiKey": "***"}, {"name": "beta", "apiKey": "secret-beta"}]}}`,
			stored:   `{"oauth": {"token_url": "https://auth.example.com/token", "providers": [{"name": "alpha", "apiKey": "secret-alpha"}]}}`,
			wantErr:  "Cannot edit extra config array 'providers' while masked secrets remain; provide real values for every masked secret."},
		{name: "a masked client_secret with nothing stored is refused",
			incoming: `{"oauth": {"token_url": "https://t", "client_secret": "***"}}`, stored: `{}`,
			wantErr: "Cannot persist masked secret placeholder for oauth client_secret; provide a real value."},

		// --- server extras ---
		{name: "test_merge_preserves_masked_sensitive_extra_values",
			incoming: `{"cwd": "/srv/new-workdir", "api_key": "***", "nested": {"refreshToken": "***", "safe": "updated"}, "endpoints": [{"access_key": "***", "name": "prod"}]}`,
			stored:   `{"cwd": "/srv/old-workdir", "api_key": "real-extra-secret", "nested": {"refreshToken": "real-refresh", "safe": "old"}, "endpoints": [{"access_key": "real-access", "name": "prod"}]}`,
			want:     `{"cwd": "/srv/new-workdir", "api_key": "real-extra-secret", "nested": {"refreshToken": "real-refresh", "safe": "updated"}, "endpoints": [{"access_key": "real-access", "name": "prod"}]}`},
		{name: "test_merge_rejects_structural_edits_to_masked_sensitive_extra_arrays[add]",
			incoming:  `{"providers": [{"name": "alpha", "apiKey": "***"}, {"name": "beta", "apiKey": "***"}, {"name": "gamma", "apiKey": "secret-gamma"}]}`,
			stored:    `{"providers": [{"name": "alpha", "apiKey": "secret-alpha"}, {"name": "beta", "apiKey": "secret-beta"}]}`,
			wantInErr: []string{"providers", "real values"}},
		{name: "test_merge_rejects_structural_edits_to_masked_sensitive_extra_arrays[remove]",
			incoming:  `{"providers": [{"name": "alpha", "apiKey": "***"}]}`,
			stored:    `{"providers": [{"name": "alpha", "apiKey": "secret-alpha"}, {"name": "beta", "apiKey": "secret-beta"}]}`,
			wantInErr: []string{"providers", "real values"}},
		{name: "test_merge_rejects_structural_edits_to_masked_sensitive_extra_arrays[reorder]",
			incoming: `{"providers": [{"name": "beta", "apiKey": "***"}, {"name": "alpha", "apiKey": "***"}]}`,
			stored:   `{"providers": [{"name": "alpha", "apiKey": "secret-alpha"}, {"name": "beta", "apiKey": "secret-beta"}]}`,
			wantErr:  "Cannot edit extra config array 'providers' while masked secrets remain; provide real values for every masked secret."},
		{name: "an unedited masked array is the stored array",
			incoming: `{"providers": [{"name": "alpha", "apiKey": "***"}, {"name": "beta", "apiKey": "***"}]}`,
			stored:   `{"providers": [{"name": "alpha", "apiKey": "secret-alpha"}, {"name": "beta", "apiKey": "secret-beta"}]}`,
			want:     `{"providers": [{"name": "alpha", "apiKey": "secret-alpha"}, {"name": "beta", "apiKey": "secret-beta"}]}`},
		{name: "test_merge_allows_structural_extra_array_edits_with_real_replacement_secrets",
			incoming: `{"providers": [{"name": "beta", "apiKey": "replacement-beta"}, {"name": "gamma", "apiKey": "secret-gamma"}]}`,
			stored:   `{"providers": [{"name": "alpha", "apiKey": "secret-alpha"}, {"name": "beta", "apiKey": "secret-beta"}]}`,
			want:     `{"providers": [{"name": "beta", "apiKey": "replacement-beta"}, {"name": "gamma", "apiKey": "secret-gamma"}]}`},
		{name: "test_merge_allows_structural_edits_to_non_sensitive_extra_arrays",
			incoming: `{"routes": [{"name": "beta"}, {"name": "gamma"}]}`, stored: `{"routes": [{"name": "alpha"}]}`,
			want: `{"routes": [{"name": "beta"}, {"name": "gamma"}]}`},
		{name: "test_merge_rejects_masked_sensitive_extra_value_for_new_key",
			incoming: `{"api_key": "***"}`, stored: `{}`,
			wantErr: "Cannot set extra config key 'api_key' to masked value '***'; provide a real value."},
		{name: "a nested masked key that is not stored names the nested key",
			incoming: `{"nested": {"refreshToken": "***"}}`, stored: `{"nested": {"safe": "x"}}`,
			wantErr: "Cannot set extra config key 'refreshToken' to masked value '***'; provide a real value."},
		{name: "a masked value under a harmless key is ordinary text",
			incoming: `{"description": "***", "note": "***"}`, stored: `{}`,
			want: `{"description": "***", "note": "***"}`},
		{name: "a whole sensitive extra (object) masked as one value is restored",
			incoming: `{"credentials": "***"}`, stored: `{"credentials": {"user": "u", "pass": "p"}}`,
			want: `{"credentials": {"user": "u", "pass": "p"}}`},
		{name: "sensitive key names are normalised as DeerFlow does (AWSSecretKey)",
			incoming: `{"AWSSecretKey": "***"}`, stored: `{"AWSSecretKey": "aws-secret"}`,
			want: `{"AWSSecretKey": "aws-secret"}`},
		{name: "test_update_mcp_configuration_preserves_server_extra_fields",
			incoming: `{"enabled": false, "type": "stdio", "command": "npx", "args": ["-y", "@playwright/mcp"]}`,
			stored:   `{"enabled": true, "type": "stdio", "command": "npx", "args": ["-y", "@playwright/mcp"], "cwd": "/srv/mcp-workdir", "customFlag": "keep-me", "api_key": "real-extra-secret"}`,
			want:     `{"enabled": false, "type": "stdio", "command": "npx", "args": ["-y", "@playwright/mcp"], "cwd": "/srv/mcp-workdir", "customFlag": "keep-me", "api_key": "real-extra-secret"}`},
		{name: "test_update_mcp_configuration_preserves_omitted_routing_and_tools",
			incoming: `{"enabled": false, "type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-postgres"]}`,
			stored:   `{"enabled": true, "type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-postgres"], "routing": {"mode": "prefer", "priority": 50, "keywords": ["订单", "SQL"]}, "tools": {"query": {"routing": {"priority": 100, "keywords": ["查库"]}}}}`,
			want:     `{"enabled": false, "type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-postgres"], "routing": {"mode": "prefer", "priority": 50, "keywords": ["订单", "SQL"]}, "tools": {"query": {"routing": {"priority": 100, "keywords": ["查库"]}}}}`},
		// Antler keeps DeerFlow's deletions but not its move of the stored
		// secrets to a new URL: they would go wherever the caller points it.
		{name: "test_update_mcp_server_honors_deletions_in_complete_replacement", mode: replace,
			incoming: `{"enabled": true, "type": "http", "url": "https://old.example/mcp", "headers": {"Authorization": "***"}, "api_key": "***"}`,
			stored: `{"enabled": true, "type": "http", "url": "https://old.example/mcp", "headers": {"Authorization": "Bearer real-secret"}, "api_key": "real-extra-secret", "custom_note": "remove-me",
				"routing": {"mode": "prefer", "priority": 80, "keywords": ["legacy"]}, "tools": {"search": {"routing": {"priority": 90}}},
				"user_auth": {"users": {"u1": "Bearer user-secret"}}, "headers_from_context": {"enabled": true, "headers": {"X-Tenant": "tenant_id"}, "on_missing": "passthrough"}}`,
			want: `{"enabled": true, "type": "http", "url": "https://old.example/mcp", "headers": {"Authorization": "Bearer real-secret"}, "api_key": "real-extra-secret"}`},
		{name: "masked secrets do not follow a server to a new url", mode: replace,
			incoming: `{"enabled": true, "type": "http", "url": "https://new.example/mcp", "headers": {"Authorization": "***"}}`,
			stored:   `{"enabled": true, "type": "http", "url": "https://old.example/mcp", "headers": {"Authorization": "Bearer real-secret"}}`,
			wantErr:  "Cannot keep masked '***' secrets when the server's 'url' changes; provide real values for them."},
		{name: "masked env does not follow a stdio server to new args", mode: bulk,
			incoming: `{"command": "npx", "args": ["-y", "attacker-package"], "env": {"GITHUB_TOKEN": "***"}}`,
			stored:   `{"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"], "env": {"GITHUB_TOKEN": "ghp_real"}}`,
			wantErr:  "Cannot keep masked '***' secrets when the server's 'args' changes; provide real values for them."},
		{name: "real values with a new url are fine", mode: replace,
			incoming: `{"type": "http", "url": "https://new.example/mcp", "headers": {"Authorization": "Bearer new"}}`,
			stored:   `{"type": "http", "url": "https://old.example/mcp", "headers": {"Authorization": "Bearer real-secret"}}`,
			want:     `{"type": "http", "url": "https://new.example/mcp", "headers": {"Authorization": "Bearer new"}}`},

		// --- per-tool overrides ---
		{name: "test_merge_round_trip_preserves_masked_per_tool_override_extras", mode: replace,
			incoming: `{"tools": {"search": {"routing": {"mode": "prefer", "priority": 80}, "api_key": "***", "nested": {"refreshToken": "***", "safe": "visible"}}}}`,
			stored:   `{"tools": {"search": {"routing": {"mode": "prefer", "priority": 40}, "api_key": "tool-secret", "nested": {"refreshToken": "refresh-secret", "safe": "visible"}}}}`,
			want:     `{"tools": {"search": {"routing": {"mode": "prefer", "priority": 80}, "api_key": "tool-secret", "nested": {"refreshToken": "refresh-secret", "safe": "visible"}}}}`},
		{name: "test_merge_rejects_masked_per_tool_override_secret_for_new_key", mode: replace,
			incoming: `{"tools": {"search": {"api_key": "***"}}}`, stored: `{"tools": {"search": {"routing": {"priority": 20}}}}`,
			wantErr: "Cannot set extra config key 'api_key' to masked value '***'; provide a real value."},
		{name: "bulk: a sent tool override keeps its stored routing and extras",
			incoming: `{"tools": {"search": {"note": "new"}}}`,
			stored:   `{"tools": {"search": {"routing": {"priority": 20}, "api_key": "tool-secret", "note": "old"}, "other": {"routing": {"mode": "prefer"}}}}`,
			want:     `{"tools": {"search": {"note": "new", "routing": {"priority": 20}, "api_key": "tool-secret"}}}`},

		// --- user_auth ([PR4868] test_mcp_user_scoped_auth.py) ---
		{name: "test_gateway_merge_preserves_masked_user_auth_values",
			incoming: `{"type": "http", "url": "https://x/mcp", "user_auth": {"users": {"alice": "***", "bob": "***"}}}`,
			stored:   `{"type": "http", "url": "https://x/mcp", "user_auth": {"users": {"alice": "Bearer alice-token", "bob": "$BOB_TOKEN"}}}`,
			want:     `{"type": "http", "url": "https://x/mcp", "user_auth": {"users": {"alice": "Bearer alice-token", "bob": "$BOB_TOKEN"}}}`},
		{name: "test_gateway_merge_rejects_masked_value_for_new_user",
			incoming: `{"user_auth": {"users": {"alice": "***", "carol": "***"}}}`,
			stored:   `{"user_auth": {"users": {"alice": "Bearer alice-token"}}}`,
			wantErr:  "Cannot set user_auth credential for 'carol' to masked value '***'; provide a real value."},
		{name: "test_gateway_merge_preserves_user_auth_when_field_omitted",
			incoming: `{"type": "http", "url": "https://x/mcp"}`,
			stored:   `{"type": "http", "url": "https://x/mcp", "user_auth": {"header": "X-User-Token", "users": {"alice": "a-token"}, "on_missing": "passthrough"}}`,
			want:     `{"type": "http", "url": "https://x/mcp", "user_auth": {"header": "X-User-Token", "users": {"alice": "a-token"}, "on_missing": "passthrough"}}`},
		{name: "test_partial_user_auth_put_preserves_stored_subfields",
			incoming: `{"user_auth": {"enabled": false}}`,
			stored:   `{"user_auth": {"header": "X-User-Token", "users": {"alice": "a-token"}, "on_missing": "passthrough", "tenant": "acme"}}`,
			want:     `{"user_auth": {"enabled": false, "header": "X-User-Token", "users": {"alice": "a-token"}, "on_missing": "passthrough", "tenant": "acme"}}`},
		{name: "test_explicit_users_map_still_replaces_and_can_remove",
			incoming: `{"user_auth": {"users": {"alice": "***"}}}`,
			stored:   `{"user_auth": {"users": {"alice": "a-token", "bob": "b-token"}, "on_missing": "passthrough"}}`,
			want:     `{"user_auth": {"users": {"alice": "a-token"}, "on_missing": "passthrough"}}`},
		{name: "test_user_auth_extra_keys_survive_parse_mask_and_merge", incoming: "masked",
			stored: `{"type": "http", "url": "https://x/mcp", "user_auth": {"users": {"alice": "a-token"}, "tenant": "acme", "apiToken": "ua-secret"}}`,
			want:   `{"type": "http", "url": "https://x/mcp", "user_auth": {"users": {"alice": "a-token"}, "tenant": "acme", "apiToken": "ua-secret"}}`},
		{name: "replace: an omitted user_auth block is removed", mode: replace,
			incoming: `{"type": "http", "url": "https://x/mcp"}`,
			stored:   `{"type": "http", "url": "https://x/mcp", "user_auth": {"users": {"alice": "a-token"}}}`,
			want:     `{"type": "http", "url": "https://x/mcp"}`},

		// --- headers_from_context ([later] test_mcp_context_headers.py) ---
		{name: "test_gateway_merge_preserves_block_when_field_omitted",
			incoming: `{"type": "http", "url": "https://x/mcp"}`,
			stored:   `{"type": "http", "url": "https://x/mcp", "headers_from_context": {"headers": {"X-Tenant-Token": "tenant_token"}, "on_missing": "passthrough"}}`,
			want:     `{"type": "http", "url": "https://x/mcp", "headers_from_context": {"headers": {"X-Tenant-Token": "tenant_token"}, "on_missing": "passthrough"}}`},
		{name: "test_gateway_put_can_replace_the_mapping",
			incoming: `{"headers_from_context": {"headers": {"X-New": "new_key"}}}`,
			stored:   `{"headers_from_context": {"headers": {"X-Tenant-Token": "tenant_token"}, "on_missing": "passthrough"}}`,
			want:     `{"headers_from_context": {"headers": {"X-New": "new_key"}, "on_missing": "passthrough"}}`},
		{name: "test_gateway_partial_block_preserves_stored_mapping_and_policy",
			incoming: `{"headers_from_context": {"enabled": false}}`,
			stored:   `{"headers_from_context": {"headers": {"X-Tenant-Token": "tenant_token"}, "on_missing": "passthrough"}}`,
			want:     `{"headers_from_context": {"enabled": false, "headers": {"X-Tenant-Token": "tenant_token"}, "on_missing": "passthrough"}}`},
		{name: "test_gateway_partial_block_explicit_empty_mapping_still_clears",
			incoming: `{"headers_from_context": {"headers": {}}}`,
			stored:   `{"headers_from_context": {"headers": {"X-Tenant-Token": "tenant_token"}, "on_missing": "passthrough"}}`,
			want:     `{"headers_from_context": {"headers": {}, "on_missing": "passthrough"}}`},
		{name: "test_gateway_round_trip_restores_masked_extras_inside_the_block", incoming: "masked", mode: replace,
			stored: `{"headers_from_context": {"headers": {"X-T": "t"}, "vendor_token": "hfc-secret", "nested": {"password": "p", "x": 1}}}`,
			want:   `{"headers_from_context": {"headers": {"X-T": "t"}, "vendor_token": "hfc-secret", "nested": {"password": "p", "x": 1}}}`},
		{name: "test_gateway_keeps_block_extras_a_put_does_not_mention",
			incoming: `{"headers_from_context": {"headers": {"X-T": "t2"}}}`,
			stored:   `{"headers_from_context": {"headers": {"X-T": "t"}, "vendor_token": "hfc-secret", "note": "n"}}`,
			want:     `{"headers_from_context": {"headers": {"X-T": "t2"}, "vendor_token": "hfc-secret", "note": "n"}}`},
		{name: "test_gateway_rejects_a_masked_value_for_an_unknown_block_extra",
			incoming: `{"headers_from_context": {"api_key": "***"}}`,
			stored:   `{"headers_from_context": {"headers": {"X-T": "t"}}}`,
			wantErr:  "Cannot set extra config key 'api_key' to masked value '***'; provide a real value."},

		// --- brand-new servers: no placeholder may be persisted ---
		{name: "test_create_mcp_servers_rejects_masked_secret_sentinel_without_writing",
			incoming: `{"type": "http", "url": "https://new.example/mcp", "providers": [{"name": "alpha", "apiKey": "***"}]}`,
			wantErr:  "Cannot persist masked secret placeholder for extra config key 'providers'; provide a real value."},
		{name: "test_new_server_writes_reject_masked_headers_from_context_extra_without_writing",
			incoming: `{"type": "http", "url": "https://new.example/mcp", "headers_from_context": {"api_key": "***"}}`,
			wantErr:  "Cannot persist masked secret placeholder for headers_from_context extra config key 'api_key'; provide a real value."},
		{name: "test_new_server_writes_reject_masked_per_tool_override_secret_without_writing",
			incoming: `{"type": "http", "url": "https://new.example/mcp", "tools": {"search": {"api_key": "***"}}}`,
			wantErr:  "Cannot persist masked secret placeholder for tools override 'search' extra config key 'api_key'; provide a real value."},
		{name: "test_new_server_writes_reject_masked_oauth_secret_without_writing[client_secret]",
			incoming: `{"type": "http", "url": "https://n/mcp", "oauth": {"token_url": "https://t", "client_secret": "***"}}`,
			wantErr:  "Cannot persist masked secret placeholder for oauth client_secret; provide a real value."},
		{name: "test_new_server_writes_reject_masked_oauth_secret_without_writing[refresh_token]",
			incoming: `{"type": "http", "url": "https://n/mcp", "oauth": {"token_url": "https://t", "refresh_token": "***"}}`,
			wantErr:  "Cannot persist masked secret placeholder for oauth refresh_token; provide a real value."},
		{name: "test_new_server_writes_reject_masked_oauth_secret_without_writing[vendor_api_key]",
			incoming: `{"type": "http", "url": "https://n/mcp", "oauth": {"token_url": "https://t", "vendor_api_key": "***"}}`,
			wantErr:  "Cannot persist masked secret placeholder for oauth extra config key 'vendor_api_key'; provide a real value."},
		{name: "test_new_server_writes_reject_masked_oauth_secret_without_writing[extra_token_params.api_key]",
			incoming: `{"type": "http", "url": "https://n/mcp", "oauth": {"token_url": "https://t", "extra_token_params": {"api_key": "***"}}}`,
			wantErr:  "Cannot persist masked secret placeholder for oauth extra_token_params key 'api_key'; provide a real value."},
		{name: "test_new_server_writes_reject_masked_oauth_secret_without_writing[extra_token_params.client_assertion]",
			incoming: `{"type": "http", "url": "https://n/mcp", "oauth": {"token_url": "https://t", "extra_token_params": {"client_assertion": "***"}}}`,
			wantErr:  "Cannot persist masked secret placeholder for oauth extra_token_params key 'client_assertion'; provide a real value."},
		{name: "new server: masked env value",
			incoming: `{"command": "npx", "env": {"GITHUB_TOKEN": "***"}}`,
			wantErr:  "Cannot persist masked secret placeholder for env key 'GITHUB_TOKEN'; provide a real value."},
		{name: "new server: masked header value",
			incoming: `{"type": "http", "url": "https://n/mcp", "headers": {"X-Api-Key": "***"}}`,
			wantErr:  "Cannot persist masked secret placeholder for header 'X-Api-Key'; provide a real value."},
		{name: "new server: masked user_auth credential and extra",
			incoming: `{"type": "http", "url": "https://n/mcp", "user_auth": {"users": {"alice": "***"}}}`,
			wantErr:  "Cannot persist masked secret placeholder for user_auth credential 'alice'; provide a real value."},
		{name: "new server: masked user_auth extra",
			incoming: `{"type": "http", "url": "https://n/mcp", "user_auth": {"apiToken": "***"}}`,
			wantErr:  "Cannot persist masked secret placeholder for user_auth extra config key 'apiToken'; provide a real value."},
		{name: "new server without placeholders is taken as is",
			incoming: `{"type": "http", "url": "https://n/mcp", "headers": {"X-Api-Key": "$KEY"}, "description": "***"}`,
			want:     `{"type": "http", "url": "https://n/mcp", "headers": {"X-Api-Key": "$KEY"}, "description": "***"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stored := jsonObject(t, tc.stored)
			var incoming *config.Object
			if tc.incoming == "masked" {
				incoming = config.MaskRawServer(stored)
			} else {
				incoming = jsonObject(t, tc.incoming)
			}
			before := string(marshal(t, incoming)) + string(marshal(t, stored))
			var got *config.Object
			var err error
			if stored == nil {
				err = config.CheckNoMaskedSecrets(incoming)
				got = incoming
			} else {
				got, err = config.MergeServer(incoming, stored, tc.mode)
			}
			if after := string(marshal(t, incoming)) + string(marshal(t, stored)); after != before {
				t.Errorf("the merge changed its inputs")
			}
			if tc.wantErr != "" || tc.wantInErr != nil {
				var me *config.MergeError
				if !errors.As(err, &me) {
					t.Fatalf("err = %v, want a *MergeError", err)
				}
				if tc.wantErr != "" && err.Error() != tc.wantErr {
					t.Errorf("err = %q\n want %q", err, tc.wantErr)
				}
				for _, w := range tc.wantInErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("err %q lacks %q", err, w)
					}
				}
				checkNoStoredSecret(t, err.Error(), tc.stored)
				return
			}
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			sameJSON(t, "merged", got, tc.want)
		})
	}
}

// checkNoStoredSecret fails when a message repeats one of the secret-looking
// values of the stored server.
func checkNoStoredSecret(t *testing.T, msg, stored string) {
	t.Helper()
	for _, s := range []string{"real_secret", "Bearer real", "existing-secret", "secret-alpha", "secret-beta",
		"real-extra-secret", "tool-secret", "alice-token", "vendor-secret", "signed-assertion", "hfc-secret"} {
		if strings.Contains(stored, s) && strings.Contains(msg, s) {
			t.Errorf("message %q repeats the stored secret %q", msg, s)
		}
	}
}

func TestMergeDoesNotMutateOriginal(t *testing.T) {
	// test_merge_does_not_mutate_original
	incoming := jsonObject(t, `{"env": {"KEY": "***"}, "nested": {"token": "***"}, "list": [{"secret": "***"}]}`)
	stored := jsonObject(t, `{"env": {"KEY": "secret"}, "nested": {"token": "t"}, "list": [{"secret": "s"}]}`)
	merged, err := config.MergeServer(incoming, stored, bulk)
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "incoming", incoming, `{"env": {"KEY": "***"}, "nested": {"token": "***"}, "list": [{"secret": "***"}]}`)
	sameJSON(t, "stored", stored, `{"env": {"KEY": "secret"}, "nested": {"token": "t"}, "list": [{"secret": "s"}]}`)
	sameJSON(t, "merged", merged, `{"env": {"KEY": "secret"}, "nested": {"token": "t"}, "list": [{"secret": "s"}]}`)
	// The result shares nothing with the stored tree.
	env, _ := merged.Get("env")
	env.(*config.Object).Set("KEY", "changed")
	sameJSON(t, "stored after editing the result", stored, `{"env": {"KEY": "secret"}, "nested": {"token": "t"}, "list": [{"secret": "s"}]}`)
}

func TestMergeKeepsKeyOrder(t *testing.T) {
	incoming := jsonObject(t, `{"zeta": 1, "env": {"B": "***", "A": "a"}, "alpha": 2, "oauth": {"token_url": "u", "client_secret": null}}`)
	stored := jsonObject(t, `{"alpha": 0, "env": {"A": "x", "B": "b"}, "oauth": {"client_secret": "s", "token_url": "u"}, "late": true}`)
	merged, err := config.MergeServer(incoming, stored, bulk)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"zeta":1,"env":{"B":"b","A":"a"},"alpha":2,"oauth":{"token_url":"u","client_secret":"s"},"late":true}`
	if got := string(marshal(t, merged)); got != want {
		t.Errorf("order:\n got %s\nwant %s", got, want)
	}
}

// TestMaskedServers ports the masking cases (GET): what the config API
// shows for a stored server.
func TestMaskedServers(t *testing.T) {
	for _, tc := range []struct {
		name, server string
		want         map[string]string // top-level field → its masked JSON
	}{
		{"test_mask_replaces_env_values_with_asterisks",
			`{"command": "npx", "env": {"GITHUB_TOKEN": "ghp_real_secret_123", "API_KEY": "sk-abc"}}`,
			map[string]string{"env": `{"GITHUB_TOKEN": "***", "API_KEY": "***"}`}},
		{"test_mask_replaces_header_values_with_asterisks",
			`{"type": "http", "url": "https://x", "headers": {"Authorization": "Bearer tok_123", "X-API-Key": "key_456"}}`,
			map[string]string{"headers": `{"Authorization": "***", "X-API-Key": "***"}`}},
		{"test_mask_removes_oauth_secrets",
			`{"type": "http", "url": "https://x", "oauth": {"client_id": "my-client", "client_secret": "super-secret", "refresh_token": "refresh-token-abc", "token_url": "https://auth.example.com/token"}}`,
			map[string]string{"oauth": `{"enabled": true, "token_url": "https://auth.example.com/token", "grant_type": "client_credentials", "client_id": "my-client", "client_secret": null, "refresh_token": null, "scope": null, "audience": null, "token_field": "access_token", "token_type_field": "token_type", "expires_in_field": "expires_in", "default_token_type": "Bearer", "refresh_skew_seconds": 60, "extra_token_params": {}}`}},
		{"test_mask_scrubs_sensitive_oauth_extras_but_preserves_safe_extras",
			`{"type": "http", "url": "https://x", "oauth": {"token_url": "https://t", "vendor_endpoint": "https://vendor.example.com/oauth", "vendor_api_key": "vendor-secret", "nested": {"refreshToken": "refresh-secret", "safe": "visible"}}}`,
			map[string]string{"oauth.vendor_endpoint": `"https://vendor.example.com/oauth"`, "oauth.vendor_api_key": `"***"`, "oauth.nested": `{"refreshToken": "***", "safe": "visible"}`}},
		{"test_mask_scrubs_all_oauth_extra_token_params",
			`{"type": "http", "url": "https://x", "oauth": {"token_url": "https://t", "extra_token_params": {"api_key": "vendor-secret", "client_assertion": "signed-assertion", "resource": "https://resource.example.com"}}}`,
			map[string]string{"oauth.extra_token_params": `{"api_key": "***", "client_assertion": "***", "resource": "***"}`}},
		{"test_mask_preserves_non_secret_fields",
			`{"enabled": true, "type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"], "env": {"KEY": "val"}, "description": "GitHub MCP server"}`,
			map[string]string{"enabled": `true`, "type": `"stdio"`, "command": `"npx"`, "args": `["-y", "@modelcontextprotocol/server-github"]`, "description": `"GitHub MCP server"`}},
		{"test_mask_handles_empty_env_and_headers", `{"command": "npx"}`,
			map[string]string{"env": `{}`, "headers": `{}`}},
		{"test_mask_handles_no_oauth", `{"command": "npx", "oauth": null}`,
			map[string]string{"oauth": `null`, "user_auth": `null`, "headers_from_context": `null`}},
		{"test_mask_scrubs_sensitive_extra_fields_but_preserves_safe_extra_fields",
			`{"command": "npx", "cwd": "/srv/mcp-workdir", "customFlag": "keep-me", "api_key": "real-extra-secret", "nested": {"refreshToken": "refresh-secret", "safe": "visible"}, "endpoints": [{"access_key": "access-secret", "name": "prod"}]}`,
			map[string]string{"cwd": `"/srv/mcp-workdir"`, "customFlag": `"keep-me"`, "api_key": `"***"`, "nested": `{"refreshToken": "***", "safe": "visible"}`, "endpoints": `[{"access_key": "***", "name": "prod"}]`}},
		{"test_mask_scrubs_sensitive_per_tool_override_extras",
			`{"command": "npx", "tools": {"search": {"routing": {"mode": "prefer", "priority": 70}, "api_key": "tool-secret", "nested": {"refreshToken": "refresh-secret", "safe": "visible"}}}}`,
			map[string]string{"tools": `{"search": {"routing": {"mode": "prefer", "priority": 70}, "api_key": "***", "nested": {"refreshToken": "***", "safe": "visible"}}}`}},
		{"test_gateway_masks_user_auth_credentials",
			`{"type": "http", "url": "https://x", "user_auth": {"users": {"alice": "Bearer a", "bob": "$BOB"}}}`,
			map[string]string{"user_auth": `{"enabled": true, "header": "Authorization", "users": {"alice": "***", "bob": "***"}, "on_missing": "deny"}`}},
		{"test_gateway_masks_sensitive_user_auth_extra_keys",
			`{"type": "http", "url": "https://x", "user_auth": {"users": {}, "apiToken": "ua-secret", "tenant": "acme"}}`,
			map[string]string{"user_auth": `{"enabled": true, "header": "Authorization", "users": {}, "on_missing": "deny", "apiToken": "***", "tenant": "acme"}`}},
		{"test_gateway_exposes_mapping_without_masking",
			`{"type": "http", "url": "https://x", "headers_from_context": {"headers": {"X-Tenant-Token": "tenant_token"}}}`,
			map[string]string{"headers_from_context": `{"enabled": true, "headers": {"X-Tenant-Token": "tenant_token"}, "on_missing": "deny"}`}},
		{"test_gateway_masks_sensitive_extras_inside_the_block",
			`{"type": "http", "url": "https://x", "headers_from_context": {"headers": {"X-T": "t"}, "vendor_token": "hfc-secret", "nested": {"password": "p"}}}`,
			map[string]string{"headers_from_context": `{"enabled": true, "headers": {"X-T": "t"}, "on_missing": "deny", "vendor_token": "***", "nested": {"password": "***"}}`}},
		{"DeerFlow's key normalisation: AWSSecretKey and api--key are secrets",
			`{"command": "npx", "AWSSecretKey": "aws-secret", "api--key": "k", "tokenizer": "visible"}`,
			map[string]string{"AWSSecretKey": `"***"`, "api--key": `"***"`, "tokenizer": `"visible"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := `{"mcpServers": {"s": ` + tc.server + `}}`
			ext, err := config.Parse([]byte(doc), config.Placeholders)
			if err != nil {
				t.Fatal(err)
			}
			rawBefore := string(marshal(t, ext.Raw))
			masked := ext.MaskedServers()
			// test_mask_does_not_mutate_original: the raw document is untouched.
			if after := string(marshal(t, ext.Raw)); after != rawBefore {
				t.Errorf("masking changed the raw document")
			}
			sv, _ := masked.Get("s")
			server := plain(t, marshal(t, sv.(*config.Object))).(map[string]any)
			for path, want := range tc.want {
				var got any = server
				for _, part := range strings.Split(path, ".") {
					got = got.(map[string]any)[part]
				}
				if !reflect.DeepEqual(got, plain(t, []byte(want))) {
					g, _ := json.Marshal(got)
					t.Errorf("%s = %s, want %s", path, g, want)
				}
			}
		})
	}
}

// TestRoundTripMaskThenMerge is test_roundtrip_mask_then_merge_preserves_
// original_secrets with the form GET really returns (every field with its
// default): GET → toggle enabled → PUT keeps every secret.
func TestRoundTripMaskThenMerge(t *testing.T) {
	stored := `{"enabled": true, "type": "http", "url": "https://x/mcp", "env": {"GITHUB_TOKEN": "ghp_real_secret"},
		"headers": {"Authorization": "Bearer real_token"},
		"oauth": {"client_id": "client-123", "client_secret": "oauth-secret", "refresh_token": "refresh-abc", "token_url": "https://auth.example.com/token", "extra_token_params": {"resource": "$RESOURCE"}},
		"user_auth": {"users": {"alice": "$ALICE_TOKEN"}, "apiToken": "ua-secret"},
		"api_key": "extra-secret", "providers": [{"name": "a", "apiKey": "pa"}],
		"tools": {"q": {"routing": {"mode": "prefer"}, "authToken": "tool-secret"}},
		"description": "GitHub MCP server"}`
	for _, mode := range []config.MergeMode{bulk, replace} {
		ext, err := config.Parse([]byte(`{"mcpServers": {"s": `+stored+`}}`), config.Placeholders)
		if err != nil {
			t.Fatal(err)
		}
		sv, _ := ext.MaskedServers().Get("s")
		fromFrontend := sv.(*config.Object)
		fromFrontend.Set("enabled", false)
		merged, err := config.MergeServer(fromFrontend, jsonObject(t, stored), mode)
		if err != nil {
			t.Fatalf("mode %d: %v", mode, err)
		}
		// The merged entry loads exactly like the stored one, but disabled.
		want, _ := config.Parse([]byte(`{"mcpServers": {"s": `+stored+`}}`), config.Placeholders)
		want.Servers[0].Enabled = false
		gotDoc := config.NewObject()
		servers := config.NewObject()
		servers.Set("s", merged)
		gotDoc.Set("mcpServers", servers)
		got, err := config.Parse(marshal(t, gotDoc), config.Placeholders)
		if err != nil {
			t.Fatalf("mode %d: merged server does not load: %v", mode, err)
		}
		g, _ := json.Marshal(got.MaskedServers())
		w, _ := json.Marshal(want.MaskedServers())
		if string(g) != string(w) {
			t.Errorf("mode %d:\n got %s\nwant %s", mode, g, w)
		}
		m := string(marshal(t, merged))
		for _, secret := range []string{"ghp_real_secret", "Bearer real_token", "oauth-secret", "refresh-abc", "$RESOURCE", "$ALICE_TOKEN", "ua-secret", "extra-secret", `"pa"`, "tool-secret"} {
			if !strings.Contains(m, secret) {
				t.Errorf("mode %d: merged server lost %s: %s", mode, secret, m)
			}
		}
		if strings.Contains(m, config.Mask) {
			t.Errorf("mode %d: a placeholder survived: %s", mode, m)
		}
	}
}
