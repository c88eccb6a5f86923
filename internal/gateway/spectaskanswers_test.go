package gateway_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/host/tasknotify"
)

// TestSpecTaskAnswersThroughTheAPI runs server-everything's research tool
// as a 2025-11-25 task through the REST door and answers its question:
// with ambiguous false it completes with its report; with ambiguous true it
// reaches input_required with the server's clarification question (from
// the elicitation/create it sent on tasks/result) in the task API and the
// event stream, whose instruction says how to answer; an accepted answer,
// a decline and a cancel each resume it and its report reflects them; and
// content failing the requested schema is refused with the field named,
// the question kept, so a valid answer still goes through.
func TestSpecTaskAnswersThroughTheAPI(t *testing.T) {
	srv := everythingTaskGateway(t)
	a := &api{t: t, url: srv.URL}
	events := openSSE(t, srv.URL+"/api/threads/t1/mcp-tasks/events", "", "0")
	submit := func(topic string, ambiguous bool) string {
		t.Helper()
		return submitReport(t, a, "everything_simulate-research-query", fmt.Sprintf(`{"topic": %q, "ambiguous": %t}`, topic, ambiguous))
	}
	// ask submits an ambiguous query and checks its question everywhere.
	ask := func(topic string) string {
		t.Helper()
		id := submit(topic, true)
		d := awaitStatus(t, a, id, "input_required")
		q, _ := d["input_required"].(map[string]any)
		if msg, _ := q["message"].(string); !strings.Contains(msg, "Please clarify") || q["requestedSchema"] == nil {
			t.Errorf("input_required = %v, want the elicitation's message and schema", d["input_required"])
		}
		if v, _ := d["answer"].(map[string]any); v["can_answer"] != true {
			t.Errorf("answer view = %v, want can_answer", d["answer"])
		}
		for {
			env := nextEventOf(t, events, id)
			if !strings.Contains(string(env.Event), `"status":"input_required"`) {
				continue
			}
			if !strings.Contains(string(env.Event), "Please clarify") || env.Instruction != tasknotify.AnswerInstruction {
				t.Errorf("question event: %s, instruction %q", env.Event, env.Instruction)
			}
			break
		}
		return id
	}

	t.Run("unambiguous", func(t *testing.T) {
		id := submit("tides", false)
		if r := fmt.Sprint(awaitStatus(t, a, id, "completed")["result"]); !strings.Contains(r, "Research Report: tides") || strings.Contains(r, "Clarification") {
			t.Errorf("result = %.300s, want the report without clarification", r)
		}
	})

	cases := []struct {
		name, topic, body, want string
	}{
		{"accept", "python", `{"action": "accept", "content": {"interpretation": "snake"}}`, "Research Report: python (snake)"},
		{"decline", "rivers", `{"action": "decline"}`, "User declined - using default interpretation"},
		{"cancel", "lakes", `{"action": "cancel"}`, "User cancelled - using default interpretation"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := ask(c.topic)
			if code, res := a.do("POST", "/api/threads/t1/mcp-tasks/"+id+"/input", c.body); code != 200 || res["status"] != "working" {
				t.Fatalf("answer: %d %v", code, res)
			}
			d := awaitStatus(t, a, id, "completed")
			if r := fmt.Sprint(d["result"]); !strings.Contains(r, c.want) {
				t.Errorf("result = %.600s, want %q", r, c.want)
			}
			if v, _ := d["answer"].(map[string]any); v["status"] != "delivered" {
				t.Errorf("answer view = %v, want delivered", d["answer"])
			}
		})
	}

	t.Run("content failing the schema", func(t *testing.T) {
		id := ask("python")
		for _, bad := range []struct{ body, field string }{
			{`{"action": "accept", "content": {"interpretation": "a-canary-value"}}`, "content.interpretation"},
			{`{"action": "accept", "content": {}}`, "interpretation"},
		} {
			if code, res := a.do("POST", "/api/threads/t1/mcp-tasks/"+id+"/input", bad.body); code != 200 {
				t.Fatalf("answer: %d %v", code, res)
			}
			d := awaitStatus(t, a, id, "input_required")
			v, _ := d["answer"].(map[string]any)
			msg, _ := v["last_error"].(string)
			if v["status"] != "refused" || !strings.Contains(msg, bad.field) || strings.Contains(msg, "a-canary-value") {
				t.Errorf("answer view after %s = %v, want refused naming %s", bad.body, v, bad.field)
			}
		}
		if code, res := a.do("POST", "/api/threads/t1/mcp-tasks/"+id+"/input", `{"action": "accept", "content": {"interpretation": "comedy"}}`); code != 200 {
			t.Fatalf("answer: %d %v", code, res)
		}
		if r := fmt.Sprint(awaitStatus(t, a, id, "completed")["result"]); !strings.Contains(r, "python (comedy)") {
			t.Errorf("result = %.600s, want the valid answer", r)
		}
	})
}
