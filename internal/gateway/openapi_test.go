package gateway_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/openapi"
	"github.com/antler-mcp/antler/internal/openapi/openapitest"
	"github.com/antler-mcp/antler/internal/settings"
	"github.com/antler-mcp/antler/internal/testgateway"
	"github.com/antler-mcp/antler/internal/testmcp"
)

// documented checks every response this package's tests receive through
// http.DefaultClient (and the clients recorded wraps) against the OpenAPI
// document: a response that does not match fails the round trip, and so
// the test that sent it, and TestMain fails the package with the list.
var documented *openapitest.Transport

func TestMain(m *testing.M) {
	checker, err := openapitest.NewChecker(nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	documented = &openapitest.Transport{Base: http.DefaultTransport, Checker: checker}
	http.DefaultClient.Transport = documented
	code := m.Run()
	if failures := documented.Failures(); len(failures) > 0 {
		fmt.Fprintf(os.Stderr, "%d responses do not match the OpenAPI document (internal/openapi/openapi.json):\n", len(failures))
		for _, f := range failures {
			first, _, _ := strings.Cut(f, "\n")
			fmt.Fprintf(os.Stderr, "  %s\n", first)
		}
		code = 1
	}
	if testing.Verbose() {
		fmt.Fprint(os.Stderr, documented.Summary())
	}
	os.Exit(code)
}

// recorded makes c check its responses against the document too.
func recorded(c *http.Client) *http.Client {
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	out := *c
	out.Transport = &openapitest.Transport{Base: base, Checker: documented.Checker}
	return &out
}

// TestOpenAPIServed fetches /openapi.json without a key: it is the
// embedded document with the host's version, and valid.
func TestOpenAPIServed(t *testing.T) {
	a := newAPI(t, `{"mcpServers": {}}`, settings.Key{Key: "admin-key", User: "root", Role: settings.RoleAdmin})
	resp, err := http.Get(a.url + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /openapi.json: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	doc, err := openapitest.Load(body)
	if err != nil {
		t.Fatal(err)
	}
	if doc.Info.Version != testgateway.Version {
		t.Errorf("info.version = %q, want %q", doc.Info.Version, testgateway.Version)
	}
	want, _ := openapi.Document(testgateway.Version)
	if !jsonEqual(t, body, want) {
		t.Error("the served document is not the embedded one")
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	xs, _ := json.Marshal(x)
	ys, _ := json.Marshal(y)
	return string(xs) == string(ys)
}

// recordedResponse is one real exchange with a gateway, kept to check
// against altered documents.
type recordedResponse struct {
	req    *http.Request
	status int
	header http.Header
	body   []byte
}

func record(t *testing.T, method, url, key, body string) recordedResponse {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultTransport.RoundTrip(req) // unchecked: the test checks
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return recordedResponse{req: req, status: resp.StatusCode, header: resp.Header, body: data}
}

// TestOpenAPICheckCanFail proves the recorded-response check can fail:
// real responses of a gateway over the demo servers validate against the
// document, and each one is rejected by a copy of the document with the
// part that describes it made wrong.
func TestOpenAPICheckCanFail(t *testing.T) {
	a := newAPI(t, demoDoc(t), settings.Key{Key: "agent-key", User: "alice", Role: settings.RoleAgent})
	tools := record(t, "GET", a.url+"/api/mcp/tools", "agent-key", "")
	unknown := record(t, "POST", a.url+"/api/mcp/tools/nope_nope/call", "agent-key", `{"arguments": {}}`)
	health := record(t, "GET", a.url+"/healthz", "", "")
	unauthorized := record(t, "GET", a.url+"/api/mcp/servers", "wrong-key", "")
	servers := record(t, "GET", a.url+"/api/mcp/servers", "agent-key", "")
	if tools.status != 200 || unknown.status != 404 || health.status != 200 || unauthorized.status != 401 || servers.status != 200 {
		t.Fatalf("statuses %d %d %d %d %d, want 200 404 200 401 200", tools.status, unknown.status, health.status, unauthorized.status, servers.status)
	}
	if !strings.Contains(string(tools.body), `"original_name"`) {
		t.Fatalf("the demo servers listed no tools: %s", tools.body)
	}

	cases := []struct {
		name   string
		got    recordedResponse
		mutate func(doc map[string]any)
	}{
		{"a tool's name is an integer", tools, func(d map[string]any) {
			at(d, "components", "schemas", "Tool", "properties", "name")["type"] = "integer"
		}},
		{"a tool has no description field", tools, func(d map[string]any) {
			delete(at(d, "components", "schemas", "Tool", "properties"), "description")
		}},
		{"404 is not an answer of a call", unknown, func(d map[string]any) {
			delete(at(d, "paths", "/api/mcp/tools/{name}/call", "post", "responses"), "404")
		}},
		{"an error also carries a code", unknown, func(d map[string]any) {
			at(d, "components", "schemas", "Error")["required"] = []any{"error", "code"}
		}},
		{"health answers text/plain", health, func(d map[string]any) {
			resp := at(d, "paths", "/healthz", "get", "responses", "200")
			resp["content"] = map[string]any{"text/plain": map[string]any{"schema": map[string]any{"type": "string"}}}
		}},
		{"health says up", health, func(d map[string]any) {
			at(d, "components", "schemas", "Health", "properties", "status")["const"] = "up"
		}},
		{"a 401 names another realm", unauthorized, func(d map[string]any) {
			at(d, "components", "headers", "WWW-Authenticate", "schema")["const"] = `Bearer realm="other"`
		}},
		{"every response carries X-Trace-ID", servers, func(d map[string]any) {
			at(d, "paths", "/api/mcp/servers", "get", "responses", "200", "headers")["X-Trace-ID"] = map[string]any{"required": true, "schema": map[string]any{"type": "string"}}
		}},
		{"an agent sees the session count", servers, func(d map[string]any) {
			at(d, "components", "schemas", "ServerStatus")["required"] = []any{"name", "transport", "state", "tools", "sessions"}
		}},
	}
	original, err := openapitest.NewChecker(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := original.Check(tc.got.req, tc.got.status, tc.got.header, tc.got.body); err != nil {
				t.Fatalf("the document rejects the real response: %v", err)
			}
			var doc map[string]any
			if err := json.Unmarshal(openapi.Source, &doc); err != nil {
				t.Fatal(err)
			}
			tc.mutate(doc)
			b, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			wrong, err := openapitest.NewChecker(b)
			if err != nil {
				t.Fatal(err)
			}
			err = wrong.Check(tc.got.req, tc.got.status, tc.got.header, tc.got.body)
			if err == nil {
				t.Fatalf("a document where %s accepts %s %s's %d: %s", tc.name, tc.got.req.Method, tc.got.req.URL.Path, tc.got.status, tc.got.body)
			}
			msg, _, _ := strings.Cut(err.Error(), "\n")
			t.Logf("rejected: %s", msg)
		})
	}
}

// at walks doc's objects along keys.
func at(doc map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		doc = doc[k].(map[string]any)
	}
	return doc
}

// TestOpenAPITransportFailsTheRoundTrip checks the wiring every test relies
// on: through the checking transport, a response that does not match the
// document fails the request and is recorded, a matching one and an
// undocumented path pass untouched.
func TestOpenAPITransportFailsTheRoundTrip(t *testing.T) {
	a := newAPI(t, `{"mcpServers": {}}`)
	var doc map[string]any
	if err := json.Unmarshal(openapi.Source, &doc); err != nil {
		t.Fatal(err)
	}
	at(doc, "components", "schemas", "Health", "properties", "status")["const"] = "up"
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	wrong, err := openapitest.NewChecker(b)
	if err != nil {
		t.Fatal(err)
	}
	check := &openapitest.Transport{Base: http.DefaultTransport, Checker: wrong}
	client := &http.Client{Transport: check}
	for _, tc := range []struct {
		path    string
		wantErr bool
	}{
		{"/healthz", true},
		{"/api/mcp/tools", false},
		{"/no/such/route", false},
	} {
		resp, err := client.Get(a.url + tc.path)
		if resp != nil {
			_ = resp.Body.Close()
		}
		if (err != nil) != tc.wantErr {
			t.Errorf("GET %s: error %v, want an error: %v", tc.path, err, tc.wantErr)
		}
	}
	if got := check.Failures(); len(got) != 1 || !strings.Contains(got[0], "GET /healthz answered 200") {
		t.Errorf("recorded failures %q, want the /healthz one", got)
	}
}

// TestOpenAPICancelThroughTheRESTDoor cancels a running report through the
// REST door, so the cancel's answer (the task) is checked against the
// document as the other tests' answers are.
func TestOpenAPICancelThroughTheRESTDoor(t *testing.T) {
	alice, _, _, _ := newTaskAPI(t, answersDoc(testmcp.StartReportsHTTP(t)+"/mcp"), eventKeys...)
	alice = alice.as("alice-key")
	id := submitReport(t, alice, "reports_submit_report", `{"topic": "q4", "delay_ms": 600000}`)
	code, d := alice.do("POST", "/api/threads/t1/mcp-tasks/"+id+"/cancel", "")
	if code != http.StatusOK || d["cancel_requested"] != true {
		t.Fatalf("cancel: %d %v", code, d)
	}
	if code, d = alice.do("GET", "/api/threads/t1/mcp-tasks?limit=5", ""); code != http.StatusOK {
		t.Fatalf("list: %d %v", code, d)
	}
}
