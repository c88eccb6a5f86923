package credential_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/credential"
	"github.com/antler-mcp/antler/internal/header"
	"github.com/antler-mcp/antler/internal/interceptor"
	"github.com/antler-mcp/antler/internal/oauth"
)

// DeerFlow's messages for a missing or refused credential, spelled out once.
func noCredentialMsg(user, server string) string {
	return "No credential is configured for your account (user id '" + user + "') on MCP server '" + server +
		"'. Ask the operator to add this exact id to that server's user_auth.users map (or set its environment variable)."
}

func illegalCredentialMsg(user, server, reason string) string {
	return "The credential configured for your account (user id '" + user + "') on MCP server '" + server + "' " + reason +
		", so it cannot be sent as an HTTP header. Ask the operator to fix that server's user_auth.users entry; a stray newline in the value or its environment variable is the usual cause."
}

func missingSecretsMsg(server, keys string) string {
	return "MCP server '" + server + "' needs request-scoped credential(s) " + keys +
		". Send them in config.context.secrets, or set this server's headers_from_context.on_missing to 'passthrough'."
}

func illegalSecretsMsg(server, parts string) string {
	return "MCP server '" + server + "' cannot send request-scoped credential(s) as HTTP header values: " + parts +
		". Fix the value passed in config.context.secrets; a stray newline picked up when reading a token from a file is the usual cause."
}

func TestMessagesVerbatim(t *testing.T) {
	t.Parallel()
	// One literal copy of each message, so the helpers above cannot drift.
	for _, tc := range []struct{ got, want string }{
		{noCredentialMsg("bob", "api"), "No credential is configured for your account (user id 'bob') on MCP server 'api'. Ask the operator to add this exact id to that server's user_auth.users map (or set its environment variable)."},
		{illegalCredentialMsg("bob", "api", header.ReasonControl), "The credential configured for your account (user id 'bob') on MCP server 'api' contains a line break or another forbidden control character, so it cannot be sent as an HTTP header. Ask the operator to fix that server's user_auth.users entry; a stray newline in the value or its environment variable is the usual cause."},
		{missingSecretsMsg("api", "alpha, zeta"), "MCP server 'api' needs request-scoped credential(s) alpha, zeta. Send them in config.context.secrets, or set this server's headers_from_context.on_missing to 'passthrough'."},
		{illegalSecretsMsg("api", "'tok' "+header.ReasonControl), "MCP server 'api' cannot send request-scoped credential(s) as HTTP header values: 'tok' contains a line break or another forbidden control character. Fix the value passed in config.context.secrets; a stray newline picked up when reading a token from a file is the usual cause."},
	} {
		if tc.got != tc.want {
			t.Errorf("got  %q\nwant %q", tc.got, tc.want)
		}
	}
}

// TestLayerPrecedence: static < OAuth < user_auth < headers_from_context, all
// writing Authorization; the static header is spelled "authorization".
func TestLayerPrecedence(t *testing.T) {
	t.Parallel()
	ep := newTokenEndpoint(t, "oauth-token")
	build := func(oauthOn bool) *config.Extensions {
		return parse(t, map[string]any{"api": httpServer(map[string]any{
			"headers":              map[string]any{"authorization": "Bearer static", "X-Trace": "t"},
			"oauth":                ep.oauthBlock(oauthOn),
			"user_auth":            map[string]any{"users": map[string]any{"alice": "Bearer alice-cred"}, "on_missing": "passthrough"},
			"headers_from_context": map[string]any{"headers": map[string]any{"Authorization": "api_token"}, "on_missing": "passthrough"},
		})}, nil)
	}
	for _, tc := range []struct {
		name    string
		oauthOn bool
		user    string
		secrets map[string]string
		want    string
	}{
		{"every layer present: the per-request value wins", true, "alice", map[string]string{"api_token": "Bearer request"}, "Bearer request"},
		{"no per-request secret: the user's credential wins", true, "alice", nil, "Bearer alice-cred"},
		{"an empty per-request secret counts as absent", true, "alice", map[string]string{"api_token": ""}, "Bearer alice-cred"},
		{"user unmapped: the OAuth token wins", true, "bob", nil, "Bearer oauth-token"},
		{"OAuth disabled, user unmapped: the static value stays", false, "bob", nil, "Bearer static"},
		{"OAuth disabled, user mapped", false, "alice", nil, "Bearer alice-cred"},
		{"OAuth disabled, per-request value", false, "bob", map[string]string{"api_token": "Bearer request"}, "Bearer request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ext := build(tc.oauthOn)
			c := invoke(t, ext, oauth.New(ext, oauth.Options{}), nil, "api", tc.user, tc.secrets)
			checkHeaders(t, c, map[string]string{"authorization": tc.want, "X-Trace": "t"})
			checkNoLeak(t, c)
		})
	}
}

func TestChainComposition(t *testing.T) {
	t.Parallel()
	ep := newTokenEndpoint(t, "oauth-token")
	userAuth := map[string]any{"users": map[string]any{"alice": "Bearer a"}}
	ctxHeaders := map[string]any{"headers": map[string]any{"X-Key": "k"}}
	noop := interceptor.Func(func(ctx context.Context, req *interceptor.Request, next interceptor.Handler) (json.RawMessage, error) {
		return next(ctx, req)
	})
	for _, tc := range []struct {
		name    string
		servers map[string]any
		noToken bool // pass a nil token manager
		custom  int
		want    int
	}{
		{"nothing configured", map[string]any{"a": httpServer(nil)}, false, 0, 0},
		{"nothing configured, custom only", map[string]any{"a": httpServer(nil)}, false, 2, 2},
		{"OAuth", map[string]any{"a": httpServer(map[string]any{"oauth": ep.oauthBlock(true)})}, false, 0, 1},
		{"OAuth on two servers is one layer", map[string]any{
			"a": httpServer(map[string]any{"oauth": ep.oauthBlock(true)}),
			"b": httpServer(map[string]any{"oauth": ep.oauthBlock(true)}),
		}, false, 0, 1},
		{"OAuth without a token manager", map[string]any{"a": httpServer(map[string]any{"oauth": ep.oauthBlock(true)})}, true, 0, 0},
		{"OAuth disabled", map[string]any{"a": httpServer(map[string]any{"oauth": ep.oauthBlock(false)})}, false, 0, 0},
		{"user_auth", map[string]any{"a": httpServer(map[string]any{"user_auth": userAuth})}, false, 0, 1},
		{"user_auth disabled", map[string]any{"a": httpServer(map[string]any{"user_auth": map[string]any{"enabled": false, "users": map[string]any{"alice": "x"}}})}, false, 0, 0},
		{"user_auth on stdio only", map[string]any{"a": stdioServer(map[string]any{"user_auth": userAuth})}, false, 0, 0},
		{"headers_from_context", map[string]any{"a": httpServer(map[string]any{"headers_from_context": ctxHeaders})}, false, 0, 1},
		{"headers_from_context disabled", map[string]any{"a": httpServer(map[string]any{"headers_from_context": map[string]any{"enabled": false, "headers": map[string]any{"X-Key": "k"}}})}, false, 0, 0},
		{"headers_from_context with no mapping", map[string]any{"a": httpServer(map[string]any{"headers_from_context": map[string]any{}})}, false, 0, 0},
		{"headers_from_context on stdio only", map[string]any{"a": stdioServer(map[string]any{"headers_from_context": ctxHeaders})}, false, 0, 0},
		{"everything on a disabled server", map[string]any{"a": httpServer(map[string]any{
			"enabled": false, "oauth": ep.oauthBlock(true), "user_auth": userAuth, "headers_from_context": ctxHeaders,
		})}, false, 0, 0},
		{"everything", map[string]any{"a": httpServer(map[string]any{
			"oauth": ep.oauthBlock(true), "user_auth": userAuth, "headers_from_context": ctxHeaders,
		})}, false, 0, 3},
		{"everything plus custom", map[string]any{"a": httpServer(map[string]any{
			"oauth": ep.oauthBlock(true), "user_auth": userAuth, "headers_from_context": ctxHeaders,
		})}, false, 2, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ext := parse(t, tc.servers, nil)
			var tokens *oauth.Manager
			if !tc.noToken {
				tokens = oauth.New(ext, oauth.Options{})
			}
			custom := make([]interceptor.Interceptor, tc.custom)
			for i := range custom {
				custom[i] = noop
			}
			if got := len(credential.Chain(ext, tokens, custom, nil)); got != tc.want {
				t.Errorf("Chain has %d layers, want %d", got, tc.want)
			}
			// Requests other than tools/call get the built-in layers only.
			layers := credential.Layers(ext, tokens, nil)
			if got := len(layers); got != tc.want-tc.custom {
				t.Errorf("Layers has %d layers, want %d (no custom ones)", got, tc.want-tc.custom)
			}
		})
	}
	if n := ep.hits.Load(); n != 0 {
		t.Errorf("building chains made %d token requests, want 0", n)
	}
}

// Custom (plugin) interceptors run after user_auth and before
// headers_from_context: they see the user's header and per-request values
// override theirs.
func TestCustomInterceptorPosition(t *testing.T) {
	t.Parallel()
	ep := newTokenEndpoint(t, "oauth-token")
	ext := parse(t, map[string]any{"api": httpServer(map[string]any{
		"oauth":                ep.oauthBlock(true),
		"user_auth":            map[string]any{"users": map[string]any{"alice": "Bearer alice-cred"}},
		"headers_from_context": map[string]any{"headers": map[string]any{"Authorization": "api_token"}, "on_missing": "passthrough"},
	})}, nil)
	var sawAuth string
	custom := interceptor.Func(func(ctx context.Context, req *interceptor.Request, next interceptor.Handler) (json.RawMessage, error) {
		sawAuth = req.Headers["Authorization"]
		req.SetHeaders(header.Override{Name: "authorization", Value: "Bearer custom"})
		return next(ctx, req)
	})
	tokens := oauth.New(ext, oauth.Options{})

	c := invoke(t, ext, tokens, []interceptor.Interceptor{custom}, "api", "alice", nil)
	checkHeaders(t, c, map[string]string{"Authorization": "Bearer custom"})
	if sawAuth != "Bearer alice-cred" {
		t.Errorf("the custom interceptor saw Authorization %q, want the user's credential", sawAuth)
	}

	c = invoke(t, ext, tokens, []interceptor.Interceptor{custom}, "api", "alice", map[string]string{"api_token": "Bearer request"})
	checkHeaders(t, c, map[string]string{"Authorization": "Bearer request"})
}

func TestOAuthLayer(t *testing.T) {
	t.Parallel()
	t.Run("injects the token and keeps other headers", func(t *testing.T) {
		ep := newTokenEndpoint(t, "oauth-token")
		ext := parse(t, map[string]any{
			"api":   httpServer(map[string]any{"oauth": ep.oauthBlock(true), "headers": map[string]any{"X-Trace": "t"}}),
			"plain": httpServer(map[string]any{"headers": map[string]any{"Authorization": "Bearer plain"}}),
		}, nil)
		tokens := oauth.New(ext, oauth.Options{})
		for range 3 {
			checkHeaders(t, invoke(t, ext, tokens, nil, "api", "", nil), map[string]string{"Authorization": "Bearer oauth-token", "X-Trace": "t"})
		}
		if n := ep.hits.Load(); n != 1 {
			t.Errorf("3 calls made %d token requests, want 1 (cached)", n)
		}
		checkHeaders(t, invoke(t, ext, tokens, nil, "plain", "", nil), map[string]string{"Authorization": "Bearer plain"})
		if n := ep.hits.Load(); n != 1 {
			t.Errorf("a server without OAuth fetched a token")
		}
	})

	t.Run("a token failure denies the call without secrets", func(t *testing.T) {
		ep := newTokenEndpoint(t, canaryOther, func(e *tokenEndpoint) { e.status = http.StatusInternalServerError })
		ext := parse(t, map[string]any{"api": httpServer(map[string]any{
			"oauth": ep.oauthBlock(true), "headers": map[string]any{"Authorization": "Bearer static"},
		})}, nil)
		c := invoke(t, ext, oauth.New(ext, oauth.Options{}), nil, "api", "alice", nil)
		checkDenied(t, c, "OAuth token request for MCP server 'api' failed: the token endpoint answered HTTP 500")
		checkNoLeak(t, c)
	})

	t.Run("a caller's cancellation is not a denial", func(t *testing.T) {
		ep := newTokenEndpoint(t, "oauth-token", func(e *tokenEndpoint) { e.delay = time.Second })
		ext := parse(t, map[string]any{"api": httpServer(map[string]any{"oauth": ep.oauthBlock(true)})}, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		c := invokeCtx(ctx, t, ext, oauth.New(ext, oauth.Options{}), nil, "api", "", nil)
		if !errors.Is(c.err, context.DeadlineExceeded) {
			t.Errorf("err = %v, want the caller's deadline", c.err)
		}
		if _, ok := interceptor.IsDenied(c.err); ok {
			t.Error("the caller's own deadline was reported as a denial")
		}
		if c.reached {
			t.Error("the call reached the transport without a token")
		}
	})
}

func TestUserAuth(t *testing.T) {
	t.Parallel()
	vars := map[string]string{
		"ALICE_TOKEN":   "Bearer from-env",
		"NEWLINE_TOKEN": "Bearer " + canaryUserCred + "\n",
		"EMPTY_TOKEN":   "",
	}
	static := map[string]any{"Authorization": "Bearer static", "X-Trace": "t"}
	for _, tc := range []struct {
		name     string
		server   map[string]any // nil: an http server with static headers and userAuth
		userAuth map[string]any
		user     string
		want     map[string]string // headers at the transport
		denied   string
	}{
		{
			name:     "mapped user gets its own credential",
			userAuth: map[string]any{"users": map[string]any{"alice": "Bearer alice-cred", "bob": "Bearer bob-cred"}},
			user:     "alice",
			want:     map[string]string{"Authorization": "Bearer alice-cred", "X-Trace": "t"},
		},
		{
			name:     "another mapped user gets theirs",
			userAuth: map[string]any{"users": map[string]any{"alice": "Bearer alice-cred", "bob": "Bearer bob-cred"}},
			user:     "bob",
			want:     map[string]string{"Authorization": "Bearer bob-cred", "X-Trace": "t"},
		},
		{
			name:     "custom header; other headers preserved",
			userAuth: map[string]any{"header": "X-User-Token", "users": map[string]any{"alice": "tok-a"}},
			user:     "alice",
			want:     map[string]string{"Authorization": "Bearer static", "X-Trace": "t", "X-User-Token": "tok-a"},
		},
		{
			name:     "the header lands on the static spelling",
			server:   httpServer(map[string]any{"headers": map[string]any{"x-user-token": "discovery"}}),
			userAuth: map[string]any{"header": "X-User-Token", "users": map[string]any{"alice": "tok-a"}},
			user:     "alice",
			want:     map[string]string{"x-user-token": "tok-a"},
		},
		{
			name:     "$VAR credential",
			userAuth: map[string]any{"users": map[string]any{"alice": "$ALICE_TOKEN"}},
			user:     "alice",
			want:     map[string]string{"Authorization": "Bearer from-env", "X-Trace": "t"},
		},
		{
			name:     "unmapped user denied",
			userAuth: map[string]any{"users": map[string]any{"alice": "Bearer " + canaryUserCred}},
			user:     "bob",
			denied:   noCredentialMsg("bob", "api"),
		},
		{
			name:     "user ids match exactly",
			userAuth: map[string]any{"users": map[string]any{"alice": "Bearer " + canaryUserCred}},
			user:     "Alice",
			denied:   noCredentialMsg("Alice", "api"),
		},
		{
			name:     "no user means the default user, denied like any other",
			userAuth: map[string]any{"users": map[string]any{"alice": "Bearer " + canaryUserCred}},
			user:     "",
			denied:   noCredentialMsg("default", "api"),
		},
		{
			name:     "the default user can be mapped",
			userAuth: map[string]any{"users": map[string]any{"default": "Bearer shared"}},
			user:     "",
			want:     map[string]string{"Authorization": "Bearer shared", "X-Trace": "t"},
		},
		{
			name:     "a mapped default is not a fallback for other users",
			userAuth: map[string]any{"users": map[string]any{"default": "Bearer " + canaryUserCred}},
			user:     "bob",
			denied:   noCredentialMsg("bob", "api"),
		},
		{
			name:     "unset $VAR is an empty credential: denied",
			userAuth: map[string]any{"users": map[string]any{"alice": "$NOT_SET"}},
			user:     "alice",
			denied:   noCredentialMsg("alice", "api"),
		},
		{
			name:     "empty $VAR: denied",
			userAuth: map[string]any{"users": map[string]any{"alice": "$EMPTY_TOKEN"}},
			user:     "alice",
			denied:   noCredentialMsg("alice", "api"),
		},
		{
			name:     "empty literal credential: denied",
			userAuth: map[string]any{"users": map[string]any{"alice": ""}},
			user:     "alice",
			denied:   noCredentialMsg("alice", "api"),
		},
		{
			name:     "unmapped user with passthrough keeps the static header",
			userAuth: map[string]any{"users": map[string]any{"alice": "Bearer " + canaryUserCred}, "on_missing": "passthrough"},
			user:     "bob",
			want:     map[string]string{"Authorization": "Bearer static", "X-Trace": "t"},
		},
		{
			name:     "unset $VAR with passthrough keeps the static header",
			userAuth: map[string]any{"users": map[string]any{"alice": "$NOT_SET"}, "on_missing": "passthrough"},
			user:     "alice",
			want:     map[string]string{"Authorization": "Bearer static", "X-Trace": "t"},
		},
		{
			name:     "credential with a newline from $VAR: denied",
			userAuth: map[string]any{"users": map[string]any{"alice": "$NEWLINE_TOKEN"}},
			user:     "alice",
			denied:   illegalCredentialMsg("alice", "api", header.ReasonControl),
		},
		{
			name:     "credential with a newline: denied even with passthrough",
			userAuth: map[string]any{"users": map[string]any{"alice": "Bearer " + canaryUserCred + "\nX-Evil: 1"}, "on_missing": "passthrough"},
			user:     "alice",
			denied:   illegalCredentialMsg("alice", "api", header.ReasonControl),
		},
		{
			name:     "credential outside ASCII: denied even with passthrough",
			userAuth: map[string]any{"users": map[string]any{"alice": "Bearer " + canaryUserCred + "é"}, "on_missing": "passthrough"},
			user:     "alice",
			denied:   illegalCredentialMsg("alice", "api", header.ReasonNonASCII),
		},
		{
			name:     "credential with trailing whitespace: denied",
			userAuth: map[string]any{"users": map[string]any{"alice": "Bearer " + canaryUserCred + " "}},
			user:     "alice",
			denied:   illegalCredentialMsg("alice", "api", header.ReasonWhitespace),
		},
		{
			name:     "disabled user_auth does nothing",
			userAuth: map[string]any{"enabled": false, "users": map[string]any{"alice": "Bearer " + canaryUserCred}},
			user:     "bob",
			want:     map[string]string{"Authorization": "Bearer static", "X-Trace": "t"},
		},
		{
			name:     "stdio servers are not affected",
			server:   stdioServer(map[string]any{"headers": static}),
			userAuth: map[string]any{"users": map[string]any{"alice": "Bearer " + canaryUserCred}},
			user:     "alice",
			want:     map[string]string{},
		},
		{
			name:     "stdio servers never deny",
			server:   stdioServer(nil),
			userAuth: map[string]any{"users": map[string]any{}},
			user:     "bob",
			want:     map[string]string{},
		},
		{
			name:     "sse servers are affected",
			server:   map[string]any{"type": "sse", "url": "http://upstream.invalid/sse"},
			userAuth: map[string]any{"users": map[string]any{"alice": "Bearer alice-cred"}},
			user:     "alice",
			want:     map[string]string{"Authorization": "Bearer alice-cred"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := tc.server
			if srv == nil {
				srv = httpServer(map[string]any{"headers": static})
			}
			srv["user_auth"] = tc.userAuth
			ext := parse(t, map[string]any{
				"api":   srv,
				"other": httpServer(map[string]any{"headers": map[string]any{"Authorization": "Bearer other"}}),
			}, vars)
			c := invoke(t, ext, nil, nil, "api", tc.user, nil)
			checkNoLeak(t, c)
			if tc.denied != "" {
				checkDenied(t, c, tc.denied)
				if !strings.Contains(c.logs, "api") {
					t.Errorf("the denial was not logged with the server name: %q", c.logs)
				}
			} else {
				checkHeaders(t, c, tc.want)
			}
			// A server without user_auth is never touched, whoever calls.
			checkHeaders(t, invoke(t, ext, nil, nil, "other", tc.user, nil), map[string]string{"Authorization": "Bearer other"})
		})
	}
}

func TestContextHeaders(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		server  map[string]any // nil: an http server with static X-Trace
		block   map[string]any
		secrets map[string]string
		want    map[string]string
		denied  string
	}{
		{
			name:    "present secrets are injected; static headers kept",
			block:   map[string]any{"headers": map[string]any{"X-Api-Key": "api_key", "X-Tenant": "tenant"}},
			secrets: map[string]string{"api_key": canaryRequest, "tenant": "acme"},
			want:    map[string]string{"X-Trace": "t", "X-Api-Key": canaryRequest, "X-Tenant": "acme"},
		},
		{
			name:    "unmapped secrets are not sent",
			block:   map[string]any{"headers": map[string]any{"X-Api-Key": "api_key"}},
			secrets: map[string]string{"api_key": "k", "other": canaryOther},
			want:    map[string]string{"X-Trace": "t", "X-Api-Key": "k"},
		},
		{
			name:    "one secret may feed two headers",
			block:   map[string]any{"headers": map[string]any{"X-A": "tok", "X-B": "tok"}},
			secrets: map[string]string{"tok": "v"},
			want:    map[string]string{"X-Trace": "t", "X-A": "v", "X-B": "v"},
		},
		{
			name:    "overrides a static header on its spelling",
			server:  httpServer(map[string]any{"headers": map[string]any{"x-api-key": "static"}}),
			block:   map[string]any{"headers": map[string]any{"X-API-KEY": "api_key"}},
			secrets: map[string]string{"api_key": canaryRequest},
			want:    map[string]string{"x-api-key": canaryRequest},
		},
		{
			name:    "missing secrets with deny name the sorted keys only",
			block:   map[string]any{"headers": map[string]any{"X-Z": "zeta", "X-A": "alpha"}},
			secrets: map[string]string{"unrelated": canaryOther},
			denied:  missingSecretsMsg("api", "alpha, zeta"),
		},
		{
			name:    "no secrets at all (no run context) counts as all missing",
			block:   map[string]any{"headers": map[string]any{"X-Key": "k"}},
			secrets: nil,
			denied:  missingSecretsMsg("api", "k"),
		},
		{
			name:    "an empty secret counts as missing",
			block:   map[string]any{"headers": map[string]any{"X-Key": "k"}},
			secrets: map[string]string{"k": ""},
			denied:  missingSecretsMsg("api", "k"),
		},
		{
			name:    "some present, some missing: deny names the missing only",
			block:   map[string]any{"headers": map[string]any{"X-A": "present", "X-B": "absent"}},
			secrets: map[string]string{"present": canaryRequest},
			denied:  missingSecretsMsg("api", "absent"),
		},
		{
			name:    "a key feeding two headers is named once",
			block:   map[string]any{"headers": map[string]any{"X-A": "tok", "X-B": "tok", "X-C": "alpha"}},
			secrets: map[string]string{},
			denied:  missingSecretsMsg("api", "alpha, tok"),
		},
		{
			name:    "an illegal value is denied, naming the key only",
			block:   map[string]any{"headers": map[string]any{"Authorization": "tok"}},
			secrets: map[string]string{"tok": "Bearer " + canaryRequest + "\n"},
			denied:  illegalSecretsMsg("api", "'tok' "+header.ReasonControl),
		},
		{
			name:    "an illegal value is denied even with passthrough",
			block:   map[string]any{"headers": map[string]any{"Authorization": "tok"}, "on_missing": "passthrough"},
			secrets: map[string]string{"tok": "Bearer " + canaryRequest + "\r\nX-Evil: 1"},
			denied:  illegalSecretsMsg("api", "'tok' "+header.ReasonControl),
		},
		{
			name:    "illegal beats missing",
			block:   map[string]any{"headers": map[string]any{"X-A": "bad", "X-B": "absent"}},
			secrets: map[string]string{"bad": canaryRequest + "é"},
			denied:  illegalSecretsMsg("api", "'bad' "+header.ReasonNonASCII),
		},
		{
			name:    "several illegal values, sorted by key",
			block:   map[string]any{"headers": map[string]any{"X-A": "zz", "X-B": "aa", "X-C": "ok"}},
			secrets: map[string]string{"zz": canaryRequest + "\n", "aa": " " + canaryOther, "ok": "fine"},
			denied:  illegalSecretsMsg("api", "'aa' "+header.ReasonWhitespace+"; 'zz' "+header.ReasonControl),
		},
		{
			name:    "passthrough injects the present ones; static stays for the rest",
			server:  httpServer(map[string]any{"headers": map[string]any{"X-Tenant": "static-tenant"}}),
			block:   map[string]any{"headers": map[string]any{"X-Api-Key": "api_key", "X-Tenant": "tenant"}, "on_missing": "passthrough"},
			secrets: map[string]string{"api_key": canaryRequest},
			want:    map[string]string{"X-Tenant": "static-tenant", "X-Api-Key": canaryRequest},
		},
		{
			name:    "passthrough with nothing present leaves the static headers",
			server:  httpServer(map[string]any{"headers": map[string]any{"Authorization": "Bearer static"}}),
			block:   map[string]any{"headers": map[string]any{"Authorization": "tok"}, "on_missing": "passthrough"},
			secrets: nil,
			want:    map[string]string{"Authorization": "Bearer static"},
		},
		{
			name:    "disabled block does nothing",
			block:   map[string]any{"enabled": false, "headers": map[string]any{"X-Key": "k"}},
			secrets: map[string]string{"k": canaryRequest},
			want:    map[string]string{"X-Trace": "t"},
		},
		{
			name:    "stdio servers are not affected",
			server:  stdioServer(nil),
			block:   map[string]any{"headers": map[string]any{"X-Key": "k"}},
			secrets: map[string]string{"k": canaryRequest},
			want:    map[string]string{},
		},
		{
			name:    "stdio servers never deny",
			server:  stdioServer(nil),
			block:   map[string]any{"headers": map[string]any{"X-Key": "k"}},
			secrets: nil,
			want:    map[string]string{},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := tc.server
			if srv == nil {
				srv = httpServer(map[string]any{"headers": map[string]any{"X-Trace": "t"}})
			}
			srv["headers_from_context"] = tc.block
			ext := parse(t, map[string]any{
				"api":   srv,
				"other": httpServer(map[string]any{"headers": map[string]any{"X-Key": "other"}}),
			}, nil)
			c := invoke(t, ext, nil, nil, "api", "alice", tc.secrets)
			checkNoLeak(t, c)
			if tc.denied != "" {
				checkDenied(t, c, tc.denied)
			} else {
				checkHeaders(t, c, tc.want)
			}
			checkHeaders(t, invoke(t, ext, nil, nil, "other", "alice", tc.secrets), map[string]string{"X-Key": "other"})
		})
	}
}

// The chain never changes the caller's maps: not the request's initial
// headers, not the secrets, not the server's configured headers.
func TestInputsAreNotMutated(t *testing.T) {
	t.Parallel()
	ep := newTokenEndpoint(t, "oauth-token")
	ext := parse(t, map[string]any{"api": httpServer(map[string]any{
		"headers":              map[string]any{"authorization": "Bearer static"},
		"oauth":                ep.oauthBlock(true),
		"user_auth":            map[string]any{"users": map[string]any{"alice": "Bearer alice-cred"}},
		"headers_from_context": map[string]any{"headers": map[string]any{"X-Key": "k"}},
	})}, nil)
	s, _ := ext.Server("api")
	initial := s.Headers.Map()
	secrets := map[string]string{"k": "v"}
	rec := &recorder{}
	req := &interceptor.Request{Server: s, UserID: "alice", Headers: initial, Secrets: secrets}
	chain := credential.Chain(ext, oauth.New(ext, oauth.Options{}), nil, nil)
	if _, err := interceptor.Chain(rec.handle, chain...)(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if len(initial) != 1 || initial["authorization"] != "Bearer static" {
		t.Errorf("the initial header map was modified: %v", initial)
	}
	if len(secrets) != 1 || secrets["k"] != "v" {
		t.Errorf("the secrets were modified: %v", secrets)
	}
	if v, _ := s.Headers.Get("authorization"); len(s.Headers) != 1 || v != "Bearer static" {
		t.Errorf("the server's configured headers were modified: %v", s.Headers)
	}
	if rec.headers["authorization"] != "Bearer alice-cred" || rec.headers["X-Key"] != "v" {
		t.Errorf("headers at the transport = %v", rec.headers)
	}
}

func BenchmarkChain(b *testing.B) {
	ep := newTokenEndpoint(b, "oauth-token")
	ext := parse(b, map[string]any{"api": httpServer(map[string]any{
		"headers":              map[string]any{"authorization": "Bearer static", "X-Trace": "t"},
		"oauth":                ep.oauthBlock(true),
		"user_auth":            map[string]any{"users": map[string]any{"alice": "Bearer alice-cred", "bob": "Bearer bob-cred"}},
		"headers_from_context": map[string]any{"headers": map[string]any{"X-Api-Key": "api_key", "X-Tenant": "tenant"}},
	})}, nil)
	s, _ := ext.Server("api")
	tokens := oauth.New(ext, oauth.Options{})
	if _, err := tokens.Header(context.Background(), "api"); err != nil {
		b.Fatal(err)
	}
	chain := credential.Chain(ext, tokens, nil, nil)
	if len(chain) != 3 {
		b.Fatalf("chain has %d layers, want 3", len(chain))
	}
	result := json.RawMessage(`{"content":[]}`)
	var final map[string]string
	baseHandler := func(_ context.Context, req *interceptor.Request) (json.RawMessage, error) {
		final = req.Headers
		return result, nil
	}
	secrets := map[string]string{"api_key": "k-123", "tenant": "acme"}
	ctx := context.Background()

	b.ReportAllocs()
	for b.Loop() {
		// As the gateway's Invoke does: a fresh request from the static
		// headers, the chain composed around the transport, one call.
		req := &interceptor.Request{Server: s, Tool: "echo", ExposedName: "api_echo", Headers: s.Headers.Map(), UserID: "alice", Secrets: secrets}
		if _, err := interceptor.Chain(baseHandler, chain...)(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if final["authorization"] != "Bearer alice-cred" || final["X-Api-Key"] != "k-123" || final["X-Trace"] != "t" {
		b.Fatalf("final headers = %v", final)
	}
	if n := ep.hits.Load(); n != 1 {
		b.Fatalf("the benchmark made %d token requests, want 1 (the primed one)", n)
	}
}
