package interceptor_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/header"
	"github.com/antler-mcp/antler/internal/interceptor"
)

// trace records what each layer saw, in order.
type trace struct{ events []string }

func (tr *trace) add(format string, args ...any) {
	tr.events = append(tr.events, fmt.Sprintf(format, args...))
}

// layer is an interceptor that logs its entry and exit and optionally writes
// one header on the way in.
func layer(tr *trace, name string, set *header.Override) interceptor.Interceptor {
	return interceptor.Func(func(ctx context.Context, req *interceptor.Request, next interceptor.Handler) (json.RawMessage, error) {
		tr.add("%s>", name)
		if set != nil {
			req.SetHeaders(*set)
		}
		raw, err := next(ctx, req)
		tr.add("<%s", name)
		return raw, err
	})
}

// denier refuses every call.
func denier(tr *trace, name, msg string) interceptor.Interceptor {
	return interceptor.Func(func(context.Context, *interceptor.Request, interceptor.Handler) (json.RawMessage, error) {
		tr.add("%s!", name)
		return nil, interceptor.Deny(msg)
	})
}

// base records the headers the transport would send.
func base(tr *trace, seen *map[string]string) interceptor.Handler {
	return func(_ context.Context, req *interceptor.Request) (json.RawMessage, error) {
		tr.add("base")
		*seen = maps.Clone(req.Headers)
		return json.RawMessage(`{"content":[]}`), nil
	}
}

func set(name, value string) *header.Override { return &header.Override{Name: name, Value: value} }

func TestChain(t *testing.T) {
	server := &config.Server{Name: "api", Headers: config.Pairs{{Key: "authorization", Value: "Bearer static"}, {Key: "X-Trace", Value: "t"}}}
	for _, tc := range []struct {
		name        string
		build       func(tr *trace) []interceptor.Interceptor
		wantEvents  []string
		wantHeaders map[string]string // nil: base not reached
		wantDenied  string
	}{
		{
			name:        "no interceptors: the base handler alone",
			build:       func(*trace) []interceptor.Interceptor { return nil },
			wantEvents:  []string{"base"},
			wantHeaders: map[string]string{"authorization": "Bearer static", "X-Trace": "t"},
		},
		{
			name: "the first interceptor is outermost",
			build: func(tr *trace) []interceptor.Interceptor {
				return []interceptor.Interceptor{layer(tr, "a", nil), layer(tr, "b", nil), layer(tr, "c", nil)}
			},
			wantEvents:  []string{"a>", "b>", "c>", "base", "<c", "<b", "<a"},
			wantHeaders: map[string]string{"authorization": "Bearer static", "X-Trace": "t"},
		},
		{
			name: "a later interceptor's header write wins",
			build: func(tr *trace) []interceptor.Interceptor {
				return []interceptor.Interceptor{
					layer(tr, "oauth", set("Authorization", "Bearer oauth")),
					layer(tr, "user", set("AUTHORIZATION", "Bearer user")),
					layer(tr, "ctx", set("X-Tenant", "acme")),
				}
			},
			wantEvents:  []string{"oauth>", "user>", "ctx>", "base", "<ctx", "<user", "<oauth"},
			wantHeaders: map[string]string{"authorization": "Bearer user", "X-Trace": "t", "X-Tenant": "acme"},
		},
		{
			name: "a denial stops the chain before the base handler",
			build: func(tr *trace) []interceptor.Interceptor {
				return []interceptor.Interceptor{layer(tr, "a", nil), denier(tr, "b", "no credential for you"), layer(tr, "c", nil)}
			},
			wantEvents: []string{"a>", "b!", "<a"},
			wantDenied: "no credential for you",
		},
		{
			name: "the first layer can deny",
			build: func(tr *trace) []interceptor.Interceptor {
				return []interceptor.Interceptor{denier(tr, "a", "denied"), layer(tr, "b", nil)}
			},
			wantEvents: []string{"a!"},
			wantDenied: "denied",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &trace{}
			var seen map[string]string
			h := interceptor.Chain(base(tr, &seen), tc.build(tr)...)
			static := server.Headers.Map()
			req := &interceptor.Request{Server: server, Tool: "t", Headers: static}
			raw, err := h(context.Background(), req)
			if !slices.Equal(tr.events, tc.wantEvents) {
				t.Errorf("events = %v, want %v", tr.events, tc.wantEvents)
			}
			if tc.wantDenied != "" {
				d, ok := interceptor.IsDenied(err)
				if !ok {
					t.Fatalf("err = %v, want a denial", err)
				}
				if d.Message != tc.wantDenied || err.Error() != tc.wantDenied {
					t.Errorf("denial = %q / %q, want %q", d.Message, err.Error(), tc.wantDenied)
				}
				if raw != nil || seen != nil {
					t.Errorf("a denied call reached the transport (result %s, headers %v)", raw, seen)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(raw) != `{"content":[]}` {
				t.Errorf("result = %s, want the base handler's", raw)
			}
			if !reflect.DeepEqual(seen, tc.wantHeaders) {
				t.Errorf("headers at the transport = %v, want %v", seen, tc.wantHeaders)
			}
			if want := server.Headers.Map(); !reflect.DeepEqual(static, want) {
				t.Errorf("the caller's header map was modified: %v", static)
			}
		})
	}
}

func TestChainIsReusable(t *testing.T) {
	// One composed handler serves many calls; no call's writes leak into the next.
	tr := &trace{}
	var seen map[string]string
	onlyFirst := interceptor.Func(func(ctx context.Context, req *interceptor.Request, next interceptor.Handler) (json.RawMessage, error) {
		if req.UserID == "alice" {
			req.SetHeaders(header.Override{Name: "X-User", Value: "alice"})
		}
		return next(ctx, req)
	})
	h := interceptor.Chain(base(tr, &seen), onlyFirst)
	if _, err := h(context.Background(), &interceptor.Request{UserID: "alice"}); err != nil {
		t.Fatal(err)
	}
	if seen["X-User"] != "alice" {
		t.Fatalf("first call headers = %v", seen)
	}
	if _, err := h(context.Background(), &interceptor.Request{UserID: "bob"}); err != nil {
		t.Fatal(err)
	}
	if len(seen) != 0 {
		t.Errorf("second call headers = %v, want none", seen)
	}
}

func TestContextAndErrorsPassThrough(t *testing.T) {
	type key struct{}
	boom := errors.New("transport failed")
	var gotValue any
	h := interceptor.Chain(
		func(ctx context.Context, _ *interceptor.Request) (json.RawMessage, error) {
			gotValue = ctx.Value(key{})
			return nil, boom
		},
		interceptor.Func(func(ctx context.Context, req *interceptor.Request, next interceptor.Handler) (json.RawMessage, error) {
			return next(context.WithValue(ctx, key{}, "from-layer"), req)
		}),
	)
	_, err := h(context.Background(), &interceptor.Request{})
	if !errors.Is(err, boom) {
		t.Errorf("err = %v, want the transport's error", err)
	}
	if _, ok := interceptor.IsDenied(err); ok {
		t.Error("a transport failure was reported as a denial")
	}
	if gotValue != "from-layer" {
		t.Errorf("the base handler saw ctx value %v, want the layer's", gotValue)
	}
}

func TestIsDenied(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string // "" = not a denial
	}{
		{"nil", nil, ""},
		{"plain error", errors.New("x"), ""},
		{"denial", interceptor.Deny("nope"), "nope"},
		{"wrapped denial", fmt.Errorf("calling tool: %w", interceptor.Deny("nope")), "nope"},
		{"struct denial", &interceptor.Denied{Message: "m"}, "m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, ok := interceptor.IsDenied(tc.err)
			if ok != (tc.want != "") {
				t.Fatalf("IsDenied(%v) ok = %v", tc.err, ok)
			}
			if ok && d.Message != tc.want {
				t.Errorf("Message = %q, want %q", d.Message, tc.want)
			}
		})
	}
}

func TestSetHeaders(t *testing.T) {
	for _, tc := range []struct {
		name   string
		static config.Pairs      // the server's static headers
		start  map[string]string // req.Headers before the write
		writes []header.Override
		want   map[string]string
	}{
		{
			name:   "lands on the static header's spelling",
			static: config.Pairs{{Key: "authorization", Value: "Bearer static"}},
			start:  map[string]string{"authorization": "Bearer static"},
			writes: []header.Override{{Name: "Authorization", Value: "Bearer new"}},
			want:   map[string]string{"authorization": "Bearer new"},
		},
		{
			name:   "static spelling even when the request does not carry it (stdio)",
			static: config.Pairs{{Key: "X-Api-Key", Value: "k"}},
			start:  map[string]string{},
			writes: []header.Override{{Name: "x-api-key", Value: "v"}},
			want:   map[string]string{"X-Api-Key": "v"},
		},
		{
			name:   "static spelling beats an earlier layer's spelling, leaving one header",
			static: config.Pairs{{Key: "authorization", Value: "Bearer static"}},
			start:  map[string]string{"Authorization": "Bearer oauth"},
			writes: []header.Override{{Name: "AUTHORIZATION", Value: "Bearer user"}},
			want:   map[string]string{"authorization": "Bearer user"},
		},
		{
			name:   "without a static spelling the request's own spelling is kept",
			start:  map[string]string{"Authorization": "Bearer oauth"},
			writes: []header.Override{{Name: "authorization", Value: "Bearer user"}},
			want:   map[string]string{"Authorization": "Bearer user"},
		},
		{
			name:   "a new header keeps the written spelling; others are untouched",
			static: config.Pairs{{Key: "X-Trace", Value: "t"}},
			start:  map[string]string{"X-Trace": "t"},
			writes: []header.Override{{Name: "X-Tenant", Value: "acme"}, {Name: "x-tenant", Value: "acme2"}},
			want:   map[string]string{"X-Trace": "t", "X-Tenant": "acme2"},
		},
		{
			name:   "nil headers and several writes in order",
			writes: []header.Override{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}, {Name: "a", Value: "3"}},
			want:   map[string]string{"A": "3", "B": "2"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := &interceptor.Request{Server: &config.Server{Name: "api", Headers: tc.static}, Headers: tc.start}
			before := maps.Clone(tc.start)
			req.SetHeaders(tc.writes...)
			if !reflect.DeepEqual(req.Headers, tc.want) {
				t.Errorf("headers = %v, want %v", req.Headers, tc.want)
			}
			if !maps.Equal(tc.start, before) {
				t.Errorf("the previous header map was modified in place: %v", tc.start)
			}
			if n := countSpellings(req.Headers, "authorization"); n > 1 {
				t.Errorf("Authorization under %d spellings: %v", n, req.Headers)
			}
		})
	}

	t.Run("no server", func(t *testing.T) {
		req := &interceptor.Request{}
		req.SetHeaders(header.Override{Name: "X-A", Value: "1"})
		if !reflect.DeepEqual(req.Headers, map[string]string{"X-A": "1"}) {
			t.Errorf("headers = %v", req.Headers)
		}
	})
}

func countSpellings(h map[string]string, name string) int {
	n := 0
	for k := range h {
		if strings.EqualFold(k, name) {
			n++
		}
	}
	return n
}
