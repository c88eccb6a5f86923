// Package sdkplugin serves a plugin's registered handlers as a separate
// process (hashicorp/go-plugin over gRPC) instead of a Wasm module: same
// handlers, same messages. Use it when a plugin needs what the Wasm sandbox
// withholds (files, network); the process is crash-isolated instead.
//
//	func main() { sdkplugin.Serve() }
package sdkplugin

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/antler-mcp/antler/abi"
	"github.com/antler-mcp/antler/internal/guest"
	"github.com/antler-mcp/antler/internal/pluginrpc"
)

// Serve serves the handlers registered with sdk until the host stops the
// process. It exits with an error when run by hand (no host handshake).
func Serve() {
	if os.Getenv(abi.ProcessCookieKey) != abi.ProcessCookieValue {
		fmt.Fprintln(os.Stderr, "This is an Antler plugin: configure it in mcpInterceptors as \"process:<path>\"; it is not meant to be run directly.")
		os.Exit(1)
	}
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig: pluginrpc.Handshake,
		Plugins:         goplugin.PluginSet{abi.ProcessPluginName: &grpcPlugin{}},
		GRPCServer:      pluginrpc.NewServer,
	})
}

// grpcPlugin registers the service; the client half lives in the host.
type grpcPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
}

func (grpcPlugin) GRPCServer(b *goplugin.GRPCBroker, s *grpc.Server) error {
	s.RegisterService(&serviceDesc, &server{broker: b, conns: map[uint32]*grpc.ClientConn{}})
	return nil
}

func (grpcPlugin) GRPCClient(context.Context, *goplugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, fmt.Errorf("sdkplugin serves plugins; the host has the client")
}

// server serves the plugin; conns are the host services dialled on the
// broker, by stream id (a restarted host connection gets a new one).
type server struct {
	broker *goplugin.GRPCBroker
	mu     sync.Mutex
	conns  map[uint32]*grpc.ClientConn
}

// hostConn dials (once) the host service the call's metadata names.
func (s *server) hostConn(id uint32) (*grpc.ClientConn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.conns[id]; ok {
		return c, nil
	}
	c, err := s.broker.Dial(id)
	if err != nil {
		return nil, err
	}
	s.conns[id] = c
	return c, nil
}

// callTool is the CallTool of one task call: it calls the host back with
// the call's id, under the call's deadline.
func (s *server) callTool(ctx context.Context) func(*abi.CallToolRequest) abi.CallToolResponse {
	callID := pluginrpc.IncomingValue(ctx, abi.ProcessCallIDKey)
	// Dial at once: the host serves the stream from this call on, and
	// go-plugin forgets a stream nobody dials within seconds.
	id, perr := strconv.ParseUint(pluginrpc.IncomingValue(ctx, abi.ProcessBrokerIDKey), 10, 32)
	var conn *grpc.ClientConn
	var derr error
	if perr == nil && callID != "" {
		conn, derr = s.hostConn(uint32(id))
	}
	return func(req *abi.CallToolRequest) abi.CallToolResponse {
		if perr != nil || callID == "" {
			return abi.CallToolResponse{Error: "the host refused the call: it offers no call_tool"}
		}
		if derr != nil {
			return abi.CallToolResponse{Error: "the host refused the call: cannot reach it: " + derr.Error()}
		}
		var e abi.Encoder
		req.Encode(&e)
		octx := metadata.AppendToOutgoingContext(ctx, abi.ProcessCallIDKey, callID)
		out, err := pluginrpc.Invoke(octx, conn, abi.GRPCCallTool, e.Bytes())
		if err != nil {
			return abi.CallToolResponse{Error: "the host refused the call: " + err.Error()}
		}
		var resp abi.CallToolResponse
		if err := resp.Decode(out); err != nil {
			return abi.CallToolResponse{Error: "malformed host answer"}
		}
		return resp
	}
}

// taskHandler serves one task entry point with the call's CallTool.
func taskHandler(op string) grpc.MethodHandler {
	return pluginrpc.Unary(func(srv any, ctx context.Context, in []byte) []byte {
		var d guest.Dispatcher
		return append([]byte(nil), d.TaskWith(op, in, srv.(*server).callTool(ctx))...)
	})
}

// handler adapts one dispatcher entry point to a gRPC unary method. Each
// call gets its own Dispatcher: gRPC serves calls concurrently, and a
// dispatcher reuses its buffers.
func handler(run func(d *guest.Dispatcher, in []byte) []byte) grpc.MethodHandler {
	return pluginrpc.Unary(func(_ any, _ context.Context, in []byte) []byte {
		var d guest.Dispatcher
		return append([]byte(nil), run(&d, in)...)
	})
}

var serviceDesc = grpc.ServiceDesc{
	ServiceName: abi.GRPCService,
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{
		{MethodName: "Info", Handler: handler(func(_ *guest.Dispatcher, _ []byte) []byte {
			var e abi.Encoder
			info := abi.Info{Major: abi.Major, Minor: abi.Minor, Features: guest.Features()}
			info.Encode(&e)
			return e.Bytes()
		})},
		{MethodName: "Intercept", Handler: handler((*guest.Dispatcher).Intercept)},
		{MethodName: "OnResult", Handler: handler((*guest.Dispatcher).Result)},
		{MethodName: "TaskSubmit", Handler: taskHandler("submit")},
		{MethodName: "TaskStatus", Handler: taskHandler("status")},
		{MethodName: "TaskCancel", Handler: taskHandler("cancel")},
		{MethodName: "TaskAnswer", Handler: taskHandler("answer")},
	},
	Metadata: "antler/abi/README.md",
}
