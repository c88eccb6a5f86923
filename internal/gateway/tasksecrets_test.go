package gateway_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/antler-mcp/antler/internal/gateway"
	"github.com/antler-mcp/antler/internal/principal"
	"github.com/antler-mcp/antler/internal/settings"
	"github.com/antler-mcp/antler/internal/task"
	"github.com/antler-mcp/antler/internal/taskstore"
	"github.com/antler-mcp/antler/internal/testgateway"
	"github.com/antler-mcp/antler/internal/testmcp"
	"github.com/antler-mcp/antler/internal/testtask"
)

// tokenHeader is the header headers_from_context fills from the secret "k".
const tokenHeader = "X-Report-Token"

// TestSubmitSecretsReachTheUpstreamOnlyOnSubmit submits a report through the
// gateway with secrets {"k": canary} to the real reports server over
// streamable HTTP, configured with task_toolsets and headers_from_context
// {X-Report-Token: k}. A recording proxy in front of the server notes the
// header on every request by JSON-RPC method and tool. The submit carries the
// canary; the background status polls, which run outside the agent's request,
// carry no token; the task completes; and the canary appears in no gateway
// response body and no log line. A submit without the secret is refused with
// DeerFlow's missing-credential message before reaching the server, and
// creates no task.
func TestSubmitSecretsReachTheUpstreamOnlyOnSubmit(t *testing.T) {
	var b [8]byte
	_, _ = rand.Read(b[:])
	secret := "canary-" + hex.EncodeToString(b[:])

	rec := &headerRecorder{}
	upstream := httptest.NewServer(rec.wrap(reverseProxy(t, testmcp.StartReportsHTTP(t))))
	t.Cleanup(upstream.Close)
	doc := fmt.Sprintf(`{"mcpServers": {"reports": {"type": "http", "url": %q,
		"headers_from_context": {"headers": {%q: "k"}},
		"task_toolsets": [{"name": "report-generation",
			"submit_tool": "submit_report", "status_tool": "get_report_status", "cancel_tool": "cancel_report"}]}}}`,
		upstream.URL+"/mcp", tokenHeader)
	a, store, logs, responses := newTaskAPI(t, doc)

	code, res := a.do("POST", "/api/mcp/tools/reports_submit_report/call",
		`{"arguments": {"topic": "q3", "delay_ms": 1500}, "thread_id": "t1", "secrets": {"k": "`+secret+`"}}`)
	sc, _ := res["structuredContent"].(map[string]any)
	id, _ := sc["task_id"].(string)
	if code != 200 || res["isError"] == true || !strings.HasPrefix(id, "mcp-task-") {
		t.Fatalf("submit: %d %v", code, res)
	}

	if detail := awaitStatus(t, a, id, "completed"); detail["result"] == nil {
		t.Error("completed without a result")
	}

	calls := rec.snapshot()
	var submits, polls int
	for _, c := range calls {
		switch {
		case c.method == "tools/call" && c.tool == "submit_report":
			submits++
			if c.token != secret {
				t.Errorf("the submit reached the upstream with %s %q, want the secret", tokenHeader, c.token)
			}
		case c.method == "tools/call" && c.tool == "get_report_status":
			polls++
			if c.token != "" {
				t.Errorf("a background status poll carried %s (%d bytes); per-request secrets apply to the submit only", tokenHeader, len(c.token))
			}
		case c.token != "":
			t.Errorf("%s %s carried %s; only the submit may", c.method, c.tool, tokenHeader)
		}
	}
	if submits != 1 || polls == 0 {
		t.Errorf("upstream saw %d submits and %d status polls, want 1 and at least 1: %+v", submits, polls, calls)
	}

	t.Run("a submit without the secret is refused and stores nothing", func(t *testing.T) {
		code, res := a.do("POST", "/api/mcp/tools/reports_submit_report/call", `{"arguments": {"topic": "q4"}, "thread_id": "t2"}`)
		want := "MCP server 'reports' needs request-scoped credential(s) k. Send them in config.context.secrets, " +
			"or set this server's headers_from_context.on_missing to 'passthrough'."
		if code != 200 || res["isError"] != true || !strings.Contains(text(res), want) {
			t.Errorf("submit without secrets: %d %v, want isError with %q", code, res, want)
		}
		rows, err := store.ListByThread(context.Background(), task.Scope{User: principal.Default.User, Thread: "t2"}, 50, false)
		if err != nil || len(rows) != 0 {
			t.Errorf("task rows in t2: %v, %v; want none", rows, err)
		}
		if _, list := a.do("GET", "/api/threads/t2/mcp-tasks", ""); fmt.Sprint(list["tasks"]) != "[]" {
			t.Errorf("GET t2 tasks = %v, want none", list)
		}
		for _, c := range rec.snapshot()[len(calls):] {
			if c.method == "tools/call" && c.tool == "submit_report" {
				t.Errorf("the refused submit reached the upstream: %+v", c)
			}
		}
	})

	if i := strings.Index(responses.String(), secret); i >= 0 {
		t.Errorf("the secret appears in a gateway response body: …%s…", excerpt(responses.String(), i))
	}
	if !strings.Contains(logs.String(), `"route":"/api/mcp/tools/:name/call"`) {
		t.Errorf("the log has no request lines; the check below would be vacuous:\n%s", logs)
	}
	if i := strings.Index(logs.String(), secret); i >= 0 {
		t.Errorf("the secret appears in the log: …%s…", excerpt(logs.String(), i))
	}
}

// newTaskAPI is a gateway with the durable task runtime on a SQLite store,
// open auth without keys (every caller is principal.Default), everything logged into logs
// and every response body copied into responses.
func newTaskAPI(t *testing.T, doc string, keys ...settings.Key) (*api, *taskstore.Store, *syncBuffer, *syncBuffer) {
	t.Helper()
	logs, responses := &syncBuffer{}, &syncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	rt := testtask.Open(t, testtask.Options{Doc: doc, Logger: log})
	if _, err := rt.Cache.Load(context.Background()); err != nil {
		t.Fatal(err)
	}
	rt.Service.Start()
	h := testgateway.New(t, gateway.Options{Cache: rt.Cache, Auth: principal.New(keys), Logger: log, Tasks: rt.Service}).Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(teeWriter{w, responses}, r)
	}))
	t.Cleanup(srv.Close)
	return &api{t: t, url: srv.URL}, rt.Store, logs, responses
}

// teeWriter copies a response body into a buffer.
type teeWriter struct {
	http.ResponseWriter
	copy io.Writer
}

// Flush lets server-sent events through the copy.
func (w teeWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w teeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w teeWriter) Write(p []byte) (int, error) {
	_, _ = w.copy.Write(p)
	return w.ResponseWriter.Write(p)
}

// upstreamCall is one HTTP request the upstream received: its JSON-RPC
// method and tool name (for POSTs) and the value of tokenHeader.
type upstreamCall struct {
	method, tool, token string
}

// headerRecorder records tokenHeader on every request to the upstream.
type headerRecorder struct {
	mu    sync.Mutex
	calls []upstreamCall
}

func (r *headerRecorder) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		c := upstreamCall{method: req.Method, token: req.Header.Get(tokenHeader)}
		if req.Method == http.MethodPost {
			body, _ := io.ReadAll(req.Body)
			req.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct {
				Method string `json:"method"`
				Params struct {
					Name string `json:"name"`
				} `json:"params"`
			}
			if json.Unmarshal(body, &msg) == nil && msg.Method != "" {
				c.method, c.tool = msg.Method, msg.Params.Name
			}
		}
		r.mu.Lock()
		r.calls = append(r.calls, c)
		r.mu.Unlock()
		next.ServeHTTP(w, req)
	})
}

func (r *headerRecorder) snapshot() []upstreamCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]upstreamCall(nil), r.calls...)
}

// reverseProxy forwards to base, streaming responses (SSE) as they come.
func reverseProxy(t *testing.T, base string) http.Handler {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	p := httputil.NewSingleHostReverseProxy(u)
	p.FlushInterval = -1
	return p
}
