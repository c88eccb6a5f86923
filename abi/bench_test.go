package abi_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/abi"
)

// BenchmarkInterceptRequest encodes and decodes a typical request: ~1 KiB of
// JSON arguments and five headers, reusing the Encoder and the decoded value
// as the SDK's dispatcher does.
func BenchmarkInterceptRequest(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"owner":"antler-mcp","repo":"antler","items":[`)
	for i := 0; sb.Len() < 1000; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"id":%d,"title":"issue number %d"}`, i, i)
	}
	sb.WriteString(`]}`)
	req := abi.InterceptRequest{
		Server:       "github",
		Transport:    "streamable-http",
		Tool:         "github__create_issue",
		OriginalTool: "create_issue",
		Arguments:    []byte(sb.String()),
		Headers: []abi.Header{
			{Name: "Authorization", Value: "Bearer ghp_0123456789abcdef0123456789abcdef0123"},
			{Name: "Content-Type", Value: "application/json"},
			{Name: "User-Agent", Value: "antler/1.0"},
			{Name: "X-Request-Id", Value: "7f9c2ba4-e88f-11ee-9f56-0242ac120002"},
			{Name: "Accept", Value: "application/json, text/event-stream"},
		},
		UserID:      "user-42",
		ThreadID:    "thread-7",
		SecretNames: []string{"GITHUB_TOKEN"},
		Config:      []byte(`{"deny":["delete_repo"]}`),
	}
	var (
		e   abi.Encoder
		got abi.InterceptRequest
	)
	req.Encode(&e)
	b.SetBytes(int64(len(e.Bytes())))
	b.ReportAllocs()
	for b.Loop() {
		e.Reset()
		req.Encode(&e)
		if err := got.Decode(e.Bytes()); err != nil {
			b.Fatal(err)
		}
	}
}
