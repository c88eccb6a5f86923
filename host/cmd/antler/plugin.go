package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/antler-mcp/antler/abi"
	"github.com/antler-mcp/antler/internal/plugins"
	"github.com/antler-mcp/antler/internal/wasm"
)

const pluginUsage = `usage:
  antler plugin build <dir> [-o out.wasm]      build a Go plugin to Wasm
  antler plugin inspect <file.wasm>            ABI version, features, exports, imports, size
  antler plugin test <file.wasm> --input req.json [--config cfg.json]
                                               run the interceptor on one request
  antler plugin task <driver> --config extensions.json --server NAME [--arguments '{...}']
                     [--kind wasm|process] [--polls 30] [--interval 1s]
                                               run a task driver's submit and status
                                               against a live server
`

func cmdPlugin(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, pluginUsage)
		return 2
	}
	switch args[0] {
	case "build":
		return pluginBuild(args[1:], stdout, stderr)
	case "inspect":
		return pluginInspect(args[1:], stdout, stderr)
	case "test":
		return pluginTest(args[1:], stdout, stderr)
	case "task":
		return pluginTask(args[1:], stdout, stderr)
	}
	fmt.Fprint(stderr, pluginUsage)
	return 2
}

// parseInterspersed lets flags follow the positional argument.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) > 0 {
			pos = append(pos, args[0])
			args = args[1:]
		}
	}
	return pos, nil
}

func pluginBuild(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("plugin build", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "output file (default <dir>/<dir name>.wasm)")
	pos, err := parseInterspersed(fs, args)
	if err != nil || len(pos) != 1 {
		fmt.Fprint(stderr, pluginUsage)
		return 2
	}
	dir, err := filepath.Abs(pos[0])
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	target := *out
	if target == "" {
		target = filepath.Join(dir, filepath.Base(dir)+".wasm")
	}
	if target, err = filepath.Abs(target); err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", target, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	cmd.Stdout, cmd.Stderr = stderr, stderr
	if err := cmd.Run(); err != nil {
		fmt.Fprintln(stderr, "error: build failed:", err)
		return 1
	}
	fmt.Fprintln(stdout, target)
	return 0
}

func loadModule(ctx context.Context, path string, opts wasm.ModuleOptions) (*wasm.Runtime, *wasm.Module, error) {
	code, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	rt, err := wasm.NewRuntime(wasm.RuntimeOptions{})
	if err != nil {
		return nil, nil, err
	}
	if opts.Name == "" {
		opts.Name = filepath.Base(path)
	}
	m, err := rt.Load(ctx, code, opts)
	if err != nil {
		rt.Close(ctx)
		return nil, nil, err
	}
	return rt, m, nil
}

func pluginInspect(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		fmt.Fprint(stderr, pluginUsage)
		return 2
	}
	ctx := context.Background()
	start := time.Now()
	rt, m, err := loadModule(ctx, args[0], wasm.ModuleOptions{})
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	defer rt.Close(ctx)
	info := m.Info()
	var features []string
	for _, f := range []struct {
		bit  uint64
		name string
	}{{abi.FeatureIntercept, "intercept"}, {abi.FeatureResultHook, "result-hook"}, {abi.FeatureTaskDriver, "task-driver"},
		{abi.FeatureLog, "log"}, {abi.FeatureCallTool, "call-tool"}} {
		if info.Features&f.bit != 0 {
			features = append(features, f.name)
		}
	}
	fmt.Fprintf(stdout, "file:      %s\n", args[0])
	fmt.Fprintf(stdout, "abi:       %d.%d (host speaks %d.%d)\n", info.Major, info.Minor, abi.Major, abi.Minor)
	fmt.Fprintf(stdout, "features:  %s\n", strings.Join(features, ", "))
	fmt.Fprintf(stdout, "size:      %d bytes\n", info.Size)
	fmt.Fprintf(stdout, "sha256:    %s\n", info.SHA256)
	fmt.Fprintf(stdout, "load:      %s (compile + instantiate + checks)\n", time.Since(start).Round(time.Millisecond))
	fmt.Fprintf(stdout, "exports:   %s\n", strings.Join(info.Exports, " "))
	imports := append([]string(nil), info.Imports...)
	sort.Strings(imports)
	fmt.Fprintf(stdout, "imports:   %s\n", strings.Join(imports, " "))
	return 0
}

// testInput is the JSON form of an InterceptRequest for `plugin test`.
type testInput struct {
	Server    string            `json:"server"`
	Transport string            `json:"transport"`
	Tool      string            `json:"tool"`
	Original  string            `json:"original_tool"`
	Arguments json.RawMessage   `json:"arguments"`
	Headers   map[string]string `json:"headers"`
	UserID    string            `json:"user_id"`
	ThreadID  string            `json:"thread_id"`
	Secrets   map[string]string `json:"secrets"`
	Result    json.RawMessage   `json:"result"`
}

func pluginTest(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("plugin test", flag.ContinueOnError)
	fs.SetOutput(stderr)
	input := fs.String("input", "", "request JSON file: {server, tool, arguments, headers, user_id, thread_id, secrets, result}")
	cfgFile := fs.String("config", "", "the plugin's config JSON file")
	pos, err := parseInterspersed(fs, args)
	if err != nil || len(pos) != 1 || *input == "" {
		fmt.Fprint(stderr, pluginUsage)
		return 2
	}
	raw, err := os.ReadFile(*input)
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	var in testInput
	if err := json.Unmarshal(raw, &in); err != nil {
		fmt.Fprintln(stderr, "error: --input:", err)
		return 1
	}
	entry := plugins.Entry{Name: filepath.Base(pos[0]), Kind: plugins.KindWasm, Grants: plugins.Grants{Secrets: []string{"*"}}}
	if *cfgFile != "" {
		if entry.Config, err = os.ReadFile(*cfgFile); err != nil {
			fmt.Fprintln(stderr, "error:", err)
			return 1
		}
	}
	entry.Path, _ = filepath.Abs(pos[0])
	ctx := context.Background()
	host, err := plugins.NewHost("", nil)
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	defer host.Close(ctx)
	p, err := host.Load(ctx, entry)
	if err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	out := map[string]any{}
	if p.HasIntercept() {
		req := abi.InterceptRequest{Server: in.Server, Transport: in.Transport, Tool: in.Tool, OriginalTool: in.Original,
			Arguments: in.Arguments, UserID: in.UserID, ThreadID: in.ThreadID}
		for k, v := range in.Headers {
			req.Headers = append(req.Headers, abi.Header{Name: k, Value: v})
		}
		for k, v := range in.Secrets {
			req.SecretNames = append(req.SecretNames, k)
			req.Secrets = append(req.Secrets, abi.Header{Name: k, Value: v})
		}
		resp, err := p.Intercept(ctx, in.UserID, &req)
		if err != nil {
			fmt.Fprintln(stderr, "error:", err)
			return 1
		}
		action := "continue"
		if resp.Action == abi.ActionDeny {
			action = "deny"
		}
		set := map[string]string{}
		for _, h := range resp.SetHeaders {
			set[h.Name] = h.Value
		}
		out["intercept"] = map[string]any{"action": action, "message": resp.Message, "set_headers": set,
			"remove_headers": resp.RemoveHeaders, "arguments": json.RawMessage(orNull(resp.Arguments))}
	}
	if p.HasResultHook() && len(in.Result) > 0 {
		resp, err := p.OnResult(ctx, in.UserID, &abi.ResultRequest{Server: in.Server, Tool: in.Tool, OriginalTool: in.Original,
			UserID: in.UserID, ThreadID: in.ThreadID, Result: in.Result})
		if err != nil {
			fmt.Fprintln(stderr, "error:", err)
			return 1
		}
		out["result"] = json.RawMessage(orNull(resp.Result))
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	_ = enc.Encode(out)
	return 0
}

func orNull(b []byte) []byte {
	if b == nil || !json.Valid(b) {
		return []byte("null")
	}
	return b
}
