package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/mark3labs/mcp-go/mcp"
)

// limited runs input through a lineLimiter with cap max, reading it in
// pieces of chunk bytes, and returns the output, the ids marked as too large,
// whether the connection was ended and the final error.
func limited(t *testing.T, input string, max int64, sse bool, chunk int) (out string, over []string, ended bool, err error) {
	t.Helper()
	rc := newResultCap(max, slog.New(slog.DiscardHandler), func() { ended = true })
	// Register the ids the inputs use, as calls in flight would be.
	calls := map[string]*capCall{}
	for _, id := range []any{int64(1), int64(2), int64(7), "a\"b", "x"} {
		c, berr := rc.begin(t.Context(), mcp.NewRequestId(id))
		if berr != nil {
			t.Fatal(berr)
		}
		calls[c.key] = c
	}
	var r io.Reader = strings.NewReader(input)
	if chunk > 0 {
		r = &chunked{r: r, n: chunk}
	}
	b, err := io.ReadAll(iotest.OneByteReader(newLineLimiter(r, rc, sse)))
	for key, c := range calls {
		if c.over.Load() {
			over = append(over, key)
		}
	}
	return string(b), over, ended, err
}

type chunked struct {
	r io.Reader
	n int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(p) > c.n {
		p = p[:c.n]
	}
	return c.r.Read(p)
}

func errLine(id string, max int) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32603,"message":"response larger than max_result_bytes (` + itoa(max) + ` bytes)"}}`
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestLineLimiter(t *testing.T) {
	big := strings.Repeat("y", 100)
	tests := []struct {
		name    string
		in      string
		max     int64
		sse     bool
		want    string
		over    []string
		ended   bool
		wantErr bool
	}{
		{name: "under the cap passes unchanged", max: 64,
			in:   `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n" + `{"jsonrpc":"2.0","method":"n"}` + "\n",
			want: `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n" + `{"jsonrpc":"2.0","method":"n"}` + "\n"},
		{name: "exactly the cap passes", max: int64(len(`{"id":1,"result":"ab"}`)),
			in: `{"id":1,"result":"ab"}` + "\n", want: `{"id":1,"result":"ab"}` + "\n"},
		{name: "id first, result over the cap", max: 20,
			in:   `{"jsonrpc":"2.0","id":7,"result":"` + big + `"}` + "\n" + `{"id":1,"result":0}` + "\n",
			want: `{"jsonrpc":"2.0","id` + "\n" + errLine("7", 20) + "\n" + `{"id":1,"result":0}` + "\n", over: []string{"int64:7"}},
		{name: "id last, as the TypeScript SDK writes it", max: 16,
			in:   `{"result":{"content":[{"type":"text","text":"` + big + `"}]},"jsonrpc":"2.0","id":2}` + "\n",
			want: `{"result":{"cont` + "\n" + errLine("2", 16) + "\n", over: []string{"int64:2"}},
		{name: "string id with an escape", max: 16,
			in:   `{"result":"` + big + `","id":"a\"b"}` + "\n",
			want: `{"result":"yyyyy` + "\n" + errLine(`"a\"b"`, 16) + "\n", over: []string{`string:a"b`}},
		{name: "nested id keys and braces in strings are not the message's", max: 16,
			in:   `{"result":{"id":9,"t":"} { \"id\": 8"},"id":1}` + "\n",
			want: `{"result":{"id":` + "\n" + errLine("1", 16) + "\n", over: []string{"int64:1"}},
		{name: "last line without a newline", max: 8,
			in: `{"id":1,"result":"` + big + `"}`, want: `{"id":1,` + "\n" + errLine("1", 8) + "\n", over: []string{"int64:1"}},
		{name: "oversize notification is dropped", max: 20,
			in:   `{"method":"notifications/message","params":{"data":"` + big + `"}}` + "\n" + `{"id":1,"result":0}` + "\n",
			want: `{"method":"notificat` + "\n" + `{"id":1,"result":0}` + "\n"},
		{name: "oversize line without an id ends the connection", max: 20,
			in: `{"result":"` + big + `"}` + "\n" + `{"id":1,"result":0}` + "\n", want: `{"result":"yyyyyyyyy` + "\n", ended: true, wantErr: true},
		{name: "oversize junk ends the connection", max: 16,
			in: big + "\n", want: big[:16] + "\n", ended: true, wantErr: true},
		{name: "null id ends the connection", max: 16,
			in: `{"id":null,"error":{"message":"` + big + `"}}` + "\n", want: `{"id":null,"erro` + "\n", ended: true, wantErr: true},
		{name: "an over-long id ends the connection", max: 16,
			in: `{"result":0,"id":"` + strings.Repeat("i", 300) + `"}` + "\n", want: `{"result":0,"id"` + "\n", ended: true, wantErr: true},
		{name: "sse data line over the cap becomes an error event", max: 40, sse: true,
			in:   "event: message\ndata: {\"result\":\"" + big + "\",\"id\":1}\n\nevent: message\ndata: {\"id\":2}\n\n",
			want: "event: message\ndata: {\"result\":\"yyyyyyyyy\n\nevent: message\ndata: " + errLine("1", 40) + "\n\nevent: message\ndata: {\"id\":2}\n\n", over: []string{"int64:1"}},
		{name: "sse event without data over the cap is dropped", max: 8, sse: true,
			in: ": " + big + "\n\ndata: {}\n\n", want: ": yyyyyy\n\ndata: {}\n\n"},
		{name: "sse data lines under the cap pass unchanged", max: 64, sse: true,
			in:   "event: message\ndata: {\"id\":1,\ndata: \"result\":0}\r\n\r\n: c\n\n",
			want: "event: message\ndata: {\"id\":1,\ndata: \"result\":0}\r\n\r\n: c\n\n"},
		{name: "sse event of many short data lines counts as one message", max: 40, sse: true,
			in:   "data: {\"id\":1,\"result\":\"\n" + strings.Repeat("data: yyyy\n", 50) + "data: \"}\n\ndata: {\"id\":2}\n\n",
			want: "data: {\"id\":1,\"result\":\"\ndata: yyyy\ndata: \n\nevent: message\ndata: " + errLine("1", 40) + "\n\ndata: {\"id\":2}\n\n", over: []string{"int64:1"}},
		{name: "sse id after many data lines is found across them", max: 40, sse: true,
			in:   "data: {\"result\":[\n" + strings.Repeat("data: 1,\n", 50) + "data: 2],\"id\":\"x\"}\r\n\r\n",
			want: "data: {\"result\":[\ndata: 1,\ndata: 1,\ndata: 1\n\nevent: message\ndata: " + errLine(`"x"`, 40) + "\n\n", over: []string{"string:x"}},
		{name: "sse endless junk data lines end the connection", max: 16, sse: true,
			in: strings.Repeat("data: "+big+"\n", 20), want: "data: yyyyyyyyyy\n", ended: true, wantErr: true},
	}
	for _, tt := range tests {
		for _, chunk := range []int{0, 1, 3} {
			t.Run(tt.name, func(t *testing.T) {
				out, over, ended, err := limited(t, tt.in, tt.max, tt.sse, chunk)
				if out != tt.want {
					t.Errorf("chunks of %d: output\n %q\nwant\n %q", chunk, out, tt.want)
				}
				if strings.Join(over, ",") != strings.Join(tt.over, ",") {
					t.Errorf("over = %q, want %q", over, tt.over)
				}
				if ended != tt.ended {
					t.Errorf("ended = %v, want %v", ended, tt.ended)
				}
				var tl *ResultTooLargeError
				if got := err != nil; got != tt.wantErr || (tt.wantErr && (!errors.As(err, &tl) || !tl.Ended || !IsConnectionClosed(err))) {
					t.Errorf("err = %v, want an ended cap error: %v", err, tt.wantErr)
				}
			})
		}
	}
}

// FuzzLineLimiter: whatever a server writes, no output line is longer than
// the cap (plus the replacement error), the limiter never buffers more than
// it was given, and a stream of lines under the cap passes unchanged.
func FuzzLineLimiter(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":7,"result":"abcdefghijklmnopqrstuvwxyz"}`+"\n"+`{"id":1}`+"\n"), uint8(16), false)
	f.Add([]byte(`{"result":{"a":[1,2,{"id":3}]},"id":"x"}`), uint8(10), false)
	f.Add([]byte("event: message\ndata: {\"id\":1,\"result\":\"zzzzzzzzzzzzzzzzzzzz\"}\n\n"), uint8(20), true)
	f.Add([]byte("{\"id\":\"\\\"\\\\\",\"r\":\"\\u0041\"}\n"), uint8(4), false)
	f.Add([]byte("data: {\"id\":1,\ndata: \"r\":\"zzzzzz\"}\r\n\r\n: x\ndata: 1\n\n"), uint8(12), true)
	f.Fuzz(func(t *testing.T, in []byte, size uint8, sse bool) {
		limit := int64(size%64) + 1
		rc := newResultCap(limit, slog.New(slog.DiscardHandler), nil)
		out, err := io.ReadAll(newLineLimiter(bytes.NewReader(in), rc, sse))
		if err != nil {
			var tl *ResultTooLargeError
			if !errors.As(err, &tl) {
				t.Fatalf("unexpected error %v", err)
			}
		}
		maxLine := int(limit) + len(errLine(strings.Repeat("9", maxIDBytes), int(limit))) + len("data: ")
		for line := range bytes.SplitSeq(out, []byte("\n")) {
			if len(line) > maxLine {
				t.Fatalf("an output line of %d bytes passed a cap of %d", len(line), limit)
			}
		}
		if int64(longestMessage(in, sse)) <= limit && !bytes.Equal(out, in) {
			t.Fatalf("messages under the cap changed:\n %q\n %q", in, out)
		}
	})
}

// longestMessage is the size of the largest message in a stream as the
// limiter counts it: a line, or in sse mode the lines of an event up to the
// blank line that ends it (line terminators not counted).
func longestMessage(in []byte, sse bool) int {
	lines := bytes.Split(in, []byte("\n"))
	longest, msg := 0, 0
	for i, line := range lines {
		if !sse {
			longest = max(longest, len(line))
			continue
		}
		if i < len(lines)-1 && (len(line) == 0 || string(line) == "\r") {
			msg = 0
			continue
		}
		msg += len(line)
		longest = max(longest, msg)
	}
	return longest
}
