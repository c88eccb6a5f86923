package abi

// Process plugins (hashicorp/go-plugin over gRPC) carry the same messages as
// Wasm plugins, as raw protobuf bytes in unary gRPC calls on one service.
// The handshake's protocol version is the ABI major, so a process built for
// another major is refused at start.
const (
	ProcessCookieKey   = "ANTLER_PLUGIN_MAGIC_COOKIE"
	ProcessCookieValue = "antler.mcp.plugin.v1"
	ProcessPluginName  = "antler"

	GRPCService    = "antler.abi.v1.Plugin"
	GRPCInfo       = "/antler.abi.v1.Plugin/Info"      // empty → Info
	GRPCIntercept  = "/antler.abi.v1.Plugin/Intercept" // InterceptRequest → InterceptResponse
	GRPCOnResult   = "/antler.abi.v1.Plugin/OnResult"  // ResultRequest → ResultResponse
	GRPCTaskSubmit = "/antler.abi.v1.Plugin/TaskSubmit"
	GRPCTaskStatus = "/antler.abi.v1.Plugin/TaskStatus"
	GRPCTaskCancel = "/antler.abi.v1.Plugin/TaskCancel"
	GRPCTaskAnswer = "/antler.abi.v1.Plugin/TaskAnswer" // TaskAnswerRequest → TaskDriverResponse (1.1)

	// A task driver process calls the host back on the go-plugin broker:
	// each task call's gRPC metadata names the broker stream id to dial
	// (ProcessBrokerIDKey) and the call (ProcessCallIDKey), which the
	// plugin sends back as metadata of its CallTool calls. A call id that is
	// not in flight is refused.
	GRPCHostService    = "antler.abi.v1.Host"
	GRPCCallTool       = "/antler.abi.v1.Host/CallTool" // CallToolRequest → CallToolResponse
	ProcessBrokerIDKey = "antler-broker-id"
	ProcessCallIDKey   = "antler-call-id"
)

// Info is a process plugin's self-description (what antler_abi_version and
// antler_features say for a Wasm module).
type Info struct {
	Major    uint64 // 1
	Minor    uint64 // 2
	Features uint64 // 3
}

// Encode appends the message to e.
func (i *Info) Encode(e *Encoder) {
	e.Uint(1, i.Major)
	e.Uint(2, i.Minor)
	e.Uint(3, i.Features)
}

// Decode reads the message from b.
func (i *Info) Decode(b []byte) error {
	*i = Info{}
	d := Decoder{buf: b}
	for d.Next() {
		switch d.Field() {
		case 1:
			i.Major = d.Uint()
		case 2:
			i.Minor = d.Uint()
		case 3:
			i.Features = d.Uint()
		}
	}
	return d.Err()
}
