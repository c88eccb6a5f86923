package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/testmcp"
)

func TestRun(t *testing.T) {
	bin := testmcp.Build(t)
	tests := []struct {
		name     string
		args     []string
		wantCode int
		// wantRows is the number of result rows printed under the header.
		wantRows int
		wantErr  string
	}{
		{name: "one row per level", args: []string{"-mode", "direct", "-tool", "echo", "-c", "1,2", "-n", "4", "--", bin}, wantRows: 2},
		{name: "failed calls exit 1", args: []string{"-mode", "direct", "-tool", "fail", "-args", `{"message":"no"}`, "-c", "1", "-n", "3", "--", bin}, wantCode: 1, wantRows: 1, wantErr: "3 of 3 calls failed"},
		{name: "bad level", args: []string{"-mode", "direct", "-c", "0", "--", bin}, wantCode: 2, wantErr: "-c"},
		{name: "no command", args: []string{"-mode", "direct", "-n", "1"}, wantCode: 2, wantErr: "needs a command"},
		{name: "unreachable endpoint", args: []string{"-mode", "mcp", "-url", "http://127.0.0.1:1/mcp", "-c", "1", "-n", "1"}, wantCode: 1, wantErr: "setup failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(t.Context(), tt.args, func(string) string { return "" }, &out, &errOut)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tt.wantCode, errOut.String())
			}
			if !strings.Contains(errOut.String(), tt.wantErr) {
				t.Errorf("stderr %q lacks %q", errOut.String(), tt.wantErr)
			}
			rows := 0
			for line := range strings.Lines(out.String()) {
				if f := strings.Fields(line); len(f) > 0 && f[0] == "direct" {
					rows++
				}
			}
			if rows != tt.wantRows {
				t.Errorf("%d result rows, want %d:\n%s", rows, tt.wantRows, out.String())
			}
		})
	}
}
