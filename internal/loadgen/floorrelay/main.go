// Command floorrelay is the least an HTTP gateway to a stdio MCP server can
// do per call, for the load benchmark's floor rows: it answers every POST
// with one tools/call written to the server's stdin and the result read
// back from its stdout, with no routing, authentication, configuration,
// interceptors, workspace or protocol checks. Its cost is the HTTP hop,
// the pipe hop and one reader goroutine's hand-off, which any gateway that
// lets calls share a server process pays too. With -const it does not
// start a server and answers every POST with a fixed result: the HTTP hop
// alone.
//
//	floorrelay -listen 127.0.0.1:18085 -tool echo -- ./demo
//	floorrelay -listen 127.0.0.1:18086 -const
//
// Requests are read as Antler's REST door reads them (a JSON object with
// "arguments"), so antler-load -mode rest drives it. It is a measuring
// instrument, not a gateway: it trusts its one caller.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr, nil); err != nil {
		fmt.Fprintln(os.Stderr, "floorrelay:", err)
		os.Exit(1)
	}
}

// constResult is what -const answers: the demo echo's result for the load
// generator's default arguments.
const constResult = `{"content":[{"type":"text","text":"Echo: benchmark"}]}`

// run serves until ctx ends; ready, if set, gets the listening address.
func run(ctx context.Context, args []string, stderr io.Writer, ready func(addr string)) error {
	fs := flag.NewFlagSet("floorrelay", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:0", "address to serve on")
	tool := fs.String("tool", "echo", "the server's tool every POST calls")
	constant := fs.Bool("const", false, "answer a fixed result without a server (the HTTP hop alone)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var h http.Handler
	if *constant {
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			writeResult(w, []byte(constResult))
		})
	} else {
		if fs.NArg() == 0 {
			return errors.New("the stdio server's command goes after --")
		}
		p, err := startPipe(ctx, fs.Args())
		if err != nil {
			return err
		}
		defer p.close()
		h = p.handler(*tool)
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	if ready != nil {
		ready(ln.Addr().String())
	}
	srv := &http.Server{Handler: h}
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func writeResult(w http.ResponseWriter, result []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(result)))
	_, _ = w.Write(result)
}

// pipe is one stdio server shared by every request, its replies matched to
// their requests by id, as a gateway multiplexing one process does.
type pipe struct {
	cmd *exec.Cmd
	in  io.WriteCloser

	wmu sync.Mutex // one line at a time on stdin
	mu  sync.Mutex
	ids int64
	// waiting maps a request's id, as written, to the channel its reply's
	// line goes to.
	waiting map[string]chan []byte
	err     error // why the server's stdout ended
}

func startPipe(ctx context.Context, argv []string) (*pipe, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &pipe{cmd: cmd, in: in, waiting: map[string]chan []byte{}}
	go p.read(bufio.NewReaderSize(out, 64<<10))
	if _, err := p.call(`"initialize"`, `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"floorrelay","version":"0"}}`); err != nil {
		p.close()
		return nil, fmt.Errorf("initialize: %w", err)
	}
	if err := p.write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

// read hands each reply line to its waiter; other lines are dropped.
func (p *pipe) read(out *bufio.Reader) {
	for {
		line, err := out.ReadBytes('\n')
		if err != nil {
			p.mu.Lock()
			p.err = fmt.Errorf("server's stdout ended: %w", err)
			for id, ch := range p.waiting {
				close(ch)
				delete(p.waiting, id)
			}
			p.mu.Unlock()
			return
		}
		// The id is found by the cheapest reading that is still right for
		// the relay's own ids: "f-" and digits, written without spaces.
		i := bytes.Index(line, []byte(`"id":"f-`))
		if i < 0 {
			continue
		}
		j := bytes.IndexByte(line[i+6:], '"')
		if j < 0 {
			continue
		}
		id := string(line[i+5 : i+7+j]) // the quotes included
		p.mu.Lock()
		ch := p.waiting[id]
		delete(p.waiting, id)
		p.mu.Unlock()
		if ch != nil {
			ch <- line
		}
	}
}

func (p *pipe) write(line []byte) error {
	p.wmu.Lock()
	defer p.wmu.Unlock()
	_, err := p.in.Write(line)
	return err
}

// call sends one request (method as a JSON string, params as JSON) and
// returns its reply's result member.
func (p *pipe) call(method, params string) ([]byte, error) {
	ch := make(chan []byte, 1)
	p.mu.Lock()
	if p.err != nil {
		p.mu.Unlock()
		return nil, p.err
	}
	p.ids++
	id := `"f-` + strconv.FormatInt(p.ids, 10) + `"`
	p.waiting[id] = ch
	p.mu.Unlock()
	line := make([]byte, 0, 64+len(method)+len(params))
	line = append(line, `{"jsonrpc":"2.0","id":`...)
	line = append(line, id...)
	line = append(line, `,"method":`...)
	line = append(line, method...)
	line = append(line, `,"params":`...)
	line = append(line, params...)
	line = append(line, "}\n"...)
	if err := p.write(line); err != nil {
		return nil, err
	}
	reply, ok := <-ch
	if !ok {
		return nil, p.err
	}
	var msg struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(reply, &msg); err != nil {
		return nil, fmt.Errorf("reply: %w", err)
	}
	if msg.Result == nil {
		return nil, fmt.Errorf("server error: %s", msg.Error)
	}
	return msg.Result, nil
}

func (p *pipe) handler(tool string) http.Handler {
	name, _ := json.Marshal(tool)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Arguments json.RawMessage `json:"arguments"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Arguments) == 0 {
			http.Error(w, "want {\"arguments\": {...}}", http.StatusBadRequest)
			return
		}
		var args bytes.Buffer
		if err := json.Compact(&args, req.Arguments); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		params := `{"name":` + string(name) + `,"arguments":` + args.String() + `}`
		result, err := p.call(`"tools/call"`, params)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		writeResult(w, result)
	})
}

func (p *pipe) close() {
	_ = p.in.Close()
	_ = p.cmd.Wait()
}
