package settings_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/envvar"
	"github.com/antler-mcp/antler/internal/settings"
	"github.com/antler-mcp/antler/internal/task"
)

func env(vars map[string]string) envvar.Lookup {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

func writeSettings(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "antler.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestDefaults(t *testing.T) {
	want := settings.Settings{Listen: "127.0.0.1:8080", DataDir: "./.antler", LogLevel: "info", ShutdownTimeout: "10s",
		MCPTasks: settings.MCPTasks{Config: task.DefaultConfig()}, HTTP: settings.DefaultHTTP()}
	if got := settings.Defaults(); !reflect.DeepEqual(got, want) {
		t.Errorf("Defaults() = %+v, want %+v", got, want)
	}
	got, err := settings.Load("", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf(`Load("") = %+v, want the defaults`, got)
	}
	if len(got.Auth.Keys) != 0 {
		t.Errorf("default auth keys: %v", got.Auth.Keys)
	}
}

func TestLoadValid(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		env  map[string]string
		want settings.Settings
	}{
		{
			name: "empty file keeps the defaults",
			yaml: "",
			want: settings.Defaults(),
		},
		{
			name: "comments only",
			yaml: "# nothing here\n",
			want: settings.Defaults(),
		},
		{
			name: "max_result_bytes",
			yaml: "max_result_bytes: 1048576\n",
			want: func() settings.Settings { s := settings.Defaults(); s.MaxResultBytes = 1 << 20; return s }(),
		},
		{
			name: "debug.pprof",
			yaml: "debug: {pprof: true}\n",
			want: func() settings.Settings { s := settings.Defaults(); s.Debug.Pprof = true; return s }(),
		},
		{
			name: "metrics on their own listener",
			yaml: "metrics: true\nmetrics_listen: 127.0.0.1:9464\n",
			want: func() settings.Settings {
				s := settings.Defaults()
				s.Metrics, s.MetricsListen = true, "127.0.0.1:9464"
				return s
			}(),
		},
		{
			name: "partial file overrides only what it sets",
			yaml: "listen: 0.0.0.0:9000\n",
			want: func() settings.Settings { s := settings.Defaults(); s.Listen = "0.0.0.0:9000"; return s }(),
		},
		{
			name: "full file",
			yaml: `listen: 0.0.0.0:8443
data_dir: /var/lib/antler
database: postgres://antler@db/antler
log_level: DEBUG
shutdown_timeout: 30s
auth:
  keys:
    - key: $ADMIN_KEY
      user: alice
      role: admin
    - key: literal-agent-key
      user: build-bot
      role: agent
    - key: $INTERNAL_KEY
      user: scheduler.internal
      role: internal
`,
			env: map[string]string{"ADMIN_KEY": "ak-123", "INTERNAL_KEY": "ik-456"},
			want: settings.Settings{
				Listen:          "0.0.0.0:8443",
				DataDir:         "/var/lib/antler",
				Database:        "postgres://antler@db/antler",
				LogLevel:        "DEBUG",
				ShutdownTimeout: "30s",
				MCPTasks:        settings.MCPTasks{Config: task.DefaultConfig()},
				HTTP:            settings.DefaultHTTP(),
				Auth: settings.Auth{Keys: []settings.Key{
					{Key: "ak-123", User: "alice", Role: settings.RoleAdmin},
					{Key: "literal-agent-key", User: "build-bot", Role: settings.RoleAgent},
					{Key: "ik-456", User: "scheduler.internal", Role: settings.RoleInternal},
				}},
			},
		},
		{
			name: "embedded reference stays literal",
			yaml: "auth:\n  keys:\n    - {key: \"Bearer $TOKEN\", user: u, role: agent}\n",
			env:  map[string]string{"TOKEN": "t"},
			want: func() settings.Settings {
				s := settings.Defaults()
				s.Auth.Keys = []settings.Key{{Key: "Bearer $TOKEN", User: "u", Role: "agent"}}
				return s
			}(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := settings.Load(writeSettings(t, tt.yaml), env(tt.env))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestLoadInvalid(t *testing.T) {
	const secret = "sk-live-VALUE"
	tests := []struct {
		name    string
		yaml    string
		env     map[string]string
		want    []string // substrings of the error
		notWant []string
	}{
		{
			name: "unknown top-level key",
			yaml: "listen: :8080\nlisten_addr: :9090\n",
			want: []string{"listen_addr"},
		},
		{
			name: "negative max_result_bytes",
			yaml: "max_result_bytes: -1\n",
			want: []string{"max_result_bytes"},
		},
		{
			name: "max_result_bytes not a number",
			yaml: "max_result_bytes: 16MiB\n",
			want: []string{"max_result_bytes"},
		},
		{
			name: "unknown key in a key entry",
			yaml: "auth:\n  keys:\n    - {key: k, user: u, role: admin, scope: all}\n",
			want: []string{"scope"},
		},
		{
			name:    "unset variable names the field and the variable, not a value",
			yaml:    "auth:\n  keys:\n    - {key: $MISSING_KEY, user: u, role: admin}\n    - {key: $PRESENT, user: v, role: admin}\n",
			env:     map[string]string{"PRESENT": secret},
			want:    []string{"auth.keys[0].key", "$MISSING_KEY", "unset or empty"},
			notWant: []string{secret, "auth.keys[1]"},
		},
		{
			name:    "variable set to empty",
			yaml:    "auth:\n  keys:\n    - {key: $EMPTY_KEY, user: u, role: admin}\n",
			env:     map[string]string{"EMPTY_KEY": ""},
			want:    []string{"auth.keys[0].key", "$EMPTY_KEY"},
			notWant: []string{secret},
		},
		{
			name: "empty key",
			yaml: "auth:\n  keys:\n    - {key: \"\", user: u, role: admin}\n",
			want: []string{"auth.keys[0].key: must not be empty"},
		},
		{
			name: "negative per-user session limit",
			yaml: "stdio_pool:\n  max_sessions_per_user: -1\n",
			want: []string{"stdio_pool.max_sessions_per_user: must not be negative"},
		},
		{
			name: "bad role",
			yaml: "auth:\n  keys:\n    - {key: k, user: u, role: root}\n",
			want: []string{"auth.keys[0].role: must be one of admin, agent, internal"},
		},
		{
			name: "missing role",
			yaml: "auth:\n  keys:\n    - {key: k, user: u}\n",
			want: []string{"auth.keys[0].role"},
		},
		{
			name:    "duplicate key, including through variables",
			yaml:    "auth:\n  keys:\n    - {key: $A, user: u, role: admin}\n    - {key: $B, user: v, role: agent}\n",
			env:     map[string]string{"A": secret, "B": secret},
			want:    []string{"auth.keys[1].key: the same key as auth.keys[0]"},
			notWant: []string{secret},
		},
		{
			name: "bad user id",
			yaml: "auth:\n  keys:\n    - {key: k, user: ../etc, role: admin}\n",
			want: []string{"auth.keys[0].user: must not contain a path separator"},
		},
		{
			name: "bad log level",
			yaml: "log_level: verbose\n",
			want: []string{"log_level: must be one of debug, info, warn, error"},
		},
		{
			name: "metrics_listen without metrics",
			yaml: "metrics_listen: 127.0.0.1:9464\n",
			want: []string{"metrics_listen: needs metrics: true"},
		},
		{
			name: "metrics_listen not an address",
			yaml: "metrics: true\nmetrics_listen: 9464\n",
			want: []string{"metrics_listen: must be host:port"},
		},
		{
			name: "every problem is reported",
			yaml: "log_level: loud\nauth:\n  keys:\n    - {key: \"\", user: \"\", role: x}\n",
			want: []string{"auth.keys[0].key", "auth.keys[0].user", "auth.keys[0].role", "log_level"},
		},
		{
			name: "not YAML of the right shape",
			yaml: "auth: [1, 2]\n",
			want: []string{"settings "},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeSettings(t, tt.yaml)
			_, err := settings.Load(path, env(tt.env))
			if err == nil {
				t.Fatal("Load succeeded")
			}
			msg := err.Error()
			if !strings.Contains(msg, path) {
				t.Errorf("error %q does not name the file", msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(msg, w) {
					t.Errorf("error %q contains %q", msg, w)
				}
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.yaml")
	_, err := settings.Load(path, env(nil))
	if err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("err = %v, want one naming %s", err, path)
	}
}

// TestResolvePath: explicit > $ANTLER_SETTINGS > ./antler.yaml > "" (defaults).
// Not parallel: it changes the working directory.
func TestResolvePath(t *testing.T) {
	tests := []struct {
		name     string
		files    []string
		explicit string
		env      map[string]string
		want     string
		wantErr  string
	}{
		{name: "nothing: defaults", want: ""},
		{name: "antler.yaml in the working directory", files: []string{"antler.yaml"}, want: "antler.yaml"},
		{name: "variable over antler.yaml", files: []string{"antler.yaml", "env.yaml"},
			env: map[string]string{settings.EnvPath: "env.yaml"}, want: "env.yaml"},
		{name: "explicit over everything", files: []string{"antler.yaml", "env.yaml", "flag.yaml"},
			explicit: "flag.yaml", env: map[string]string{settings.EnvPath: "env.yaml"}, want: "flag.yaml"},
		{name: "empty variable is unset", files: []string{"antler.yaml"},
			env: map[string]string{settings.EnvPath: ""}, want: "antler.yaml"},
		{name: "explicit missing", files: []string{"antler.yaml"}, explicit: "missing.yaml",
			wantErr: "settings file specified by --settings not found at missing.yaml"},
		{name: "variable missing, no fallback", files: []string{"antler.yaml"},
			env:     map[string]string{settings.EnvPath: "missing.yaml"},
			wantErr: "settings file specified by ANTLER_SETTINGS not found at missing.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Chdir(dir)
			for _, f := range tt.files {
				if err := os.WriteFile(filepath.Join(dir, f), []byte("{}\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			got, err := settings.ResolvePath(tt.explicit, env(tt.env))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("ResolvePath = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestResolvePathNilLookup: nil means the process environment.
func TestResolvePathNilLookup(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	path := filepath.Join(dir, "from-env.yaml")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(settings.EnvPath, path)
	got, err := settings.ResolvePath("", nil)
	if err != nil || got != path {
		t.Errorf("ResolvePath = %q, %v; want %q", got, err, path)
	}
}

func TestMCPTasksSection(t *testing.T) {
	path := writeSettings(t, `mcp_tasks:
  enabled: true
  poll_interval_seconds: 2
  input_timeout: 90s
  notifications:
    webhook_url: https://hooks.example/antler
    webhook_secret: $HOOK_SECRET
`)
	s, err := settings.Load(path, env(map[string]string{"HOOK_SECRET": "s3cret-value"}))
	if err != nil {
		t.Fatal(err)
	}
	if !s.MCPTasks.Enabled || s.MCPTasks.PollIntervalSeconds != 2 || s.MCPTasks.LeaseSeconds != 120 ||
		s.MCPTasks.Notifications.WebhookSecret != "s3cret-value" {
		t.Errorf("mcp_tasks = %+v", s.MCPTasks)
	}
	if got := s.TaskInputTimeout(); got != 90*time.Second {
		t.Errorf("TaskInputTimeout() = %s, want 1m30s", got)
	}
	bad := writeSettings(t, "mcp_tasks:\n  poll_interval_seconds: 0\n  input_timeout: soon\n  notifications:\n    webhook_url: ftp://x\n    webhook_secret: $UNSET\n")
	_, err = settings.Load(bad, env(nil))
	for _, want := range []string{"mcp_tasks.poll_interval_seconds", "mcp_tasks.input_timeout: must be a duration", "mcp_tasks.notifications.webhook_url", "mcp_tasks.notifications.webhook_secret: $UNSET"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not name %s", err, want)
		}
	}
	unsigned := writeSettings(t, "mcp_tasks:\n  notifications:\n    webhook_url: https://hooks.example/antler\n")
	if _, err := settings.Load(unsigned, env(nil)); err == nil || !strings.Contains(err.Error(), "mcp_tasks.notifications.webhook_secret: required with webhook_url") {
		t.Errorf("a webhook without a secret: %v", err)
	}
}

func TestMCPEndpointSection(t *testing.T) {
	for _, tc := range []struct {
		doc, want, err string
	}{
		{doc: "listen: 127.0.0.1:8080\n", want: ""},
		{doc: "mcp_endpoint:\n  default_thread: session\n", want: settings.ThreadPerSession},
		{doc: "mcp_endpoint:\n  default_thread: user\n", want: settings.ThreadPerUser},
		{doc: "mcp_endpoint:\n  default_thread: thread\n", err: "mcp_endpoint.default_thread: must be session or user"},
		{doc: "mcp_endpoint:\n  default_threads: user\n", err: "default_threads"},
	} {
		s, err := settings.Load(writeSettings(t, tc.doc), env(nil))
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want one naming %q", tc.doc, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.doc, err)
		case tc.err == "" && s.MCPEndpoint.DefaultThread != tc.want:
			t.Errorf("%q: default_thread %q, want %q", tc.doc, s.MCPEndpoint.DefaultThread, tc.want)
		}
	}
}
