package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/antler-mcp/antler/host/tasknotify"
	"github.com/antler-mcp/antler/internal/eventually"
)

// answerStats are report_stats' per-task answer counts.
type answerStats struct {
	AnswerCalls   map[string]int `json:"answer_calls"`
	AnswerApplied string         `json:"answer_applied"`
}

// reportAnswers reads report_stats through the gateway, per remote task.
func reportAnswers(t *testing.T, h *serveBinary) map[string]answerStats {
	t.Helper()
	code, res := h.do("POST", "/api/mcp/tools/reports_report_stats/call", `{"arguments": {}, "thread_id": "t1"}`)
	var st struct {
		PerTask map[string]answerStats `json:"per_task"`
	}
	b, _ := json.Marshal(res["structuredContent"])
	if err := json.Unmarshal(b, &st); code != 200 || err != nil {
		t.Fatalf("report_stats: %d %v %v", code, res, err)
	}
	return st.PerTask
}

// awaitTask polls the task API of h until task id of thread t1 is in status.
func awaitTask(t *testing.T, h *serveBinary, id, status string) map[string]any {
	t.Helper()
	return h.awaitDetail("t1", id, "status "+status, func(d map[string]any) bool { return d["status"] == status })
}

// TestAnswersSurviveAHostCrash answers two report tasks' questions through
// the REST API and SIGKILLs the host: one answer while its delivery is in
// flight after the upstream applied it (slow_respond_ms holds the reply
// back), the other just after it was recorded. After a restart on the same
// SQLite file both tasks complete with reports reflecting their answers,
// and the upstream, which counts respond calls per answer_id, applied each
// answer once: the one cut off in flight was delivered again under the
// same answer id, which the upstream recognised.
func TestAnswersSurviveAHostCrash(t *testing.T) {
	dir := t.TempDir()
	antler := buildInto(t, dir, "./host/cmd/antler", "antler")
	reports := buildInto(t, dir, "./examples/mcpserver/reports", "reports")
	cfg := filepath.Join(dir, "extensions_config.json")
	doc := fmt.Sprintf(`{"mcpServers": {"reports": {"command": %q, "task_toolsets": [{"name": "report-generation",
		"submit_tool": "submit_report", "status_tool": "get_report_status", "cancel_tool": "cancel_report",
		"respond_tool": "respond_report"}]}}}`, reports)
	if err := os.WriteFile(cfg, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	settingsFile := filepath.Join(dir, "antler.yaml")
	if err := os.WriteFile(settingsFile, []byte("mcp_tasks:\n  enabled: true\n  poll_interval_seconds: 1\n  lease_seconds: 5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--config", cfg, "--settings", settingsFile, "--data", filepath.Join(dir, "data")}

	host := startServe(t, antler, args...)
	events := openEventStream(t, host.base+"/api/threads/t1/mcp-tasks/events", "0")
	submit := func(args string) string {
		t.Helper()
		code, res := host.do("POST", "/api/mcp/tools/reports_submit_report/call", `{"arguments": `+args+`, "thread_id": "t1"}`)
		sc, _ := res["structuredContent"].(map[string]any)
		id, _ := sc["task_id"].(string)
		if code != 200 || id == "" {
			t.Fatalf("submit: %d %v", code, res)
		}
		return id
	}
	inFlight := submit(`{"topic": "q3", "delay_ms": 0, "ask": "Who reads the Q3 report?", "slow_respond_ms": 3000}`)
	recorded := submit(`{"topic": "q4", "delay_ms": 0, "ask": "Who reads the Q4 report?"}`)
	for _, id := range []string{inFlight, recorded} {
		awaitTask(t, host, id, "input_required")
	}
	asked := map[string]tasknotify.Envelope{}
	for len(asked) < 2 {
		env := events.next(t, 20*time.Second)
		if strings.Contains(string(env.Event), `"status":"input_required"`) {
			asked[env.TaskID] = env
		}
	}
	if env := asked[inFlight]; !strings.Contains(string(env.Event), "Who reads the Q3 report?") || env.Instruction != tasknotify.AnswerInstruction {
		t.Errorf("question event: %+v", env)
	}

	answer := func(id, audience string) {
		t.Helper()
		code, res := host.do("POST", "/api/threads/t1/mcp-tasks/"+id+"/input", `{"action": "accept", "content": {"audience": "`+audience+`"}}`)
		if code != 200 || res["status"] != "working" {
			t.Fatalf("answer %s: %d %v", id, code, res)
		}
	}
	answer(inFlight, "the board")
	// The upstream took the answer and holds its reply back.
	eventually.Check(t, "the upstream receiving the answer", func() (bool, string) {
		applied := 0
		for _, st := range reportAnswers(t, host) {
			if st.AnswerApplied != "" {
				applied++
			}
		}
		return applied == 1, fmt.Sprintf("%d answers applied\n%s", applied, host.errb)
	})
	answer(recorded, "the auditors")
	_ = host.cmd.Process.Signal(syscall.SIGKILL)
	_ = host.cmd.Wait()

	again := startServe(t, antler, args...)
	remote := map[string]string{} // local id → remote id, which the report names
	for id, audience := range map[string]string{inFlight: "the board", recorded: "the auditors"} {
		d := awaitTask(t, again, id, "completed")
		r, _ := d["result"].(string)
		if !strings.Contains(r, `"audience":"`+audience+`"`) {
			t.Errorf("result of %s = %q, want the answer %q in it", id, r, audience)
		}
		if m := regexp.MustCompile(`Generated by task (\S+),`).FindStringSubmatch(r); m != nil {
			remote[id] = m[1]
		}
		if v, _ := d["answer"].(map[string]any); v["status"] != "delivered" {
			t.Errorf("answer of %s = %v, want delivered", id, v)
		}
	}
	per := reportAnswers(t, again)
	for remoteID, st := range per {
		if len(st.AnswerCalls) != 1 || st.AnswerCalls[st.AnswerApplied] == 0 {
			t.Errorf("remote task %s: answers %v, applied %q; want one answer id, applied", remoteID, st.AnswerCalls, st.AnswerApplied)
		}
	}
	// The reply cut off in flight is delivered again under its id; the
	// answer recorded just before the kill is delivered after the restart,
	// or was taken before the kill, once or (cut off too) twice.
	if st := per[remote[inFlight]]; st.AnswerCalls[st.AnswerApplied] != 2 {
		t.Errorf("the answer cut off in flight: respond calls %v, want 2 under one id", st.AnswerCalls)
	}
	st := per[remote[recorded]]
	if n := st.AnswerCalls[st.AnswerApplied]; n < 1 || n > 2 {
		t.Errorf("the answer recorded before the kill: respond calls %v, want 1 or 2 under one id", st.AnswerCalls)
	}
}
