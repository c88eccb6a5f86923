package oauth_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/antler-mcp/antler/internal/eventually"
	"net/url"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/oauth"
)

func TestClientCredentialsForm(t *testing.T) {
	for _, tc := range []struct {
		name   string
		block  map[string]any
		want   map[string]string // exact form values
		absent []string          // keys that must not be sent
	}{
		{
			name: "every configured field is sent",
			block: map[string]any{
				"client_id": "cid", "client_secret": "csecret", "scope": "read write", "audience": "https://api.example",
				"extra_token_params": map[string]any{"resource": "https://res.example", "tenant": "t1"},
			},
			want: map[string]string{
				"grant_type": "client_credentials", "client_id": "cid", "client_secret": "csecret",
				"scope": "read write", "audience": "https://api.example", "resource": "https://res.example", "tenant": "t1",
			},
			absent: []string{"refresh_token"},
		},
		{
			name:   "scope and audience are left out when unset",
			block:  clientCreds(),
			want:   map[string]string{"grant_type": "client_credentials", "client_id": "cid", "client_secret": "csecret"},
			absent: []string{"scope", "audience", "refresh_token"},
		},
		{
			name: "an extra grant_type never overrides the grant",
			block: map[string]any{"client_id": "cid", "client_secret": "csecret",
				"extra_token_params": map[string]any{"grant_type": "password", "resource": "r"}},
			want: map[string]string{"grant_type": "client_credentials", "resource": "r"},
		},
		{
			name: "an extra grant_type never overrides the refresh grant either",
			block: map[string]any{"grant_type": "refresh_token", "refresh_token": "rt-1",
				"extra_token_params": map[string]any{"grant_type": "client_credentials"}},
			want: map[string]string{"grant_type": "refresh_token", "refresh_token": "rt-1"},
		},
		{
			name: "configured fields win over extras of the same name",
			block: map[string]any{"client_id": "cid", "client_secret": "csecret", "scope": "configured",
				"extra_token_params": map[string]any{"scope": "extra", "client_id": "other", "client_secret": "other"}},
			want: map[string]string{"scope": "configured", "client_id": "cid", "client_secret": "csecret"},
		},
		{
			name: "an extra scope is sent when scope is unset",
			block: map[string]any{"client_id": "cid", "client_secret": "csecret",
				"extra_token_params": map[string]any{"scope": "extra"}},
			want: map[string]string{"scope": "extra"},
		},
		{
			name:  "values are form-encoded, not mangled",
			block: map[string]any{"client_id": "id with space", "client_secret": "s&e=c+r/e%t"},
			want:  map[string]string{"client_id": "id with space", "client_secret": "s&e=c+r/e%t"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ep := newTokenEndpoint(t, numbered(nil))
			m := oauth.New(extWith(t, ep.srv.URL, tc.block), oauth.Options{})
			if got := mustHeader(t, m, "api"); got != "Bearer tok-1" {
				t.Errorf("Header = %q, want %q", got, "Bearer tok-1")
			}
			if n := ep.requests(); n != 1 {
				t.Fatalf("token requests = %d, want 1", n)
			}
			form := ep.form(t, 0)
			for k, v := range tc.want {
				if got := form[k]; len(got) != 1 || got[0] != v {
					t.Errorf("form[%q] = %q, want exactly [%q]", k, got, v)
				}
			}
			for _, k := range tc.absent {
				if _, ok := form[k]; ok {
					t.Errorf("form carries %q = %q, want it absent", k, form[k])
				}
			}
			h := ep.header(t, 0)
			if ct := h.Get("Content-Type"); ct != "application/x-www-form-urlencoded" {
				t.Errorf("Content-Type = %q", ct)
			}
			if acc := h.Get("Accept"); acc != "application/json" {
				t.Errorf("Accept = %q", acc)
			}
		})
	}
}

func TestHeaderRendering(t *testing.T) {
	for _, tc := range []struct {
		name  string
		block map[string]any
		body  map[string]any
		want  string
	}{
		{"token type from the response", nil, map[string]any{"access_token": "abc", "token_type": "DPoP"}, "DPoP abc"},
		{"token type kept as the endpoint spells it", nil, map[string]any{"access_token": "abc", "token_type": "bearer"}, "bearer abc"},
		{"default token type when absent", nil, map[string]any{"access_token": "abc"}, "Bearer abc"},
		{"default token type when empty", nil, map[string]any{"access_token": "abc", "token_type": ""}, "Bearer abc"},
		{"default token type when null", nil, map[string]any{"access_token": "abc", "token_type": nil}, "Bearer abc"},
		{"custom default token type", map[string]any{"default_token_type": "Token"}, map[string]any{"access_token": "abc"}, "Token abc"},
		{"custom default token type when empty", map[string]any{"default_token_type": "Token"}, map[string]any{"access_token": "abc", "token_type": ""}, "Token abc"},
		{
			"custom token and token type fields",
			map[string]any{"token_field": "jwt", "token_type_field": "kind"},
			map[string]any{"jwt": "j.w.t", "kind": "MAC", "access_token": "ignored", "token_type": "Ignored"},
			"MAC j.w.t",
		},
		{
			"custom token type field absent falls back to the default",
			map[string]any{"token_type_field": "kind"},
			map[string]any{"access_token": "abc", "token_type": "Ignored"},
			"Bearer abc",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ep := newTokenEndpoint(t, always(jsonReply(tc.body)))
			block := clientCreds()
			for k, v := range tc.block {
				block[k] = v
			}
			m := oauth.New(extWith(t, ep.srv.URL, block), oauth.Options{})
			if got := mustHeader(t, m, "api"); got != tc.want {
				t.Errorf("Header = %q, want %q", got, tc.want)
			}
			if got := m.Cached("api"); got != tc.want {
				t.Errorf("Cached = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRefreshTokenGrant(t *testing.T) {
	t.Run("sends the refresh token and client credentials when set", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			block  map[string]any
			want   map[string]string
			absent []string
		}{
			{
				name:  "with client credentials",
				block: map[string]any{"grant_type": "refresh_token", "refresh_token": "rt-0", "client_id": "cid", "client_secret": "csecret", "scope": "s"},
				want:  map[string]string{"grant_type": "refresh_token", "refresh_token": "rt-0", "client_id": "cid", "client_secret": "csecret", "scope": "s"},
			},
			{
				name:   "public client: no client credentials",
				block:  map[string]any{"grant_type": "refresh_token", "refresh_token": "rt-0"},
				want:   map[string]string{"grant_type": "refresh_token", "refresh_token": "rt-0"},
				absent: []string{"client_id", "client_secret"},
			},
			{
				name:   "client id only",
				block:  map[string]any{"grant_type": "refresh_token", "refresh_token": "rt-0", "client_id": "cid"},
				want:   map[string]string{"client_id": "cid"},
				absent: []string{"client_secret"},
			},
		} {
			t.Run(tc.name, func(t *testing.T) {
				ep := newTokenEndpoint(t, numbered(nil))
				m := oauth.New(extWith(t, ep.srv.URL, tc.block), oauth.Options{})
				mustHeader(t, m, "api")
				form := ep.form(t, 0)
				for k, v := range tc.want {
					if got := form[k]; len(got) != 1 || got[0] != v {
						t.Errorf("form[%q] = %q, want exactly [%q]", k, got, v)
					}
				}
				for _, k := range tc.absent {
					if _, ok := form[k]; ok {
						t.Errorf("form carries %q, want it absent", k)
					}
				}
			})
		}
	})

	t.Run("a rotated refresh token is used by the next request", func(t *testing.T) {
		// Request 1 rotates to rt-1, request 2 to rt-2, request 3 rotates to
		// nothing (no refresh_token, then an empty one): rt-2 stays in use.
		ep := newTokenEndpoint(t, func(n int, _ url.Values) reply {
			body := map[string]any{"access_token": "tok-" + itoa(n), "expires_in": 100}
			switch n {
			case 1, 2:
				body["refresh_token"] = "rt-" + itoa(n)
			case 4:
				body["refresh_token"] = ""
			}
			return jsonReply(body)
		})
		clk := newClock()
		ext := extWith(t, ep.srv.URL, map[string]any{"grant_type": "refresh_token", "refresh_token": "rt-0", "refresh_skew_seconds": 0})
		m := oauth.New(ext, oauth.Options{Now: clk.Now})
		want := []string{"rt-0", "rt-1", "rt-2", "rt-2", "rt-2"}
		for i, rt := range want {
			if got := mustHeader(t, m, "api"); got != "Bearer tok-"+itoa(i+1) {
				t.Fatalf("call %d: Header = %q", i+1, got)
			}
			if got := ep.form(t, i).Get("refresh_token"); got != rt {
				t.Errorf("request %d sent refresh_token %q, want %q", i+1, got, rt)
			}
			clk.Advance(100 * time.Second)
		}
		if s, _ := ext.Server("api"); s.OAuth.RefreshToken != "rt-0" {
			t.Errorf("the configuration's refresh_token became %q; rotation must stay in memory", s.OAuth.RefreshToken)
		}
	})

	t.Run("client_credentials ignores a refresh token in the response", func(t *testing.T) {
		ep := newTokenEndpoint(t, numbered(map[string]any{"refresh_token": "rt-x", "expires_in": 100}))
		clk := newClock()
		block := clientCreds()
		block["refresh_skew_seconds"] = 0
		m := oauth.New(extWith(t, ep.srv.URL, block), oauth.Options{Now: clk.Now})
		mustHeader(t, m, "api")
		clk.Advance(100 * time.Second)
		mustHeader(t, m, "api")
		for i := range 2 {
			form := ep.form(t, i)
			if form.Get("grant_type") != "client_credentials" || form.Has("refresh_token") {
				t.Errorf("request %d form = %v, want a plain client_credentials grant", i+1, form)
			}
		}
	})
}

func TestExpiry(t *testing.T) {
	absent := struct{}{} // marks an expires_in left out of the response
	for _, tc := range []struct {
		name      string
		skew      any // refresh_skew_seconds; nil = default (60)
		field     string
		expiresIn any
		cachedAt  time.Duration // still served from the cache at t0+cachedAt
		staleAt   time.Duration // refreshed at t0+staleAt
	}{
		{name: "default skew refreshes 60 s early", expiresIn: 3600, cachedAt: 3539 * time.Second, staleAt: 3540 * time.Second},
		{name: "zero skew refreshes at expiry", skew: 0, expiresIn: 3600, cachedAt: 3599 * time.Second, staleAt: 3600 * time.Second},
		{name: "custom skew", skew: 300, expiresIn: 3600, cachedAt: 3299 * time.Second, staleAt: 3300 * time.Second},
		{name: "negative skew is treated as zero", skew: -30, expiresIn: 3600, cachedAt: 3599 * time.Second, staleAt: 3600 * time.Second},
		{name: "skew longer than the lifetime refreshes every call", expiresIn: 30, staleAt: 0},
		{name: "missing expires_in means one hour", skew: 0, expiresIn: absent, cachedAt: 3599 * time.Second, staleAt: 3600 * time.Second},
		{name: "null expires_in means one hour", skew: 0, expiresIn: nil, cachedAt: 3599 * time.Second, staleAt: 3600 * time.Second},
		{name: "non-integer string expires_in means one hour", skew: 0, expiresIn: "soon", cachedAt: 3599 * time.Second, staleAt: 3600 * time.Second},
		{name: "decimal string expires_in means one hour", skew: 0, expiresIn: "3.5", cachedAt: 3599 * time.Second, staleAt: 3600 * time.Second},
		{name: "object expires_in means one hour", skew: 0, expiresIn: map[string]any{"s": 5}, cachedAt: 3599 * time.Second, staleAt: 3600 * time.Second},
		{name: "integer string expires_in", skew: 0, expiresIn: "120", cachedAt: 119 * time.Second, staleAt: 120 * time.Second},
		{name: "padded integer string expires_in", skew: 0, expiresIn: " 120 ", cachedAt: 119 * time.Second, staleAt: 120 * time.Second},
		// Python's int(90.7) truncates; DeerFlow parses JSON numbers as float.
		{name: "fractional number is truncated", skew: 0, expiresIn: 90.7, cachedAt: 89 * time.Second, staleAt: 90 * time.Second},
		{name: "expires_in 0 lives one second", skew: 0, expiresIn: 0, cachedAt: 999 * time.Millisecond, staleAt: time.Second},
		{name: "negative expires_in lives one second", skew: 0, expiresIn: -50, cachedAt: 999 * time.Millisecond, staleAt: time.Second},
		{name: "expires_in 0 with the default skew is always stale", expiresIn: 0, staleAt: 0},
		{name: "absurd numeric expires_in means one hour", skew: 0, expiresIn: 1e15, cachedAt: 3599 * time.Second, staleAt: 3600 * time.Second},
		// 1e10 s overflows time.Duration when converted naively (the token
		// would look expired at once and every call would hit the endpoint).
		{name: "absurd string expires_in means one hour", skew: 0, expiresIn: "10000000000", cachedAt: 3599 * time.Second, staleAt: 3600 * time.Second},
		{name: "absurder string expires_in means one hour", skew: 0, expiresIn: "100000000000", cachedAt: 3599 * time.Second, staleAt: 3600 * time.Second},
		{name: "absurd negative string expires_in means one hour", skew: 0, expiresIn: "-10000000000", cachedAt: 3599 * time.Second, staleAt: 3600 * time.Second},
		{name: "custom expires_in field", skew: 0, field: "ttl", expiresIn: 100, cachedAt: 99 * time.Second, staleAt: 100 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			field := "expires_in"
			block := clientCreds()
			if tc.field != "" {
				field = tc.field
				block["expires_in_field"] = tc.field
			}
			if tc.skew != nil {
				block["refresh_skew_seconds"] = tc.skew
			}
			ep := newTokenEndpoint(t, func(n int, _ url.Values) reply {
				body := map[string]any{"access_token": "tok-" + itoa(n)}
				if tc.expiresIn != absent {
					body[field] = tc.expiresIn
				}
				if field != "expires_in" {
					body["expires_in"] = 5 // must be ignored
				}
				return jsonReply(body)
			})
			clk := newClock()
			t0 := clk.Now()
			m := oauth.New(extWith(t, ep.srv.URL, block), oauth.Options{Now: clk.Now})
			if got := mustHeader(t, m, "api"); got != "Bearer tok-1" {
				t.Fatalf("first Header = %q", got)
			}
			if tc.staleAt > 0 {
				clk.Advance(tc.cachedAt)
				if got := m.Cached("api"); got != "Bearer tok-1" {
					t.Errorf("Cached at t0+%s = %q, want the first token", tc.cachedAt, got)
				}
				if got := mustHeader(t, m, "api"); got != "Bearer tok-1" {
					t.Errorf("Header at t0+%s = %q, want the cached token", tc.cachedAt, got)
				}
				if n := ep.requests(); n != 1 {
					t.Errorf("token requests at t0+%s = %d, want 1 (cached)", tc.cachedAt, n)
				}
			}
			clk.mu.Lock()
			clk.now = t0.Add(tc.staleAt)
			clk.mu.Unlock()
			if got := m.Cached("api"); got != "" {
				t.Errorf("Cached at t0+%s = %q, want \"\" (expiring)", tc.staleAt, got)
			}
			if got := mustHeader(t, m, "api"); got != "Bearer tok-2" {
				t.Errorf("Header at t0+%s = %q, want a fresh token", tc.staleAt, got)
			}
			if n := ep.requests(); n != 2 {
				t.Errorf("token requests at t0+%s = %d, want 2 (refreshed)", tc.staleAt, n)
			}
		})
	}
}

func TestCached(t *testing.T) {
	ep := newTokenEndpoint(t, numbered(map[string]any{"expires_in": 120}))
	clk := newClock()
	m := oauth.New(extWith(t, ep.srv.URL, clientCreds()), oauth.Options{Now: clk.Now})
	if got := m.Cached("api"); got != "" {
		t.Errorf("Cached before any fetch = %q, want \"\"", got)
	}
	if got := m.Cached("unknown"); got != "" {
		t.Errorf("Cached(unknown) = %q, want \"\"", got)
	}
	if n := ep.requests(); n != 0 {
		t.Fatalf("Cached made %d token requests, want 0", n)
	}
	mustHeader(t, m, "api")
	if got := m.Cached("api"); got != "Bearer tok-1" {
		t.Errorf("Cached after fetch = %q", got)
	}
	clk.Advance(60 * time.Second) // 120 s - default skew 60 s
	if got := m.Cached("api"); got != "" {
		t.Errorf("Cached after expiry = %q, want \"\"", got)
	}
	if n := ep.requests(); n != 1 {
		t.Errorf("Cached made a token request: %d requests, want 1", n)
	}
}

func TestHas(t *testing.T) {
	ep := newTokenEndpoint(t, numbered(nil))
	oauthBlock := func(enabled bool) map[string]any {
		return map[string]any{"enabled": enabled, "token_url": ep.srv.URL, "client_id": "cid", "client_secret": "csecret"}
	}
	ext := parse(t, map[string]any{"mcpServers": map[string]any{
		"on":           map[string]any{"type": "http", "url": "http://u.invalid", "oauth": oauthBlock(true)},
		"sse":          map[string]any{"type": "sse", "url": "http://u.invalid", "oauth": oauthBlock(true)},
		"oauth-off":    map[string]any{"type": "http", "url": "http://u.invalid", "oauth": oauthBlock(false)},
		"server-off":   map[string]any{"enabled": false, "type": "http", "url": "http://u.invalid", "oauth": oauthBlock(true)},
		"no-oauth":     map[string]any{"type": "http", "url": "http://u.invalid", "headers": map[string]any{"Authorization": "Bearer static"}},
		"null-oauth":   map[string]any{"type": "http", "url": "http://u.invalid", "oauth": nil},
		"stdio-server": map[string]any{"command": "true"},
	}}, nil)
	m := oauth.New(ext, oauth.Options{})
	for _, tc := range []struct {
		server string
		want   bool
	}{
		{"on", true},
		{"sse", true},
		{"oauth-off", false},
		{"server-off", false},
		{"no-oauth", false},
		{"null-oauth", false},
		{"stdio-server", false},
		{"unknown", false},
	} {
		t.Run(tc.server, func(t *testing.T) {
			if got := m.Has(tc.server); got != tc.want {
				t.Errorf("Has(%q) = %v, want %v", tc.server, got, tc.want)
			}
			before := ep.requests()
			h, err := header(t, m, tc.server)
			if err != nil {
				t.Fatalf("Header(%q): %v", tc.server, err)
			}
			if tc.want != (h != "") {
				t.Errorf("Header(%q) = %q, want a header only for OAuth servers", tc.server, h)
			}
			if !tc.want && ep.requests() != before {
				t.Errorf("Header(%q) contacted the token endpoint", tc.server)
			}
		})
	}
	if m := oauth.New(nil, oauth.Options{}); m.Has("on") {
		t.Error("a manager built from nil Extensions has a server")
	}
}

func TestServersHaveSeparateTokens(t *testing.T) {
	ep := newTokenEndpoint(t, func(n int, form url.Values) reply {
		return jsonReply(map[string]any{"access_token": form.Get("client_id") + "-" + itoa(n)})
	})
	block := func(id string) map[string]any {
		return map[string]any{"token_url": ep.srv.URL, "client_id": id, "client_secret": "s"}
	}
	ext := parse(t, map[string]any{"mcpServers": map[string]any{
		"a": map[string]any{"type": "http", "url": "http://u.invalid", "oauth": block("ida")},
		"b": map[string]any{"type": "http", "url": "http://u.invalid", "oauth": block("idb")},
	}}, nil)
	m := oauth.New(ext, oauth.Options{})
	if got := mustHeader(t, m, "a"); got != "Bearer ida-1" {
		t.Errorf("a: %q", got)
	}
	if got := mustHeader(t, m, "b"); got != "Bearer idb-2" {
		t.Errorf("b: %q", got)
	}
	if got := mustHeader(t, m, "a"); got != "Bearer ida-1" {
		t.Errorf("a again: %q (another server's fetch must not disturb its cache)", got)
	}
	if n := ep.requests(); n != 2 {
		t.Errorf("token requests = %d, want 2", n)
	}
}

func TestSingleFlight(t *testing.T) {
	const callers = 50
	for _, tc := range []struct {
		name  string
		prime bool // fetch a token first, then let it expire
	}{
		{"cold start", false},
		{"right after expiry", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ep := newTokenEndpoint(t, numbered(map[string]any{"expires_in": 100}))
			clk := newClock()
			block := clientCreds()
			block["refresh_skew_seconds"] = 0
			m := oauth.New(extWith(t, ep.srv.URL, block), oauth.Options{Now: clk.Now})
			want := "Bearer tok-1"
			if tc.prime {
				mustHeader(t, m, "api")
				clk.Advance(100 * time.Second)
				want = "Bearer tok-2"
			}
			before := ep.requests()
			ep.gate()

			var started, returned atomic.Int64
			got := make([]string, callers)
			errs := make([]error, callers)
			var wg sync.WaitGroup
			for i := range callers {
				wg.Go(func() {
					started.Add(1)
					got[i], errs[i] = header(t, m, "api")
					returned.Add(1)
				})
			}
			select {
			case <-ep.entered:
			case <-time.After(10 * time.Second):
				t.Fatal("no token request arrived")
			}
			// Every caller is parked in Header's wait for the one request
			// (its goroutine blocked in a select there), so none can still
			// be on its way to sending a request of its own.
			eventually.Check(t, "all callers waiting on the token request", func() (bool, string) {
				n := parkedIn("oauth.(*Manager).Header")
				return started.Load() == callers && n == callers, fmt.Sprintf("%d started, %d waiting", started.Load(), n)
			})
			if n := returned.Load(); n != 0 {
				t.Fatalf("%d callers returned while the token request was still in flight", n)
			}
			ep.open()
			wg.Wait()

			if n := ep.requests() - before; n != 1 {
				t.Errorf("%d concurrent callers caused %d token requests, want 1", callers, n)
			}
			for i := range callers {
				if errs[i] != nil || got[i] != want {
					t.Errorf("caller %d: Header = %q, %v; want %q", i, got[i], errs[i], want)
				}
			}
			if got := mustHeader(t, m, "api"); got != want || ep.requests()-before != 1 {
				t.Errorf("after the flight: Header = %q with %d requests, want the cached %q", got, ep.requests()-before, want)
			}
		})
	}
}

func TestCancelledCallerDoesNotCancelTheRequest(t *testing.T) {
	for _, tc := range []struct {
		name      string
		ctx       func() (context.Context, context.CancelFunc)
		cancelNow bool
		wantErr   error
	}{
		{"cancelled", func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }, true, context.Canceled},
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 100*time.Millisecond)
		}, false, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ep := newTokenEndpoint(t, numbered(nil))
			m := oauth.New(extWith(t, ep.srv.URL, clientCreds()), oauth.Options{})
			ep.gate()

			impatient, cancel := tc.ctx()
			defer cancel()
			impatientErr := make(chan error, 1)
			go func() {
				_, err := m.Header(impatient, "api")
				impatientErr <- err
			}()
			<-ep.entered

			patient := make(chan string, 1)
			go func() {
				h, err := header(t, m, "api")
				if err != nil {
					h = "error: " + err.Error()
				}
				patient <- h
			}()

			if tc.cancelNow {
				cancel()
			}
			select {
			case err := <-impatientErr:
				if !errors.Is(err, tc.wantErr) {
					t.Errorf("the impatient caller got %v, want %v", err, tc.wantErr)
				}
				var oe *oauth.Error
				if errors.As(err, &oe) {
					t.Errorf("a caller's own cancellation was reported as a token failure: %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the impatient caller did not return while the request was in flight")
			}

			ep.open()
			select {
			case h := <-patient:
				if h != "Bearer tok-1" {
					t.Errorf("the patient caller got %q, want %q", h, "Bearer tok-1")
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the patient caller never got a token")
			}
			if n := ep.aborted.Load(); n != 0 {
				t.Errorf("the token request was aborted by a cancelled caller")
			}
			if n := ep.requests(); n != 1 {
				t.Errorf("token requests = %d, want 1", n)
			}
			if got := m.Cached("api"); got != "Bearer tok-1" {
				t.Errorf("Cached = %q: the request finished for the others but its token was not kept", got)
			}
		})
	}

	t.Run("a cached token is served even to a cancelled caller", func(t *testing.T) {
		ep := newTokenEndpoint(t, numbered(nil))
		m := oauth.New(extWith(t, ep.srv.URL, clientCreds()), oauth.Options{})
		mustHeader(t, m, "api")
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if h, err := m.Header(ctx, "api"); err != nil || h != "Bearer tok-1" {
			t.Errorf("Header = %q, %v", h, err)
		}
	})
}

// Canary values: none may ever appear in an error message or a log line.
const (
	canaryToken   = "CANARY-ACCESS-TOKEN-7f3a"
	canarySecret  = "CANARY-CLIENT-SECRET-91bd"
	canaryRefresh = "CANARY-REFRESH-TOKEN-c402"
	canaryBody    = "CANARY-RESPONSE-BODY-5e1e"
	canaryURL     = "CANARY-URL-QUERY-0d77"
)

var canaries = []string{canaryToken, canarySecret, canaryRefresh, canaryBody, canaryURL}

func TestFailuresFailClosed(t *testing.T) {
	cc := map[string]any{"client_id": "cid", "client_secret": canarySecret, "refresh_token": canaryRefresh}
	rt := map[string]any{"grant_type": "refresh_token", "refresh_token": canaryRefresh, "client_id": "cid", "client_secret": canarySecret}
	okBody := jsonReply(map[string]any{"access_token": "good", "refresh_token": canaryRefresh})
	for _, tc := range []struct {
		name      string
		block     map[string]any
		reply     reply
		timeout   time.Duration
		slow      time.Duration
		want      string // the message after "...failed: "
		wantCalls int    // token requests the failing call makes
		retryOK   bool   // a later call succeeds once the endpoint is fixed
	}{
		{
			name:  "HTTP 500",
			block: cc, reply: reply{status: 500, body: `{"error":"` + canaryBody + `","access_token":"` + canaryToken + `"}`},
			want: "the token endpoint answered HTTP 500", wantCalls: 1, retryOK: true,
		},
		{
			name:  "HTTP 401 with an OAuth error body",
			block: rt, reply: reply{status: 401, body: `{"error":"invalid_client","error_description":"` + canaryBody + `"}`},
			want: "the token endpoint answered HTTP 401", wantCalls: 1, retryOK: true,
		},
		{
			name:  "body not JSON",
			block: cc, reply: reply{body: "<html>" + canaryBody + " " + canaryToken + "</html>"},
			want: "the token response is not a JSON object", wantCalls: 1, retryOK: true,
		},
		{
			name:  "JSON but not an object",
			block: cc, reply: reply{body: `["` + canaryToken + `"]`},
			want: "the token response is not a JSON object", wantCalls: 1, retryOK: true,
		},
		{
			name:  "missing token field",
			block: cc, reply: jsonReply(map[string]any{"token": canaryToken, "detail": canaryBody}),
			want: "OAuth token response missing 'access_token'", wantCalls: 1, retryOK: true,
		},
		{
			name:  "empty token",
			block: cc, reply: jsonReply(map[string]any{"access_token": "", "detail": canaryBody}),
			want: "OAuth token response missing 'access_token'", wantCalls: 1, retryOK: true,
		},
		{
			name:  "missing custom token field",
			block: map[string]any{"client_id": "cid", "client_secret": canarySecret, "token_field": "jwt"},
			reply: jsonReply(map[string]any{"access_token": canaryToken}),
			want:  "OAuth token response missing 'jwt'", wantCalls: 1,
		},
		{
			name:  "token with a newline",
			block: cc, reply: jsonReply(map[string]any{"access_token": canaryToken + "\nX-Injected: 1"}),
			want: "the access token cannot be sent as an HTTP header value: it contains a line break or another forbidden control character", wantCalls: 1, retryOK: true,
		},
		{
			name:  "token with a carriage return",
			block: rt, reply: jsonReply(map[string]any{"access_token": canaryToken + "\r"}),
			want: "the access token cannot be sent as an HTTP header value: it contains a line break or another forbidden control character", wantCalls: 1, retryOK: true,
		},
		{
			name:  "token outside ASCII",
			block: cc, reply: jsonReply(map[string]any{"access_token": canaryToken + "é"}),
			want: "the access token cannot be sent as an HTTP header value: it contains characters outside ASCII", wantCalls: 1, retryOK: true,
		},
		{
			name:  "token with trailing whitespace",
			block: cc, reply: jsonReply(map[string]any{"access_token": canaryToken + " "}),
			want: "the access token cannot be sent as an HTTP header value: it has leading or trailing whitespace", wantCalls: 1, retryOK: true,
		},
		{
			name:  "token type with a newline",
			block: cc, reply: jsonReply(map[string]any{"access_token": canaryToken, "token_type": "Bearer\n"}),
			want: "the access token cannot be sent as an HTTP header value: it contains a line break or another forbidden control character", wantCalls: 1, retryOK: true,
		},
		{
			name:  "client_credentials without client_secret",
			block: map[string]any{"client_id": "cid", "refresh_token": canaryRefresh},
			want:  "OAuth client_credentials requires client_id and client_secret",
		},
		{
			name:  "client_credentials without client_id",
			block: map[string]any{"client_secret": canarySecret},
			want:  "OAuth client_credentials requires client_id and client_secret",
		},
		{
			name:  "refresh_token grant without refresh_token",
			block: map[string]any{"grant_type": "refresh_token", "client_id": "cid", "client_secret": canarySecret},
			want:  "OAuth refresh_token grant requires refresh_token",
		},
		{
			name:  "slow endpoint",
			block: cc, reply: jsonReply(map[string]any{"access_token": canaryToken}),
			timeout: 200 * time.Millisecond, slow: 2 * time.Second,
			want: "the token endpoint did not answer within 200ms", wantCalls: 1, retryOK: true,
		},
		{
			name:    "endpoint that stalls after its status line",
			block:   cc,
			reply:   reply{body: `{"access_token":"` + canaryToken + `"}`, stall: 2 * time.Second},
			timeout: 200 * time.Millisecond,
			want:    "the token endpoint did not answer within 200ms", wantCalls: 1, retryOK: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ep := newTokenEndpoint(t, always(tc.reply))
			ep.slow(tc.slow)
			var logs logBuffer
			m := oauth.New(extWith(t, ep.srv.URL, tc.block), oauth.Options{Timeout: tc.timeout, Logger: logs.logger()})

			start := time.Now()
			h, err := header(t, m, "api")
			elapsed := time.Since(start)
			if h != "" {
				t.Errorf("Header = %q on failure, want \"\"", h)
			}
			var oe *oauth.Error
			if !errors.As(err, &oe) {
				t.Fatalf("err = %T %v, want *oauth.Error", err, err)
			}
			if oe.Server != "api" {
				t.Errorf("Error.Server = %q", oe.Server)
			}
			wantMsg := "OAuth token request for MCP server 'api' failed: " + tc.want
			if err.Error() != wantMsg {
				t.Errorf("message:\n got %q\nwant %q", err.Error(), wantMsg)
			}
			for _, c := range canaries {
				if strings.Contains(err.Error(), c) {
					t.Errorf("the message leaks %s: %q", c, err.Error())
				}
				if strings.Contains(logs.String(), c) {
					t.Errorf("the log leaks %s: %s", c, logs.String())
				}
			}
			if tc.timeout > 0 && elapsed > tc.timeout+time.Second {
				t.Errorf("the call took %s with Options.Timeout %s", elapsed, tc.timeout)
			}
			if n := ep.requests(); n != tc.wantCalls {
				t.Errorf("token requests = %d, want %d", n, tc.wantCalls)
			}
			if got := m.Cached("api"); got != "" {
				t.Errorf("Cached after a failure = %q, want \"\"", got)
			}

			// The failure is not cached: the next call asks again.
			ep.slow(0)
			ep.setAnswer(always(okBody))
			h, err = header(t, m, "api")
			if tc.retryOK {
				if err != nil || h != "Bearer good" {
					t.Errorf("retry after the endpoint recovered: Header = %q, %v", h, err)
				}
				if n := ep.requests(); n != tc.wantCalls+1 {
					t.Errorf("token requests after the retry = %d, want %d", n, tc.wantCalls+1)
				}
			} else if tc.wantCalls == 0 {
				if err == nil || err.Error() != wantMsg {
					t.Errorf("a configuration error must keep failing the same way, got %q, %v", h, err)
				}
				if n := ep.requests(); n != 0 {
					t.Errorf("a misconfigured grant reached the token endpoint %d times", n)
				}
			} else if n := ep.requests(); n != tc.wantCalls+1 {
				t.Errorf("token requests after the retry = %d, want %d (a failure must not be cached)", n, tc.wantCalls+1)
			}
		})
	}
}

func TestUnreachableEndpoint(t *testing.T) {
	ep := newTokenEndpoint(t, always(reply{}))
	tokenURL := ep.srv.URL + "/token?key=" + canaryURL
	ep.srv.Close()
	var logs logBuffer
	block := map[string]any{"client_id": "cid", "client_secret": canarySecret}
	m := oauth.New(extWith(t, tokenURL, block), oauth.Options{Logger: logs.logger()})
	_, err := header(t, m, "api")
	var oe *oauth.Error
	if !errors.As(err, &oe) {
		t.Fatalf("err = %v, want *oauth.Error", err)
	}
	if want := "OAuth token request for MCP server 'api' failed: the token endpoint could not be reached"; err.Error() != want {
		t.Errorf("message = %q, want %q", err.Error(), want)
	}
	for _, c := range canaries {
		if strings.Contains(err.Error()+logs.String(), c) {
			t.Errorf("%s leaked: %q / %s", c, err.Error(), logs.String())
		}
	}
}

func TestExpiredTokenIsNotServedWhenRefreshFails(t *testing.T) {
	ep := newTokenEndpoint(t, numbered(map[string]any{"expires_in": 100}))
	clk := newClock()
	m := oauth.New(extWith(t, ep.srv.URL, clientCreds()), oauth.Options{Now: clk.Now})
	mustHeader(t, m, "api")
	clk.Advance(100 * time.Second)
	ep.setAnswer(always(reply{status: 503}))
	h, err := header(t, m, "api")
	if err == nil || h != "" {
		t.Fatalf("Header = %q, %v; want a failure, not the expired token", h, err)
	}
	if got := m.Cached("api"); got != "" {
		t.Errorf("Cached = %q, want \"\"", got)
	}
}

func TestSuccessIsLoggedWithoutTheToken(t *testing.T) {
	ep := newTokenEndpoint(t, always(jsonReply(map[string]any{"access_token": canaryToken})))
	var logs logBuffer
	block := map[string]any{"client_id": "cid", "client_secret": canarySecret}
	m := oauth.New(extWith(t, ep.srv.URL, block), oauth.Options{Logger: logs.logger()})
	if got := mustHeader(t, m, "api"); got != "Bearer "+canaryToken {
		t.Fatalf("Header = %q", got)
	}
	out := logs.String()
	if !strings.Contains(out, "Refreshed OAuth access token for MCP server") || !strings.Contains(out, "server=api") {
		t.Errorf("no refresh log line naming the server: %s", out)
	}
	for _, c := range canaries {
		if strings.Contains(out, c) {
			t.Errorf("the log leaks %s: %s", c, out)
		}
	}
}

func TestConfigIsNotModified(t *testing.T) {
	ep := newTokenEndpoint(t, numbered(nil))
	ext := extWith(t, ep.srv.URL, map[string]any{"client_id": "cid", "client_secret": "cs",
		"extra_token_params": map[string]any{"grant_type": "password"}})
	s, _ := ext.Server("api")
	before := *s.OAuth
	before.ExtraTokenParams = append(config.Pairs(nil), s.OAuth.ExtraTokenParams...)
	m := oauth.New(ext, oauth.Options{})
	mustHeader(t, m, "api")
	if !reflect.DeepEqual(*s.OAuth, before) {
		t.Errorf("the oauth block changed:\nbefore %+v\nafter  %+v", before, *s.OAuth)
	}
}

// TestOnFetch: every token request's outcome reaches OnFetch (the metrics
// count them), and a failure's error holds none of the secrets.
func TestOnFetch(t *testing.T) {
	cc := map[string]any{"client_id": "cid", "client_secret": canarySecret}
	for _, tc := range []struct {
		name   string
		reply  reply
		failed bool
	}{
		{"token", jsonReply(map[string]any{"access_token": "good"}), false},
		{"HTTP 500", reply{status: 500, body: `{"error":"` + canaryBody + `"}`}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ep := newTokenEndpoint(t, always(tc.reply))
			var got []error
			var servers []string
			m := oauth.New(extWith(t, ep.srv.URL, cc), oauth.Options{OnFetch: func(server string, err error) {
				servers = append(servers, server)
				got = append(got, err)
			}})
			_, _ = header(t, m, "api")
			if len(got) != 1 || servers[0] != "api" || (got[0] != nil) != tc.failed {
				t.Fatalf("OnFetch saw %v for %v, want one %s", got, servers, map[bool]string{true: "failure", false: "success"}[tc.failed])
			}
			if got[0] != nil {
				for _, c := range canaries {
					if strings.Contains(got[0].Error(), c) {
						t.Errorf("the reported error leaks %s: %v", c, got[0])
					}
				}
			}
		})
	}
}

// parkedIn counts the goroutines blocked in a select inside fn (a function
// name as a stack trace spells it): the callers that have reached a wait.
func parkedIn(fn string) int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if header, _, _ := strings.Cut(g, "\n"); strings.Contains(header, "[select") && strings.Contains(g, fn+"(") {
			count++
		}
	}
	return count
}
