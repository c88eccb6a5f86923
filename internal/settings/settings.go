// Package settings reads the host's own settings file (antler.yaml): where to
// listen, where to keep data, which database, the log level and the API keys
// that map callers to principals. Command-line flags override the file.
package settings

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/antler-mcp/antler/internal/envvar"
	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/workspace"
)

// Roles a principal can have.
const (
	RoleAdmin    = "admin"
	RoleAgent    = "agent"
	RoleInternal = "internal"
)

// EnvPath names the settings file when --settings is not given.
const EnvPath = "ANTLER_SETTINGS"

// DefaultPath is used when it exists and nothing else names a file.
const DefaultPath = "antler.yaml"

// Settings is antler.yaml. The field names are a contract: extend, don't rename.
type Settings struct {
	Listen   string `yaml:"listen"`
	DataDir  string `yaml:"data_dir"`
	Database string `yaml:"database"`
	LogLevel string `yaml:"log_level"`
	Auth     Auth   `yaml:"auth"`
	// ShutdownTimeout bounds how long SIGTERM waits for in-flight calls
	// (Go duration, default 10s).
	ShutdownTimeout string `yaml:"shutdown_timeout"`
	// StdioPool bounds the pooled stdio sessions (one per server, user and thread).
	StdioPool StdioPool `yaml:"stdio_pool"`
	// MCPTasks configures the durable task runtime (off by default;
	// DeerFlow's mcp_tasks keys and ranges).
	MCPTasks MCPTasks `yaml:"mcp_tasks"`
	// MCPEndpoint configures the MCP endpoint (/mcp, /sse).
	MCPEndpoint MCPEndpoint `yaml:"mcp_endpoint"`
	// MaxResultBytes bounds one message (a tool result) from a server that
	// sets no max_result_bytes of its own; zero means 16 MiB.
	MaxResultBytes int64 `yaml:"max_result_bytes"`
	// HTTP bounds the gateway's HTTP edge: which Host and Origin values it
	// answers, its timeouts, its connection cap and per-principal limits.
	HTTP HTTP `yaml:"http"`
	// Debug turns on diagnostics that are off by default.
	Debug Debug `yaml:"debug"`
	// Metrics turns on the Prometheus metrics (off by default): served at
	// GET /metrics on the main listener to admin principals, or, when
	// MetricsListen is set, at /metrics on that address without
	// authentication (bind it where only the scraper reaches).
	Metrics       bool   `yaml:"metrics"`
	MetricsListen string `yaml:"metrics_listen"`
	// AuditLog is where the audit stream goes (JSON lines): "" for none,
	// "stderr", or a file path, appended to and created 0600.
	AuditLog string `yaml:"audit_log"`
}

// Debug holds diagnostics for operators.
type Debug struct {
	// Pprof serves net/http/pprof under /debug/pprof/ to admin principals
	// (off by default: a profile shows what the host is doing).
	Pprof bool `yaml:"pprof"`
}

// MCPTasks is the durable task runtime's section: DeerFlow's knobs plus
// where attention events are delivered.
type MCPTasks struct {
	task.Config   `yaml:",inline"`
	Notifications Notifications `yaml:"notifications"`
	// InputTimeout bounds how long a 2025-11-25 client's tasks/result on
	// the MCP endpoint waits for the client's answer to a task's question
	// (Go duration, default 5m); the task stays input_required after it.
	InputTimeout string `yaml:"input_timeout"`
}

// TaskInputTimeout is mcp_tasks.input_timeout (0: unset, the endpoint's
// default); Load has validated it.
func (s Settings) TaskInputTimeout() time.Duration {
	d, _ := time.ParseDuration(s.MCPTasks.InputTimeout)
	return d
}

// MCPEndpoint is the MCP endpoint's section.
type MCPEndpoint struct {
	// DefaultThread is the thread of a session's call that names none:
	// "session" (the default) gives each MCP session its own thread and
	// stdio processes; "user" runs it in the user's default thread, which
	// every session of the user shares with REST calls that name none (and
	// so one process per server, its workspace, and its server requests:
	// see mcpserver.ThreadPerUser). With no keys every caller is one user.
	DefaultThread string `yaml:"default_thread"`
}

// Default thread choices of MCPEndpoint.DefaultThread.
const (
	ThreadPerSession = "session"
	ThreadPerUser    = "user"
)

// Notifications configures event delivery to a webhook.
type Notifications struct {
	WebhookURL string `yaml:"webhook_url"`
	// WebhookSecret signs each delivery (HMAC-SHA256); whole-string $VAR.
	WebhookSecret string `yaml:"webhook_secret"`
}

// StdioPool configures the stdio session pool.
type StdioPool struct {
	// MaxSessions caps live sessions; the least recently used is closed
	// beyond it (default 256).
	MaxSessions int `yaml:"max_sessions"`
	// IdleTimeout closes a session unused this long (Go duration, default 30m).
	IdleTimeout string `yaml:"idle_timeout"`
	// MaxSessionsPerUser caps one user's sessions (default 16): at the cap
	// only that user's own idle sessions are closed for a new one.
	MaxSessionsPerUser int `yaml:"max_sessions_per_user"`
}

// Auth holds the API keys. With none, the host serves loopback only and
// every caller is user "default" with role admin.
type Auth struct {
	Keys []Key `yaml:"keys"`
}

// Key maps one API key to a principal.
type Key struct {
	Key  string `yaml:"key"`
	User string `yaml:"user"`
	Role string `yaml:"role"`
}

// Defaults returns the settings used when no file is given.
func Defaults() Settings {
	return Settings{Listen: "127.0.0.1:8080", DataDir: "./.antler", LogLevel: "info", ShutdownTimeout: "10s",
		MCPTasks: MCPTasks{Config: task.DefaultConfig()}, HTTP: DefaultHTTP()}
}

// ResolvePath returns the settings file to read: explicit > $ANTLER_SETTINGS >
// ./antler.yaml when it exists > "" (defaults). An explicit file that does not
// exist is an error.
func ResolvePath(explicit string, lookup envvar.Lookup) (string, error) {
	if lookup == nil {
		lookup = envvar.OS
	}
	for _, c := range []struct{ path, source string }{{explicit, "--settings"}, {get(lookup, EnvPath), EnvPath}} {
		if c.path == "" {
			continue
		}
		if _, err := os.Stat(c.path); err != nil {
			return "", fmt.Errorf("settings file specified by %s not found at %s", c.source, c.path)
		}
		return c.path, nil
	}
	if _, err := os.Stat(DefaultPath); err == nil {
		return DefaultPath, nil
	}
	return "", nil
}

func get(lookup envvar.Lookup, name string) string {
	v, _ := lookup(name)
	return v
}

// Load reads the settings file at path over the defaults ("" means defaults
// only). Unknown keys are errors, so a typo never silently disables a setting.
// API keys may be whole-string $VAR references.
func Load(path string, lookup envvar.Lookup) (Settings, error) {
	s := Defaults()
	if path == "" {
		return s, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return s, fmt.Errorf("read settings %s: %w", path, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&s); err != nil && !errors.Is(err, io.EOF) {
		return s, fmt.Errorf("settings %s: %w", path, err)
	}
	if err := s.resolve(lookup); err != nil {
		return s, fmt.Errorf("settings %s: %w", path, err)
	}
	return s, nil
}

// resolve substitutes $VAR keys and validates the auth table.
func (s *Settings) resolve(lookup envvar.Lookup) error {
	var problems []string
	seen := map[string]int{}
	for i := range s.Auth.Keys {
		k := &s.Auth.Keys[i]
		path := fmt.Sprintf("auth.keys[%d]", i)
		val, name, isRef := envvar.Resolve(k.Key, lookup)
		switch {
		case val == "" && isRef:
			problems = append(problems, fmt.Sprintf("%s.key: $%s is unset or empty", path, name))
		case val == "":
			problems = append(problems, path+".key: must not be empty")
		}
		if j, dup := seen[val]; dup && val != "" {
			problems = append(problems, fmt.Sprintf("%s.key: the same key as auth.keys[%d]", path, j))
		}
		seen[val] = i
		k.Key = val
		if err := workspace.CheckID(k.User); err != nil {
			problems = append(problems, fmt.Sprintf("%s.user: %v", path, err))
		}
		switch k.Role {
		case RoleAdmin, RoleAgent, RoleInternal:
		default:
			problems = append(problems, fmt.Sprintf("%s.role: must be one of admin, agent, internal", path))
		}
	}
	if err := s.MCPTasks.Config.Validate(); err != nil {
		problems = append(problems, err.Error())
	}
	v, name, secretRef := envvar.Resolve(s.MCPTasks.Notifications.WebhookSecret, lookup)
	if secretRef {
		if v == "" && s.MCPTasks.Notifications.WebhookURL != "" {
			problems = append(problems, fmt.Sprintf("mcp_tasks.notifications.webhook_secret: $%s is unset or empty", name))
		}
		s.MCPTasks.Notifications.WebhookSecret = v
	}
	if u := s.MCPTasks.Notifications.WebhookURL; u != "" && !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
		problems = append(problems, "mcp_tasks.notifications.webhook_url: must be an http:// or https:// URL")
	}
	if n := s.MCPTasks.Notifications; n.WebhookURL != "" && n.WebhookSecret == "" && !secretRef {
		problems = append(problems, "mcp_tasks.notifications.webhook_secret: required with webhook_url (every delivery is signed with it)")
	}
	if s.StdioPool.MaxSessions < 0 {
		problems = append(problems, "stdio_pool.max_sessions: must not be negative")
	}
	if s.StdioPool.MaxSessionsPerUser < 0 {
		problems = append(problems, "stdio_pool.max_sessions_per_user: must not be negative")
	}
	if s.StdioPool.IdleTimeout != "" {
		if d, err := time.ParseDuration(s.StdioPool.IdleTimeout); err != nil || d <= 0 {
			problems = append(problems, "stdio_pool.idle_timeout: must be a duration such as 30m")
		}
	}
	if s.MCPTasks.InputTimeout != "" {
		if d, err := time.ParseDuration(s.MCPTasks.InputTimeout); err != nil || d <= 0 {
			problems = append(problems, "mcp_tasks.input_timeout: must be a duration such as 5m")
		}
	}
	switch s.MCPEndpoint.DefaultThread {
	case "", ThreadPerSession, ThreadPerUser:
	default:
		problems = append(problems, "mcp_endpoint.default_thread: must be session or user")
	}
	if s.MaxResultBytes < 0 || s.MaxResultBytes > 1<<40 {
		problems = append(problems, "max_result_bytes: must be a number of bytes from 0 (the 16 MiB default) to 1099511627776")
	}
	problems = append(problems, s.HTTP.validate()...)
	if s.MetricsListen != "" {
		if !s.Metrics {
			problems = append(problems, "metrics_listen: needs metrics: true")
		} else if _, _, err := net.SplitHostPort(s.MetricsListen); err != nil {
			problems = append(problems, "metrics_listen: must be host:port, such as 127.0.0.1:9464")
		}
	}
	switch strings.ToLower(s.LogLevel) {
	case "debug", "info", "warn", "error":
	default:
		problems = append(problems, "log_level: must be one of debug, info, warn, error")
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}
