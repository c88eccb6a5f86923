package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/config"
)

// adminCanary is the secret every server's header holds; no response and no
// log line of either host may show it.
const adminCanary = "two-hosts-canary-51c0de"

// TestConfigAdminTwoHosts runs two real `antler serve` processes on one
// config file and sends each 200 mixed config mutations at once (POST,
// targeted PUT, DELETE, PATCH and whole-set PUT, from several clients per
// host). A reader checks the file is valid JSON after every change it sees.
// At the end the acknowledged mutations must form one serial order: starting
// from the initial file, applying them one after another reproduces the
// server set each of them answered with (every answer is the state right
// after its own write, taken under the locks) and ends at the final file.
// No secret is lost or shown, unknown keys and skills survive, and no temp
// file is left.
func TestConfigAdminTwoHosts(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs two hosts")
	}
	dir := t.TempDir()
	antler := buildInto(t, dir, "./host/cmd/antler", "antler")
	cfgDir := filepath.Join(dir, "cfg")
	if err := os.Mkdir(cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(cfgDir, "extensions_config.json")
	initial := `{
  "customTopLevel": {"preserve": true, "n": 1.50},
  "mcpServers": {
    "shared-0": {"enabled": false, "type": "http", "url": "http://127.0.0.1:9/shared-0", "headers": {"X-Key": "` + adminCanary + `"}},
    "shared-1": {"enabled": false, "type": "http", "url": "http://127.0.0.1:9/shared-1", "headers": {"X-Key": "` + adminCanary + `"}},
    "shared-2": {"enabled": false, "type": "http", "url": "http://127.0.0.1:9/shared-2", "headers": {"X-Key": "` + adminCanary + `"}}
  },
  "skills": {"research": {"enabled": false}},
  "middlewares": ["example.middleware:Middleware"]
}`
	if err := os.WriteFile(cfg, []byte(initial), 0o600); err != nil {
		t.Fatal(err)
	}
	hosts := []*serveBinary{
		startServe(t, antler, "--config", cfg, "--data", filepath.Join(dir, "data-a")),
		startServe(t, antler, "--config", cfg, "--data", filepath.Join(dir, "data-b")),
	}

	// The reader: every distinct content it sees must be a complete, valid
	// document.
	stopReader := make(chan struct{})
	readerDone := make(chan struct{})
	var seen int
	var readerErr error
	go func() {
		defer close(readerDone)
		last := []byte(initial)
		for {
			select {
			case <-stopReader:
				return
			default:
			}
			time.Sleep(500 * time.Microsecond) // leave the CPUs to the hosts
			data, err := os.ReadFile(cfg)
			if err != nil {
				readerErr = fmt.Errorf("read: %v", err)
				return
			}
			if !bytes.Equal(data, last) {
				seen++
				if _, err := config.Parse(data, func(string) (string, bool) { return "", false }); err != nil {
					readerErr = fmt.Errorf("change %d is not a valid document: %v\n%s", seen, err, data)
					return
				}
				last = data
			}
		}
	}()

	const opsPerHost, clientsPerHost = 200, 4
	client := &http.Client{Timeout: 60 * time.Second}
	var (
		mu  sync.Mutex
		log []*adminOp
	)
	record := func(op *adminOp) {
		mu.Lock()
		log = append(log, op)
		mu.Unlock()
	}
	began := time.Now()
	var wg sync.WaitGroup
	for h, host := range hosts {
		for c := range clientsPerHost {
			wg.Add(1)
			go func() {
				defer wg.Done()
				w := &adminClient{http: client, base: host.base, id: fmt.Sprintf("%c%d", 'a'+h, c),
					rng: rand.New(rand.NewPCG(uint64(h), uint64(c)))}
				for range opsPerHost / clientsPerHost {
					op, err := w.next()
					if err != nil {
						t.Errorf("client %s: %v", w.id, err)
						return
					}
					record(op)
				}
			}()
		}
	}
	wg.Wait()
	t.Logf("mutations took %v", time.Since(began))
	close(stopReader)
	<-readerDone
	if readerErr != nil {
		t.Fatal(readerErr)
	}

	final, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var acked []*adminOp
	kinds := map[string]int{}
	for _, op := range log {
		if op.code == 200 {
			acked = append(acked, op)
			kinds[op.kind]++
		} else {
			kinds[op.kind+" refused"]++
		}
		if strings.Contains(op.raw, adminCanary) {
			t.Errorf("%s answered with the secret: %s", op.kind, op.raw)
		}
	}
	t.Logf("%d mutations, %d acknowledged %v; the reader saw %d file versions", len(log), len(acked), kinds, seen)
	for _, k := range []string{"post", "put-server", "delete", "patch", "put-all"} {
		if kinds[k] == 0 {
			t.Errorf("no acknowledged %s: the mix did not exercise it", k)
		}
	}

	// One serial order must explain every acknowledged answer and the file.
	start := projectFile(t, []byte(initial))
	began = time.Now()
	order, deepest, ok := serialOrder(start, acked)
	t.Logf("serial order found in %v", time.Since(began))
	if !ok {
		t.Fatalf("no serial order of the %d acknowledged mutations reproduces their answers (at most %d fit)", len(acked), deepest)
	}
	end := start
	if len(order) > 0 {
		end = order[len(order)-1].resp
	}
	if got := projectFile(t, final); got.key() != end.key() {
		t.Errorf("final file does not match the serial order:\n file  %s\n order %s", got.key(), end.key())
	}

	// Every server still holds its real secret; the rest of the file is intact.
	var doc map[string]any
	if err := json.Unmarshal(final, &doc); err != nil {
		t.Fatal(err)
	}
	for name, s := range doc["mcpServers"].(map[string]any) {
		if h := s.(map[string]any)["headers"]; fmt.Sprint(h) != fmt.Sprint(map[string]any{"X-Key": adminCanary}) {
			t.Errorf("server %s headers %v", name, h)
		}
	}
	var want map[string]any
	_ = json.Unmarshal([]byte(initial), &want)
	for _, k := range []string{"customTopLevel", "skills", "middlewares"} {
		if fmt.Sprint(doc[k]) != fmt.Sprint(want[k]) {
			t.Errorf("%s changed: %v", k, doc[k])
		}
	}
	if !bytes.Contains(final, []byte(`"n": 1.50`)) {
		t.Errorf("a number's spelling changed")
	}
	entries, _ := os.ReadDir(cfgDir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmp") {
			t.Errorf("temp file left: %s", e.Name())
		}
	}

	for _, h := range hosts {
		_ = h.cmd.Process.Signal(syscall.SIGTERM)
		_ = h.cmd.Wait()
		if strings.Contains(h.errb.String(), adminCanary) {
			t.Errorf("a host logged the secret:\n%s", h.errb)
		}
	}
}

// adminOp is one mutation and its answer.
type adminOp struct {
	kind string // post, put-server, delete, patch, put-all
	name string
	// entry is the server as the mutation sets it (post, put-server, patch).
	entry srvState
	// all is the whole set a put-all sends.
	all  projection
	code int
	raw  string
	resp projection // the answer's server set (200 only)
	// start is when the request was sent, end when its answer arrived.
	start, end time.Time
}

// srvState is what the test tracks of a server: enabled and url.
type srvState struct {
	name    string
	enabled bool
	url     string
}

// projection is a server set in order.
type projection []srvState

func (p projection) key() string {
	var b strings.Builder
	for _, s := range p {
		fmt.Fprintf(&b, "%s|%v|%s;", s.name, s.enabled, s.url)
	}
	return b.String()
}

func (p projection) find(name string) int {
	for i, s := range p {
		if s.name == name {
			return i
		}
	}
	return -1
}

// apply is the model of one mutation; ok=false when it could not have
// succeeded from p (a duplicate POST, an edit of a missing server).
func (op *adminOp) apply(p projection) (projection, bool) {
	i := p.find(op.name)
	out := append(projection(nil), p...)
	switch op.kind {
	case "post":
		if i >= 0 {
			return nil, false
		}
		return append(out, op.entry), true
	case "put-server":
		if i < 0 {
			return nil, false
		}
		out[i] = op.entry
	case "patch":
		if i < 0 {
			return nil, false
		}
		out[i].enabled = op.entry.enabled
	case "delete":
		if i < 0 {
			return nil, false
		}
		out = append(out[:i], out[i+1:]...)
	case "put-all":
		return op.all, true
	}
	return out, true
}

// serialOrder searches for a linearization of ops: an order in which each
// one, applied to the state the previous ones left, gives exactly its own
// answer, and which respects real time (an op that was answered before
// another was sent comes first). Candidates are tried in the order their
// answers arrived; failed (done, state) pairs are remembered and the search
// has a step budget, so a bug fails the test instead of hanging it.
func serialOrder(start projection, ops []*adminOp) (order []*adminOp, deepest int, ok bool) {
	sort.Slice(ops, func(i, j int) bool { return ops[i].end.Before(ops[j].end) })
	used := make([]bool, len(ops))
	order = make([]*adminOp, 0, len(ops))
	dead := map[string]bool{}
	budget := 2_000_000
	var visit func(state projection) bool
	visit = func(state projection) bool {
		if len(order) == len(ops) {
			return true
		}
		if budget--; budget < 0 {
			return false
		}
		// The earliest answer among the ops left: nothing sent after it
		// may come next.
		first := -1
		for i := range ops {
			if !used[i] {
				first = i
				break
			}
		}
		deadline := ops[first].end
		var sig strings.Builder
		for i, u := range used {
			if !u {
				fmt.Fprintf(&sig, "%d,", i)
			}
		}
		memo := sig.String() + "#" + state.key()
		if dead[memo] {
			return false
		}
		for i, op := range ops {
			if used[i] {
				continue
			}
			if op.start.After(deadline) {
				continue // sent after an op still left was answered
			}
			next, ok := op.apply(state)
			if !ok || next.key() != op.resp.key() {
				continue
			}
			used[i] = true
			order = append(order, op)
			deepest = max(deepest, len(order))
			if visit(op.resp) {
				return true
			}
			used[i] = false
			order = order[:len(order)-1]
		}
		dead[memo] = true
		return false
	}
	ok = visit(start)
	return order, deepest, ok
}

// adminClient is one client of one host. It owns the server names it adds.
type adminClient struct {
	http *http.Client
	base string
	id   string
	rng  *rand.Rand
	n    int      // names and versions issued
	live []string // own servers it believes exist
}

func (w *adminClient) next() (*adminOp, error) {
	w.n++
	url := func(name string) string { return fmt.Sprintf("http://127.0.0.1:9/%s/v%d", name, w.n) }
	r := w.rng.IntN(100)
	switch {
	case r < 30 || len(w.live) == 0:
		name := fmt.Sprintf("%s-%d", w.id, w.n)
		op := &adminOp{kind: "post", name: name, entry: srvState{name, w.rng.IntN(2) == 0, url(name)}}
		body := map[string]any{"mcp_servers": map[string]any{name: map[string]any{
			"enabled": op.entry.enabled, "type": "http", "url": op.entry.url, "headers": map[string]string{"X-Key": adminCanary}}}}
		if err := w.send(op, "POST", "/api/mcp/config/servers", body); err != nil {
			return nil, err
		}
		if op.code == 200 {
			w.live = append(w.live, name)
		}
		return op, nil
	case r < 50:
		name := w.live[w.rng.IntN(len(w.live))]
		op := &adminOp{kind: "put-server", name: name, entry: srvState{name, w.rng.IntN(2) == 0, url(name)}}
		body := map[string]any{"server_name": name, "server": map[string]any{
			"enabled": op.entry.enabled, "type": "http", "url": op.entry.url, "headers": map[string]string{"X-Key": "***"}}}
		return op, w.send(op, "PUT", "/api/mcp/config/server", body)
	case r < 65:
		i := w.rng.IntN(len(w.live))
		name := w.live[i]
		w.live = append(w.live[:i], w.live[i+1:]...)
		op := &adminOp{kind: "delete", name: name}
		return op, w.send(op, "DELETE", "/api/mcp/config/servers/"+name, nil)
	case r < 93:
		name := fmt.Sprintf("shared-%d", w.rng.IntN(3))
		op := &adminOp{kind: "patch", name: name, entry: srvState{name: name, enabled: w.rng.IntN(2) == 0}}
		return op, w.send(op, "PATCH", "/api/mcp/config", map[string]any{"server_name": name, "enabled": op.entry.enabled})
	default:
		// GET → edit one own server → PUT the whole set back. Another
		// client's change between the two is overwritten (that is what a
		// whole-set PUT means), and a server deleted meanwhile cannot come
		// back with masked secrets (400).
		code, raw, err := w.do("GET", "/api/mcp/config", nil)
		if err != nil || code != 200 {
			return nil, fmt.Errorf("GET: %d %v %s", code, err, raw)
		}
		tree, err := config.ParseJSON([]byte(raw))
		if err != nil {
			return nil, err
		}
		servers, _ := tree.(*config.Object).Get("mcp_servers")
		set := servers.(*config.Object)
		name := w.live[w.rng.IntN(len(w.live))]
		if v, ok := set.Get(name); ok {
			v.(*config.Object).Set("url", url(name))
		}
		op := &adminOp{kind: "put-all", all: projectServers(set)}
		return op, w.send(op, "PUT", "/api/mcp/config", map[string]any{"mcp_servers": set})
	}
}

func (w *adminClient) send(op *adminOp, method, path string, body any) error {
	op.start = time.Now()
	code, raw, err := w.do(method, path, body)
	op.end = time.Now()
	if err != nil {
		return fmt.Errorf("%s %s: %v", method, path, err)
	}
	op.code, op.raw = code, raw
	switch code {
	case 200:
		tree, err := config.ParseJSON([]byte(raw))
		if err != nil {
			return fmt.Errorf("%s %s: answer is not JSON: %v", method, path, err)
		}
		servers, _ := tree.(*config.Object).Get("mcp_servers")
		op.resp = projectServers(servers.(*config.Object))
	case 404, 400:
		// A server another client's whole-set PUT removed (404), or a
		// whole-set PUT that would bring back a deleted server's masked
		// secret (400). Anything else is a failure.
		if !(code == 404 && (op.kind == "put-server" || op.kind == "delete")) &&
			!(code == 400 && op.kind == "put-all" && strings.Contains(raw, "Cannot persist masked secret placeholder")) {
			return fmt.Errorf("%s %s: unexpected %d %s", method, path, code, raw)
		}
	default:
		return fmt.Errorf("%s %s: unexpected %d %s", method, path, code, raw)
	}
	return nil
}

func (w *adminClient) do(method, path string, body any) (int, string, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, "", err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, w.base+path, rd)
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := w.http.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data), err
}

// projectServers reads the tracked fields of a server set (masked or raw).
func projectServers(set *config.Object) projection {
	var p projection
	for _, name := range set.Keys() {
		v, _ := set.Get(name)
		o, _ := v.(*config.Object)
		s := srvState{name: name, enabled: true}
		if e, ok := o.Get("enabled"); ok {
			s.enabled, _ = e.(bool)
		}
		if u, ok := o.Get("url"); ok {
			s.url, _ = u.(string)
		}
		p = append(p, s)
	}
	return p
}

func projectFile(t *testing.T, data []byte) projection {
	t.Helper()
	tree, err := config.ParseJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	servers, _ := tree.(*config.Object).Get("mcpServers")
	return projectServers(servers.(*config.Object))
}
