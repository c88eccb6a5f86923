// Package pluginrpc is the gRPC carrier of process plugins, written once for
// both ends: the host (plugins) and the plugin process (sdk/sdkplugin). A
// process plugin is started with hashicorp/go-plugin; the two ends agree on
// Handshake, and every message travels as the bytes abi's codec encoded,
// passed through gRPC untouched by RawCodec.
package pluginrpc

import (
	"context"
	"fmt"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/antler-mcp/antler/abi"
)

// Handshake is the go-plugin handshake for ABI major 1: a process built for
// another major, or a program that is not an Antler plugin, fails it.
var Handshake = goplugin.HandshakeConfig{
	ProtocolVersion:  abi.Major,
	MagicCookieKey:   abi.ProcessCookieKey,
	MagicCookieValue: abi.ProcessCookieValue,
}

// RawCodec passes protobuf bytes through gRPC untouched: messages are
// already encoded by abi's codec.
type RawCodec struct{}

var _ encoding.Codec = RawCodec{}

// Marshal returns the bytes in *[]byte. Any other value (go-plugin's own
// services on the same server: the broker that carries call_tool back to
// the host) is protobuf.
func (RawCodec) Marshal(v any) ([]byte, error) {
	b, ok := v.(*[]byte)
	if !ok {
		if m, ok := v.(proto.Message); ok {
			return proto.Marshal(m)
		}
		return nil, fmt.Errorf("raw codec: cannot marshal %T", v)
	}
	return *b, nil
}

// Unmarshal copies data into *[]byte, or decodes protobuf into any other value.
func (RawCodec) Unmarshal(data []byte, v any) error {
	b, ok := v.(*[]byte)
	if !ok {
		if m, ok := v.(proto.Message); ok {
			return proto.Unmarshal(data, m)
		}
		return fmt.Errorf("raw codec: cannot unmarshal into %T", v)
	}
	*b = append((*b)[:0], data...)
	return nil
}

// Name identifies the codec.
func (RawCodec) Name() string { return "antler-raw" }

// NewServer is a gRPC server that reads and writes raw messages; go-plugin
// passes opts (its own TLS and health settings).
func NewServer(opts []grpc.ServerOption) *grpc.Server {
	return grpc.NewServer(append(opts, grpc.ForceServerCodec(RawCodec{}))...)
}

// Invoke sends one encoded message to method and returns the encoded answer.
func Invoke(ctx context.Context, conn *grpc.ClientConn, method string, in []byte) ([]byte, error) {
	var out []byte
	if err := conn.Invoke(ctx, method, &in, &out, grpc.ForceCodec(RawCodec{})); err != nil {
		return nil, err
	}
	return out, nil
}

// Unary adapts a function of the encoded request to a gRPC unary method
// handler; srv is the service implementation registered with the method.
func Unary(serve func(srv any, ctx context.Context, in []byte) []byte) grpc.MethodHandler {
	return func(srv any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
		var in []byte
		if err := dec(&in); err != nil {
			return nil, err
		}
		out := serve(srv, ctx, in)
		return &out, nil
	}
}

// IncomingValue returns the one value of key in the call's metadata, or ""
// when it is absent or repeated.
func IncomingValue(ctx context.Context, key string) string {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get(key); len(v) == 1 {
		return v[0]
	}
	return ""
}
