package upstream

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/testmcp"
)

// TestSplicedMetaIsTheDecodedOne: params that get the protocol _meta
// spliced in read as those the decoding path writes, for every log level.
func TestSplicedMetaIsTheDecodedOne(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Dial(ctx, &config.Server{Name: "demo", Type: config.TransportStdio, Command: testmcp.Build(t)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !mcp.IsModernProtocol(c.protocol) {
		t.Skipf("the demo negotiated %s, which has no protocol _meta", c.protocol)
	}
	for _, level := range []string{"", "debug", "error"} {
		c.levelMu.Lock()
		c.level = level
		c.levelMu.Unlock()
		for _, ctx := range []context.Context{ctx, WithRelay(ctx, splicedRelay{})} {
			for _, params := range []string{``, `null`, ` null `, `{}`, ` { } `, `{"name":"echo","arguments":{"message":"hi"}}`,
				"{\n  \"uri\": \"file:///a\"\n}", `{"arguments":{"text":"_meta"}}`, `{"_meta":{"progressToken":1},"name":"x"}`,
				// A _meta spelled with escapes is the caller's _meta too: spliced
				// in front of it, the protocol _meta would be a duplicate key the
				// server reads past (the last wins).
				`{"\u005fmeta":{"progressToken":1},"name":"x"}`, `{"_m\u0065ta":{},"name":"x"}`} {
				spliced, ok := c.spliceProtocolMeta(ctx, json.RawMessage(params), false)
				if !ok {
					continue // the decoding path's own: nothing to compare
				}
				got, want := decode(t, spliced), decode(t, decodedMeta(ctx, t, c, json.RawMessage(params)))
				if !reflect.DeepEqual(got, want) {
					t.Errorf("level %q, relay %v, params %q:\n spliced %s\n decoded %s", level, relayFrom(ctx) != nil, params, spliced, decodedMeta(ctx, t, c, json.RawMessage(params)))
				}
			}
		}
	}
	for _, params := range []string{`[1]`, `"s"`, `{"a":`, `{"a":1} x`} {
		if _, ok := c.spliceProtocolMeta(ctx, json.RawMessage(params), false); ok {
			t.Errorf("params %q spliced: they are not one JSON object", params)
		}
	}
}

// decodedMeta is withProtocolMeta's decoding path.
func decodedMeta(ctx context.Context, t *testing.T, c *Conn, params json.RawMessage) json.RawMessage {
	t.Helper()
	fields := map[string]json.RawMessage{}
	if len(params) > 0 && string(params) != "null" && string(params) != " null " {
		if err := json.Unmarshal(params, &fields); err != nil {
			t.Fatal(err)
		}
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := fields["_meta"]; ok {
		if err := json.Unmarshal(raw, &meta); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.addProtocolMeta(ctx, func(k string, v json.RawMessage) {
		if _, ok := meta[k]; !ok {
			meta[k] = v
		}
	}); err != nil {
		t.Fatal(err)
	}
	fields["_meta"], _ = json.Marshal(meta)
	b, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decode(t *testing.T, b json.RawMessage) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return m
}

// splicedRelay is a Relay that is never asked anything: it only marks a
// request as made for a downstream client.
type splicedRelay struct{}

func (splicedRelay) Notify(string, json.RawMessage) {}
func (splicedRelay) Request(context.Context, string, json.RawMessage) (json.RawMessage, error) {
	return nil, &RPCError{Code: mcp.METHOD_NOT_FOUND, Message: "not relayed"}
}
