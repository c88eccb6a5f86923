package task_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/task"
)

func TestAnswerValidate(t *testing.T) {
	const secret = "canary-7f3a"
	tests := []struct {
		name    string
		a       task.Answer
		wantErr string
	}{
		{"accept with an object", task.Answer{Action: "accept", Content: json.RawMessage(`{"audience":"` + secret + `"}`)}, ""},
		{"decline", task.Answer{Action: "decline"}, ""},
		{"cancel with null content", task.Answer{Action: "cancel", Content: json.RawMessage(`null`)}, ""},
		{"unknown action", task.Answer{Action: "maybe"}, "action: must be one of 'accept', 'decline', 'cancel'"},
		{"empty action", task.Answer{}, "action:"},
		{"accept without content", task.Answer{Action: "accept"}, "content: required when action is 'accept'"},
		{"accept with an array", task.Answer{Action: "accept", Content: json.RawMessage(`["` + secret + `"]`)}, "content: must be a JSON object"},
		{"accept with broken JSON", task.Answer{Action: "accept", Content: json.RawMessage(`{"a":"` + secret)}, "content: must be valid JSON"},
		{"accept too large", task.Answer{Action: "accept", Content: json.RawMessage(`{"a":"` + strings.Repeat("x", task.MaxAnswerBytes) + `"}`)}, "content: must not exceed 65536 bytes"},
		{"decline with content", task.Answer{Action: "decline", Content: json.RawMessage(`{"a":"` + secret + `"}`)}, "content: must be omitted unless action is 'accept'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.a.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("Validate = %v, want %q", err, tt.wantErr)
			case err != nil && strings.Contains(err.Error(), secret):
				t.Fatalf("the error quotes the answer's content: %v", err)
			}
		})
	}
}

type plainDriver struct{}

func (plainDriver) Submit(context.Context, task.SubmitRequest) (task.Submission, error) {
	return task.Submission{}, nil
}
func (plainDriver) Status(context.Context, task.Reference) (task.State, error) {
	return task.State{}, nil
}
func (plainDriver) Cancel(context.Context, task.Reference) (task.State, error) {
	return task.State{}, nil
}

type answeringDriver struct{ plainDriver }

func (answeringDriver) Answer(context.Context, task.Reference, json.RawMessage, task.Answer) (task.State, error) {
	return task.State{}, nil
}

type choosyDriver struct{ answeringDriver }

func (choosyDriver) CanAnswer(ref task.Reference) bool { return ref.DriverData["respond"] != "" }

func TestCanAnswer(t *testing.T) {
	with := task.Reference{DriverData: map[string]string{"respond": "r"}}
	tests := []struct {
		name string
		d    task.Driver
		ref  task.Reference
		want bool
	}{
		{"not an Answerer", plainDriver{}, with, false},
		{"an Answerer", answeringDriver{}, task.Reference{}, true},
		{"a checker that says yes", choosyDriver{}, with, true},
		{"a checker that says no", choosyDriver{}, task.Reference{}, false},
	}
	for _, tt := range tests {
		if got := task.CanAnswer(tt.d, tt.ref); got != tt.want {
			t.Errorf("%s: CanAnswer = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestNormalizeDriverData(t *testing.T) {
	cfg := task.DefaultConfig()
	in := task.State{Status: task.StatusWorking, DriverData: map[string]string{"pending": "req-1"}}
	out, err := task.Normalize(in, cfg)
	if err != nil || out.DriverData["pending"] != "req-1" {
		t.Fatalf("Normalize = %+v, %v", out, err)
	}
	in.DriverData["pending"] = "changed"
	if out.DriverData["pending"] != "req-1" {
		t.Error("the normalised snapshot shares its driver data with the input")
	}
	if out, _ := task.Normalize(task.State{Status: task.StatusWorking}, cfg); out.DriverData != nil {
		t.Errorf("nil driver data became %v; nil must leave the stored data unchanged", out.DriverData)
	}
	big := task.State{Status: task.StatusWorking, DriverData: map[string]string{"k": strings.Repeat("x", task.MaxDriverDataBytes)}}
	if _, err := task.Normalize(big, cfg); !task.IsPermanent(err) {
		t.Errorf("oversized driver data: %v, want a protocol error", err)
	}
}
