// Package abi is Antler's plugin contract, version 1.1: the names a Wasm guest
// exports and imports, the version and feature constants, and the messages
// exchanged with interceptors and task drivers together with their wire codec.
//
// The wire format is the protobuf binary encoding of the messages described in
// README.md, written and read by a small hand-written codec: no reflection and
// no generated code, so a Go guest decodes a request in a few hundred
// nanoseconds, and any language's protobuf library can read the same bytes.
// This package uses only the standard library: guests compile it to Wasm.
package abi

// Version of the contract. A host refuses a module whose major differs; a
// higher minor only adds optional messages fields and features.
const (
	Major = 1
	Minor = 1 // 1.1 added the task answer entry point (FeatureTaskAnswer)
)

// PackVersion is what antler_abi_version returns: major<<16 | minor.
func PackVersion(major, minor uint16) int32 { return int32(uint32(major)<<16 | uint32(minor)) }

// UnpackVersion splits a packed version.
func UnpackVersion(v int32) (major, minor uint16) { return uint16(uint32(v) >> 16), uint16(uint32(v)) }

// Feature bits returned by antler_features: which entry points a module has.
const (
	FeatureIntercept  uint64 = 1 << 0 // antler_intercept
	FeatureResultHook uint64 = 1 << 1 // antler_on_result
	FeatureTaskDriver uint64 = 1 << 2 // antler_task_submit/_status/_cancel
	FeatureLog        uint64 = 1 << 3 // imports log
	FeatureCallTool   uint64 = 1 << 4 // imports call_tool/read_result
	// FeatureTaskAnswer (1.1) says a task driver takes answers to its
	// input_required tasks: antler_task_answer. A driver without it (every
	// 1.0 driver) loads as before and its tasks cannot be answered.
	FeatureTaskAnswer uint64 = 1 << 5
)

// KnownFeatures are the bits this version defines; others are ignored.
const KnownFeatures = FeatureIntercept | FeatureResultHook | FeatureTaskDriver | FeatureLog | FeatureCallTool | FeatureTaskAnswer

// Guest exports.
const (
	ExportVersion      = "antler_abi_version" // () -> i32
	ExportFeatures     = "antler_features"    // () -> i64
	ExportAlloc        = "antler_alloc"       // (size i32) -> ptr i32
	ExportIntercept    = "antler_intercept"   // (ptr i32, len i32) -> packed i64
	ExportOnResult     = "antler_on_result"   // (ptr i32, len i32) -> packed i64
	ExportTaskSubmit   = "antler_task_submit" // (ptr i32, len i32) -> packed i64
	ExportTaskStatus   = "antler_task_status" // (ptr i32, len i32) -> packed i64
	ExportTaskCancel   = "antler_task_cancel" // (ptr i32, len i32) -> packed i64
	ExportTaskAnswer   = "antler_task_answer" // (ptr i32, len i32) -> packed i64 (1.1, FeatureTaskAnswer)
	ExportInitialize   = "_initialize"        // WASI reactor start, if present
	HostModule         = "antler_host_v1"     // the one versioned import module
	ImportLog          = "log"                // (level i32, ptr i32, len i32)
	ImportCallTool     = "call_tool"          // (ptr i32, len i32) -> i64: result length, or -1
	ImportReadResult   = "read_result"        // (ptr i32, cap i32) -> i32: bytes copied
	MaxMessageBytes    = 16 << 20             // larger messages are refused both ways
	LogDebug, LogInfo  = 0, 1
	LogWarn, LogError  = 2, 3
	packedPointerShift = 32
)

// Pack joins a guest pointer and length into the i64 an entry point returns.
func Pack(ptr, length uint32) uint64 { return uint64(ptr)<<packedPointerShift | uint64(length) }

// Unpack splits a packed pointer.
func Unpack(v uint64) (ptr, length uint32) { return uint32(v >> packedPointerShift), uint32(v) }
