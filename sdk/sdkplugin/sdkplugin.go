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

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/antler-mcp/antler/abi"
	"github.com/antler-mcp/antler/sdk"
)

// Handshake is the go-plugin handshake for ABI major 1.
var Handshake = goplugin.HandshakeConfig{
	ProtocolVersion:  abi.Major,
	MagicCookieKey:   abi.ProcessCookieKey,
	MagicCookieValue: abi.ProcessCookieValue,
}

// Serve serves the handlers registered with sdk until the host stops the
// process. It exits with an error when run by hand (no host handshake).
func Serve() {
	if os.Getenv(abi.ProcessCookieKey) != abi.ProcessCookieValue {
		fmt.Fprintln(os.Stderr, "This is an Antler plugin: configure it in mcpInterceptors as \"process:<path>\"; it is not meant to be run directly.")
		os.Exit(1)
	}
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         goplugin.PluginSet{abi.ProcessPluginName: &grpcPlugin{}},
		GRPCServer: func(opts []grpc.ServerOption) *grpc.Server {
			return grpc.NewServer(append(opts, grpc.ForceServerCodec(RawCodec{}))...)
		},
	})
}

// RawCodec passes protobuf bytes through gRPC untouched: messages are
// already encoded by abi's codec.
type RawCodec struct{}

// Marshal returns the bytes in *[]byte.
func (RawCodec) Marshal(v any) ([]byte, error) {
	b, ok := v.(*[]byte)
	if !ok {
		return nil, fmt.Errorf("raw codec: cannot marshal %T", v)
	}
	return *b, nil
}

// Unmarshal copies data into *[]byte.
func (RawCodec) Unmarshal(data []byte, v any) error {
	b, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("raw codec: cannot unmarshal into %T", v)
	}
	*b = append((*b)[:0], data...)
	return nil
}

// Name identifies the codec.
func (RawCodec) Name() string { return "antler-raw" }

// grpcPlugin registers the service; the client half lives in the host.
type grpcPlugin struct {
	goplugin.NetRPCUnsupportedPlugin
}

func (grpcPlugin) GRPCServer(_ *goplugin.GRPCBroker, s *grpc.Server) error {
	s.RegisterService(&serviceDesc, server{})
	return nil
}

func (grpcPlugin) GRPCClient(context.Context, *goplugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, fmt.Errorf("sdkplugin serves plugins; the host has the client")
}

type server struct{}

// handler adapts one dispatcher entry point to a gRPC unary method. Each
// call gets its own Dispatcher: gRPC serves calls concurrently, and a
// dispatcher reuses its buffers.
func handler(run func(d *sdk.Dispatcher, in []byte) []byte) func(any, context.Context, func(any) error, grpc.UnaryServerInterceptor) (any, error) {
	return func(_ any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
		var in []byte
		if err := dec(&in); err != nil {
			return nil, err
		}
		var d sdk.Dispatcher
		out := append([]byte(nil), run(&d, in)...)
		return &out, nil
	}
}

var serviceDesc = grpc.ServiceDesc{
	ServiceName: abi.GRPCService,
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{
		{MethodName: "Info", Handler: handler(func(_ *sdk.Dispatcher, _ []byte) []byte {
			var e abi.Encoder
			info := abi.Info{Major: abi.Major, Minor: abi.Minor, Features: sdk.Features()}
			info.Encode(&e)
			return e.Bytes()
		})},
		{MethodName: "Intercept", Handler: handler((*sdk.Dispatcher).Intercept)},
		{MethodName: "OnResult", Handler: handler((*sdk.Dispatcher).Result)},
		{MethodName: "TaskSubmit", Handler: handler(func(d *sdk.Dispatcher, in []byte) []byte { return d.Task("submit", in) })},
		{MethodName: "TaskStatus", Handler: handler(func(d *sdk.Dispatcher, in []byte) []byte { return d.Task("status", in) })},
		{MethodName: "TaskCancel", Handler: handler(func(d *sdk.Dispatcher, in []byte) []byte { return d.Task("cancel", in) })},
	},
	Metadata: "antler/abi/README.md",
}
