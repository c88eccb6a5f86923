package task_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/task"
)

func TestSubmitRequestValidate(t *testing.T) {
	ok := task.SubmitRequest{ServerName: "reports", TaskName: "Quarterly report"}
	tests := []struct {
		name string
		edit func(*task.SubmitRequest)
		want string // "" = valid
	}{
		{"valid", func(*task.SubmitRequest) {}, ""},
		{"empty server", func(r *task.SubmitRequest) { r.ServerName = "" }, "server_name must not be empty"},
		{"blank server", func(r *task.SubmitRequest) { r.ServerName = " \t" }, "server_name must not be empty"},
		{"server at limit", func(r *task.SubmitRequest) { r.ServerName = strings.Repeat("s", 128) }, ""},
		{"server at limit in runes", func(r *task.SubmitRequest) { r.ServerName = strings.Repeat("é", 128) }, ""},
		{"server one over", func(r *task.SubmitRequest) { r.ServerName = strings.Repeat("s", 129) }, "server_name must not exceed 128 characters"},
		{"empty task name", func(r *task.SubmitRequest) { r.TaskName = "" }, "task_name must not be empty"},
		{"blank task name", func(r *task.SubmitRequest) { r.TaskName = "   " }, "task_name must not be empty"},
		{"task name at limit", func(r *task.SubmitRequest) { r.TaskName = strings.Repeat("t", 255) }, ""},
		{"task name one over", func(r *task.SubmitRequest) { r.TaskName = strings.Repeat("t", 256) }, "task_name must not exceed 255 characters"},
		{"object arguments", func(r *task.SubmitRequest) { r.Arguments = json.RawMessage(`{"q":1}`) }, ""},
		{"null arguments", func(r *task.SubmitRequest) { r.Arguments = json.RawMessage(`null`) }, ""},
		{"array arguments", func(r *task.SubmitRequest) { r.Arguments = json.RawMessage(`[1]`) }, "arguments must be a JSON object"},
		{"broken arguments", func(r *task.SubmitRequest) { r.Arguments = json.RawMessage(`{"q":`) }, "arguments must be a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ok
			tt.edit(&r)
			err := r.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || err.Error() != tt.want {
				t.Fatalf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestSubmissionValidate(t *testing.T) {
	tests := []struct {
		id      string
		wantErr bool
	}{
		{"r-1", false},
		{"", true},
		{"  ", true},
	}
	for _, tt := range tests {
		err := task.Submission{RemoteTaskID: tt.id}.Validate()
		if tt.wantErr {
			if err == nil || err.Error() != "remote_task_id must not be empty" {
				t.Errorf("Validate(%q) = %v", tt.id, err)
			}
		} else if err != nil {
			t.Errorf("Validate(%q) = %v", tt.id, err)
		}
	}
}

func TestCheckRemoteTaskID(t *testing.T) {
	tests := []struct {
		name    string
		id      string
		wantErr bool
	}{
		{"short", "r-1", false},
		{"at limit", strings.Repeat("r", 255), false},
		{"at limit in runes", strings.Repeat("ü", 255), false},
		{"one over", strings.Repeat("r", 256), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := task.CheckRemoteTaskID(tt.id)
			if !tt.wantErr {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !task.IsPermanent(err) || err.Error() != "MCP task remote_task_id must not exceed 255 characters" {
				t.Fatalf("error = %v", err)
			}
		})
	}
}

func TestLocalID(t *testing.T) {
	re := regexp.MustCompile(`^mcp-task-[0-9a-f]{32}$`)
	seen := make(map[string]bool)
	for range 1000 {
		id := task.LocalID()
		if !re.MatchString(id) {
			t.Fatalf("LocalID() = %q", id)
		}
		if seen[id] {
			t.Fatalf("LocalID() repeated %q", id)
		}
		seen[id] = true
	}
}
