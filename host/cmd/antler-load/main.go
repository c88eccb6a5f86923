// Command antler-load drives one tool call from 1, 8, 32 … concurrent
// workers against an MCP endpoint, Antler's REST door or a stdio server
// called directly, and prints throughput, latency percentiles, errors and
// (with -pid) the CPU and memory of the process under test.
//
//	antler-load -mode mcp    -url http://127.0.0.1:8080/mcp -tool demo_echo [flags]
//	antler-load -mode rest   -url http://127.0.0.1:8080     -tool demo_echo [flags]
//	antler-load -mode direct -tool echo [flags] -- ./demo [server args]
//
// It is a separate binary rather than an antler subcommand so the load never
// runs inside, or ships with, the process it measures. The key for
// Authorization: Bearer comes from $ANTLER_LOAD_KEY, never a flag, so it
// stays out of process listings.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/antler-mcp/antler/internal/loadgen"
)

// envKey names the variable holding the API key sent as a Bearer token.
const envKey = "ANTLER_LOAD_KEY"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("antler-load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	mode := fs.String("mode", "mcp", "door: mcp (streamable HTTP), rest (Antler's /api/mcp/tools/{name}/call) or direct (stdio server given after --)")
	url := fs.String("url", "", "MCP endpoint (mcp) or Antler base URL (rest)")
	tool := fs.String("tool", "echo", "tool name as the door names it")
	toolArgs := fs.String("args", `{"message":"benchmark"}`, "tool arguments (JSON object)")
	levels := fs.String("c", "1,8,32", "comma-separated worker counts, one run each")
	dur := fs.Duration("d", 10*time.Second, "duration of each run (ignored with -n)")
	count := fs.Int("n", 0, "calls per run across all workers (0: use -d)")
	pv := fs.String("pv", loadgen.DefaultProtocolVersion, "MCP protocol version to announce")
	label := fs.String("label", "", "target name in the table (default: the mode)")
	header := http.Header{}
	fs.Func("H", `extra HTTP header for the mcp and rest modes, "Name: value" (repeatable), e.g. "X-Antler-Thread-Id: load"`, func(v string) error {
		name, value, ok := strings.Cut(v, ":")
		if name = strings.TrimSpace(name); !ok || name == "" {
			return fmt.Errorf("want \"Name: value\", got %q", v)
		}
		header.Add(name, strings.TrimSpace(value))
		return nil
	})
	pids := fs.String("pid", "", "comma-separated process ids to account CPU and peak RSS for, with their descendants")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ws, err := ints(*levels)
	if err != nil {
		fmt.Fprintln(stderr, "antler-load: -c:", err)
		return 2
	}
	watch, err := ints(*pids)
	if err != nil {
		fmt.Fprintln(stderr, "antler-load: -pid:", err)
		return 2
	}
	opts := loadgen.Options{
		Mode: loadgen.Mode(*mode), URL: strings.TrimSuffix(*url, "/"), Tool: *tool,
		Arguments: json.RawMessage(*toolArgs), Count: *count, Duration: *dur,
		ProtocolVersion: *pv, Watch: watch, Header: header,
	}
	if *mode == string(loadgen.MCP) {
		opts.URL = *url // an endpoint's trailing slash can matter
	}
	if key := getenv(envKey); key != "" {
		opts.Authorization = "Bearer " + key
	}
	if rest := fs.Args(); len(rest) > 0 {
		opts.Command, opts.Args = rest[0], rest[1:]
	}
	name := *label
	if name == "" {
		name = *mode
	}

	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "target\tc\tcalls\terrors\tcalls/s\tp50 ms\tp90 ms\tp99 ms\tmax ms\tcpu ms/1k\town ms/1k\tpeak RSS MiB\t")
	failed := false
	for _, w := range ws {
		opts.Workers = w
		res, err := loadgen.Run(ctx, opts)
		if err != nil {
			tw.Flush()
			fmt.Fprintln(stderr, "antler-load:", err)
			if errors.Is(err, loadgen.ErrOptions) {
				return 2
			}
			return 1
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", name, w, res.Calls, res.Errors, res.Throughput,
			ms(res.P50), ms(res.P90), ms(res.P99), ms(res.Max), cpu(res.CPU, res.CPUPer1000()), cpu(res.OwnCPU, res.OwnCPUPer1000()), rss(res))
		if res.Errors > 0 {
			failed = true
			fmt.Fprintf(stderr, "antler-load: c=%d: %d of %d calls failed; first: %v\n", w, res.Errors, res.Calls, res.FirstError)
		}
		if ctx.Err() != nil {
			break
		}
	}
	tw.Flush()
	if failed {
		return 1
	}
	return 0
}

// ints parses a comma-separated list of positive integers ("" is empty).
func ints(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func ms(d time.Duration) string { return strconv.FormatFloat(d.Seconds()*1000, 'f', 2, 64) }

// cpu is a CPU time per 1,000 calls, "-" when nothing was measured.
func cpu(total, per1000 time.Duration) string {
	if total == 0 {
		return "-"
	}
	return ms(per1000)
}

func rss(r loadgen.Result) string {
	if r.PeakRSS == 0 {
		return "-"
	}
	return strconv.FormatFloat(float64(r.PeakRSS)/(1<<20), 'f', 1, 64)
}
