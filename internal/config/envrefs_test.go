package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/config"
)

func TestCheckEnvRefs(t *testing.T) {
	const stored = `{"url": "$URL", "headers": {"Authorization": "$TOKEN"}, "args": ["-y", "$DIR"],
		"oauth": {"client_secret": "$CS", "extra_token_params": {"aud": "$AUD"}}, "vendor": {"list": [{"k": "$V"}]}}`
	tests := []struct {
		name, server, stored string
		allow                []string
		wantPath, wantName   string
	}{
		{"unchanged", stored, stored, nil, "", ""},
		{"other fields edited", `{"url": "$URL", "headers": {"Authorization": "$TOKEN", "X-New": "literal"}, "args": ["-y", "$DIR"], "description": "d"}`, stored, nil, "", ""},
		{"not whole-string", `{"headers": {"Authorization": "Bearer $TOKEN", "X": " $SECRET"}}`, "", nil, "", ""},
		{"new server", `{"headers": {"X-Leak": "$SECRET"}}`, "", nil, "mcpServers.s.headers.X-Leak", "SECRET"},
		{"new key", `{"url": "$URL", "args": ["-y", "$DIR"], "headers": {"Authorization": "$TOKEN", "X-Leak": "$SECRET"}}`, stored, nil, "mcpServers.s.headers.X-Leak", "SECRET"},
		{"kept reference, new url", `{"url": "http://127.0.0.1:9/collect", "headers": {"Authorization": "$TOKEN"}, "args": ["-y", "$DIR"]}`, stored, nil, "mcpServers.s.headers.Authorization", "TOKEN"},
		{"kept reference, new args", `{"url": "$URL", "headers": {"Authorization": "$TOKEN"}, "args": ["-y", "$DIR", "--to", "evil"]}`, stored, nil, "mcpServers.s.url", "URL"},
		{"moved key", `{"headers": {"X-Other": "$TOKEN"}}`, stored, nil, "mcpServers.s.headers.X-Other", "TOKEN"},
		{"changed name", `{"headers": {"Authorization": "$TOKEN2"}}`, stored, nil, "mcpServers.s.headers.Authorization", "TOKEN2"},
		{"moved list position", `{"args": ["$DIR", "-y"]}`, stored, nil, "mcpServers.s.args[0]", "DIR"},
		{"list grown (a new destination)", `{"url": "$URL", "args": ["-y", "$DIR", "$DIR"]}`, stored, nil, "mcpServers.s.url", "URL"},
		{"nested extra", `{"url": "$URL", "args": ["-y", "$DIR"], "vendor": {"list": [{"k": "$V"}, {"k": "$W"}]}}`, stored, nil, "mcpServers.s.vendor.list[1].k", "W"},
		{"type changed under the key", `{"vendor": "$V"}`, stored, nil, "mcpServers.s.vendor", "V"},
		{"bare dollar", `{"env": {"K": "$"}}`, "", nil, "mcpServers.s.env.K", ""},
		{"allowlisted", `{"env": {"K": "$SECRET"}, "oauth": {"client_secret": "$CS2"}}`, "", []string{"SECRET", "CS2"}, "", ""},
		{"allowlist is exact", `{"env": {"K": "$secret"}}`, "", []string{"SECRET"}, "mcpServers.s.env.K", "secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			server := jsonObject(t, tt.server)
			var st *config.Object
			if tt.stored != "" {
				st = jsonObject(t, tt.stored)
			}
			err := config.CheckEnvRefs("s", server, st, config.NewEnvAllowlist(tt.allow...))
			if tt.wantPath == "" {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				return
			}
			var re *config.EnvRefError
			if !errors.As(err, &re) || re.Path != tt.wantPath || re.Name != tt.wantName {
				t.Fatalf("err = %#v, want path %q name %q", err, tt.wantPath, tt.wantName)
			}
			if !strings.HasPrefix(err.Error(), tt.wantPath+": ") || !strings.Contains(err.Error(), config.EnvAllowlistEnv) {
				t.Errorf("message %q", err)
			}
		})
	}
}

func TestEnvAllowlistFromEnv(t *testing.T) {
	for _, tt := range []struct {
		value string
		set   bool
		yes   []string
		no    []string
	}{
		{"", false, nil, []string{"A", ""}},
		{" A, B ,,", true, []string{"A", "B"}, []string{"", "C", "a"}},
	} {
		a := config.EnvAllowlistFromEnv(func(name string) (string, bool) {
			if name == config.EnvAllowlistEnv && tt.set {
				return tt.value, true
			}
			return "", false
		})
		for _, n := range tt.yes {
			if !a.Allows(n) {
				t.Errorf("%q: %q not allowed", tt.value, n)
			}
		}
		for _, n := range tt.no {
			if a.Allows(n) {
				t.Errorf("%q: %q allowed", tt.value, n)
			}
		}
	}
	if (config.EnvAllowlist{}).Allows("A") {
		t.Error("the zero allowlist allows a name")
	}
}
