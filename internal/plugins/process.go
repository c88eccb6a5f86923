package plugins

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/antler-mcp/antler/abi"
	"github.com/antler-mcp/antler/internal/pluginrpc"
)

// Process plugins: the same messages as Wasm plugins, carried by gRPC to a
// separate process started with hashicorp/go-plugin. The process is
// crash-isolated, gets a parent-death signal and its own process group, and
// inherits only a minimal environment.

const (
	processStartTimeout = 10 * time.Second
	processCallTimeout  = 5 * time.Second
	maxRestartBackoff   = 30 * time.Second
)

// processEnv is all a plugin process inherits from the host.
var processEnv = []string{"HOME", "PATH", "TMPDIR", "LANG"}

// connPlugin hands the host the plugin's gRPC connection.
type connPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
}

func (connPlugin) GRPCServer(*goplugin.GRPCBroker, *grpc.Server) error {
	return errors.New("the host does not serve plugins")
}

func (connPlugin) GRPCClient(_ context.Context, b *goplugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return &brokered{conn: c, broker: b}, nil
}

// brokered is the plugin's connection and the broker that lets the host
// serve call_tool back to it.
type brokered struct {
	conn   *grpc.ClientConn
	broker *goplugin.GRPCBroker
}

var grpcMethods = map[string]string{
	abi.ExportIntercept:  abi.GRPCIntercept,
	abi.ExportOnResult:   abi.GRPCOnResult,
	abi.ExportTaskSubmit: abi.GRPCTaskSubmit,
	abi.ExportTaskStatus: abi.GRPCTaskStatus,
	abi.ExportTaskCancel: abi.GRPCTaskCancel,
	abi.ExportTaskAnswer: abi.GRPCTaskAnswer,
}

// process is a running (or restartable) plugin process.
type process struct {
	entry Entry
	log   *slog.Logger

	// serveHost starts the host service (call_tool) on the go-plugin
	// broker for every process started: task drivers.
	serveHost bool

	mu        sync.Mutex
	client    *goplugin.Client
	conn      *grpc.ClientConn
	broker    *goplugin.GRPCBroker
	brokerID  uint32 // the host service's broker stream; 0 until served
	failures  int
	nextStart time.Time
	closed    bool

	// calls are the driver calls in flight, by the id sent with each, so
	// a call_tool from the plugin is served with its call's scope.
	callsMu sync.Mutex
	calls   map[string]callScope
	nextID  uint64
}

var _ backend = (*process)(nil)

// callScope is one in-flight call's context and call_tool function.
type callScope struct {
	ctx      context.Context
	callTool CallToolFunc
}

// startProcess starts the plugin and asks what it is. serveHost also serves
// the host's call_tool to it (task drivers).
func startProcess(ctx context.Context, e Entry, log *slog.Logger, serveHost bool) (*process, abi.Info, error) {
	p := &process{entry: e, log: log, serveHost: serveHost, calls: map[string]callScope{}}
	if _, err := os.Stat(e.Path); err != nil {
		return nil, abi.Info{}, fmt.Errorf("%s: plugin file %s does not exist", e.Name, e.Path)
	}
	conn, err := p.connect()
	if err != nil {
		return nil, abi.Info{}, err
	}
	cctx, cancel := context.WithTimeout(ctx, processStartTimeout)
	defer cancel()
	out, err := pluginrpc.Invoke(cctx, conn, abi.GRPCInfo, nil)
	if err != nil {
		p.Close()
		return nil, abi.Info{}, fmt.Errorf("%s: the plugin process did not answer Info: %w", e.Name, err)
	}
	var info abi.Info
	if err := info.Decode(out); err != nil {
		p.Close()
		return nil, abi.Info{}, fmt.Errorf("%s: malformed Info answer", e.Name)
	}
	if info.Major != abi.Major {
		p.Close()
		return nil, abi.Info{}, fmt.Errorf("%s: speaks plugin ABI %d.%d; this host speaks %d.x", e.Name, info.Major, info.Minor, abi.Major)
	}
	return p, info, nil
}

// connect starts the process if none is running; callers hold no lock.
func (p *process) connect() (*grpc.ClientConn, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errors.New("plugin closed")
	}
	if p.client != nil && !p.client.Exited() {
		return p.conn, nil
	}
	if p.client != nil {
		// It exited between calls: that is a crash too, so the restart
		// waits out the backoff (a plugin that dies at once is not
		// restarted on every call).
		p.log.Warn("plugin process exited; restarting after a backoff")
		p.client.Kill()
		p.client, p.conn, p.broker, p.brokerID = nil, nil, nil, 0
		p.noteFailure()
	}
	if now := time.Now(); now.Before(p.nextStart) {
		return nil, fmt.Errorf("%s: restarting after a crash (next try in %s)", p.entry.Name, p.nextStart.Sub(now).Round(time.Millisecond))
	}
	cmd := exec.Command(p.entry.Path)
	for _, k := range processEnv {
		if v, ok := os.LookupEnv(k); ok {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	budget := newLineBudget(p.log)
	client := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  pluginrpc.Handshake,
		Plugins:          goplugin.PluginSet{abi.ProcessPluginName: connPlugin{}},
		Cmd:              cmd,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		StartTimeout:     processStartTimeout,
		Logger:           hclog.NewNullLogger(),
		Stderr:           &stderrLog{log: p.log, budget: budget},
		SyncStdout:       io.Discard,
		// The plugin's os.Stderr (sdk.Log) arrives here once it serves;
		// a crash's trace arrives on Stderr.
		SyncStderr: &stderrLog{log: p.log, budget: budget},
	})
	rpc, err := client.Client()
	if err != nil {
		client.Kill()
		p.noteFailure()
		return nil, fmt.Errorf("%s: start plugin process: %w", p.entry.Name, err)
	}
	raw, err := rpc.Dispense(abi.ProcessPluginName)
	if err != nil {
		client.Kill()
		p.noteFailure()
		return nil, fmt.Errorf("%s: plugin process: %w", p.entry.Name, err)
	}
	bc, ok := raw.(*brokered)
	if !ok {
		client.Kill()
		return nil, fmt.Errorf("%s: plugin process: unexpected client %T", p.entry.Name, raw)
	}
	p.client, p.conn, p.broker, p.brokerID = client, bc.conn, bc.broker, 0
	return bc.conn, nil
}

// noteFailure schedules the next start with exponential backoff.
func (p *process) noteFailure() {
	p.failures++
	backoff := min(100*time.Millisecond<<min(p.failures, 10), maxRestartBackoff)
	p.nextStart = time.Now().Add(backoff)
}

// CallChecked sends one message and checks the answer. A process that died
// fails this call; the next call restarts it (after a backoff). A process
// keeps no per-call instance, so a bad answer only fails its call.
func (p *process) CallChecked(ctx context.Context, export, key string, in []byte, check func([]byte) error) ([]byte, error) {
	out, err := p.call(ctx, export, key, in)
	if err == nil && check != nil {
		if cerr := check(out); cerr != nil {
			return nil, fmt.Errorf("%s: malformed answer: %w", p.entry.Name, cerr)
		}
	}
	return out, err
}

func (p *process) call(ctx context.Context, export, _ string, in []byte) ([]byte, error) {
	method, ok := grpcMethods[export]
	if !ok {
		return nil, fmt.Errorf("%s: no method for %s", p.entry.Name, export)
	}
	conn, err := p.connect()
	if err != nil {
		return nil, err
	}
	timeout := p.entry.Timeout
	if timeout <= 0 {
		timeout = processCallTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if f := callToolOf(ctx); f != nil && p.serveHost {
		id := p.register(cctx, f)
		defer p.unregister(id)
		broker := p.serveHostService()
		cctx = metadata.AppendToOutgoingContext(cctx, abi.ProcessCallIDKey, id, abi.ProcessBrokerIDKey, strconv.FormatUint(uint64(broker), 10))
	}
	out, err := pluginrpc.Invoke(cctx, conn, method, in)
	if err != nil {
		// A task driver that overran its deadline is stopped: it may be
		// stuck (a loop holding its one call slot), and every later call
		// would time out behind it. It restarts after a backoff.
		hung := p.serveHost && ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded)
		p.mu.Lock()
		if p.client != nil && (hung || p.client.Exited()) {
			if hung {
				p.log.Warn("task driver process overran its deadline; stopping it, it will be restarted on next use")
			} else {
				p.log.Warn("plugin process exited; it will be restarted on next use")
			}
			p.client.Kill()
			p.client, p.conn, p.broker, p.brokerID = nil, nil, nil, 0
			p.noteFailure()
		}
		p.mu.Unlock()
		return nil, fmt.Errorf("%s: %w", p.entry.Name, err)
	}
	p.mu.Lock()
	p.failures = 0
	p.mu.Unlock()
	return out, nil
}

// serveHostService starts the host service on the running process's broker
// (once per process) and returns its stream id. It starts at the first
// driver call rather than at connect: go-plugin drops a stream's connection
// info the plugin has not dialled within seconds, and the plugin dials when
// a call names the stream.
func (p *process) serveHostService() uint32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.brokerID != 0 || p.broker == nil {
		return p.brokerID
	}
	p.brokerID = p.broker.NextId()
	go p.broker.AcceptAndServe(p.brokerID, func(opts []grpc.ServerOption) *grpc.Server {
		s := pluginrpc.NewServer(opts)
		s.RegisterService(&hostServiceDesc, p)
		return s
	})
	return p.brokerID
}

// register records an in-flight call and returns its id.
func (p *process) register(ctx context.Context, f CallToolFunc) string {
	p.callsMu.Lock()
	defer p.callsMu.Unlock()
	p.nextID++
	id := strconv.FormatUint(p.nextID, 10)
	p.calls[id] = callScope{ctx: ctx, callTool: f}
	return id
}

func (p *process) unregister(id string) {
	p.callsMu.Lock()
	delete(p.calls, id)
	p.callsMu.Unlock()
}

// serveCallTool answers the plugin's call_tool for the in-flight call its
// metadata names, in that call's context (its deadline and scope). A call
// id that is not in flight is refused.
func (p *process) serveCallTool(ctx context.Context, in []byte) []byte {
	id := pluginrpc.IncomingValue(ctx, abi.ProcessCallIDKey)
	p.callsMu.Lock()
	scope, ok := p.calls[id]
	p.callsMu.Unlock()
	resp := abi.CallToolResponse{Error: "the host refused the call: no task driver call is in flight"}
	var req abi.CallToolRequest
	switch {
	case !ok:
	case req.Decode(in) != nil:
		resp = abi.CallToolResponse{Error: "malformed CallToolRequest"}
	default:
		resp = scope.callTool(scope.ctx, &req)
	}
	var enc abi.Encoder
	resp.Encode(&enc)
	return enc.Bytes()
}

// hostServiceDesc is the host's service a process driver calls back on
// (abi.GRPCHostService), served on the go-plugin broker.
var hostServiceDesc = grpc.ServiceDesc{
	ServiceName: abi.GRPCHostService,
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "CallTool",
		Handler: pluginrpc.Unary(func(srv any, ctx context.Context, in []byte) []byte {
			return srv.(*process).serveCallTool(ctx, in)
		}),
	}},
	Metadata: "antler/abi/README.md",
}

// PID is the running process's id, or 0.
func (p *process) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.client == nil {
		return 0
	}
	if rc := p.client.ReattachConfig(); rc != nil {
		return rc.Pid
	}
	return 0
}

// Close stops the process.
func (p *process) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	if p.client != nil {
		p.client.Kill()
		p.client, p.conn = nil, nil
	}
}
