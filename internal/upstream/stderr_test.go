package upstream_test

import (
	"bytes"
	"context"
	"github.com/antler-mcp/antler/internal/eventually"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/upstream"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A child that prints its environment to stderr must not put the configured
// secret into the host's log, even at debug level.
func TestChildStderrIsLoggedWithSecretsMasked(t *testing.T) {
	ext, err := config.Parse([]byte(`{"mcpServers": {"leaky": {"command": "sh",
		"args": ["-c", "echo \"starting with token=$API_TOKEN\" >&2; exit 3"],
		"env": {"API_TOKEN": "tok-CANARY-123456"}}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuf{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := upstream.Dial(ctx, ext.Servers[0], upstream.Options{Logger: log}); err == nil {
		t.Fatal("a child that exits at once was dialled")
	}
	eventually.Check(t, "the child's stderr to be logged", func() (bool, string) {
		return strings.Contains(logs.String(), "starting with token="), logs.String()
	})
	if strings.Contains(logs.String(), "CANARY") {
		t.Errorf("a configured secret reached the log:\n%s", logs)
	}
	if !strings.Contains(logs.String(), "token=***") {
		t.Errorf("the secret was not masked:\n%s", logs)
	}
}
