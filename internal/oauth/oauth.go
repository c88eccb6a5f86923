// Package oauth obtains and refreshes upstream access tokens from a token
// endpoint (client_credentials or refresh_token grant), one cached token per
// server, with one request in flight per server however many calls wait.
//
// golang.org/x/oauth2 is not used: DeerFlow's configuration names the
// response fields (token_field, token_type_field, expires_in_field) and lets
// extra parameters ride along, which x/oauth2's token parsing and its
// client-credentials config do not express.
package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/antler-mcp/antler/internal/config"
	"github.com/antler-mcp/antler/internal/egress"
	"github.com/antler-mcp/antler/internal/header"
)

// RequestTimeout bounds one token request (DeerFlow's 15 s).
const RequestTimeout = 15 * time.Second

// DefaultExpiresIn is assumed when the response has no expiry.
const DefaultExpiresIn = 3600

// maxResponseBytes bounds a token endpoint's answer.
const maxResponseBytes = 1 << 20

// Error is a failed token request. Its message names the server and the
// cause, never a token, a secret or the endpoint's response body.
type Error struct {
	Server string
	Reason string
}

func (e *Error) Error() string {
	return fmt.Sprintf("OAuth token request for MCP server '%s' failed: %s", e.Server, e.Reason)
}

// Manager holds one token source per OAuth-enabled server.
type Manager struct {
	client  *http.Client
	now     func() time.Time
	log     *slog.Logger
	timeout time.Duration

	servers map[string]*source
	onFetch func(server string, err error)
}

// Options tune a Manager; zero values are fine.
type Options struct {
	Client *http.Client
	Now    func() time.Time
	Logger *slog.Logger
	// Timeout bounds one token request; zero means RequestTimeout (15 s).
	Timeout time.Duration
	// OnFetch, when set, is told each token request's outcome (err nil on
	// success; the error never holds the secret).
	OnFetch func(server string, err error)
}

// New builds a manager for every server of ext with an enabled oauth block.
func New(ext *config.Extensions, opts Options) *Manager {
	m := &Manager{client: opts.Client, now: opts.Now, log: opts.Logger, timeout: opts.Timeout, onFetch: opts.OnFetch, servers: map[string]*source{}}
	if m.timeout <= 0 {
		m.timeout = RequestTimeout
	}
	if m.client == nil {
		m.client = egress.Client(nil)
	} else {
		// A token endpoint's redirect would resend the client secret
		// elsewhere (307, 308): never followed, whoever built the client.
		c := *m.client
		c.CheckRedirect = egress.NoRedirects
		m.client = &c
	}
	if m.now == nil {
		m.now = time.Now
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	for _, s := range ext.Enabled() {
		if s.OAuth != nil && s.OAuth.Enabled {
			m.servers[s.Name] = &source{server: s.Name, cfg: s.OAuth, refreshToken: s.OAuth.RefreshToken}
		}
	}
	return m
}

// Has reports whether server uses OAuth.
func (m *Manager) Has(server string) bool {
	_, ok := m.servers[server]
	return ok
}

// source is one server's token state.
type source struct {
	server string
	cfg    *config.OAuth

	mu           sync.Mutex
	header       string // rendered "<type> <token>"
	expiresAt    time.Time
	refreshToken string // rotated in memory, never written back
	inflight     *fetch
}

type fetch struct {
	done   chan struct{}
	header string
	err    error
}

// Header returns the Authorization value for server ("" when it has no
// OAuth), fetching a token when none is cached or the cached one expires
// within the skew. Concurrent callers share one request; a caller whose ctx
// ends stops waiting, but the request goes on for the others.
func (m *Manager) Header(ctx context.Context, server string) (string, error) {
	src, ok := m.servers[server]
	if !ok {
		return "", nil
	}
	src.mu.Lock()
	if src.header != "" && !m.expiring(src) {
		h := src.header
		src.mu.Unlock()
		return h, nil
	}
	f := src.inflight
	if f == nil {
		f = &fetch{done: make(chan struct{})}
		src.inflight = f
		go m.run(src, f)
	}
	src.mu.Unlock()
	select {
	case <-f.done:
		return f.header, f.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// Cached returns the cached header without fetching ("" if none or expired).
func (m *Manager) Cached(server string) string {
	src, ok := m.servers[server]
	if !ok {
		return ""
	}
	src.mu.Lock()
	defer src.mu.Unlock()
	if m.expiring(src) {
		return ""
	}
	return src.header
}

func (m *Manager) expiring(src *source) bool {
	skew := time.Duration(max(src.cfg.RefreshSkewSeconds, 0)) * time.Second
	return !src.expiresAt.After(m.now().Add(skew))
}

// run performs one token request on its own deadline and publishes it.
func (m *Manager) run(src *source, f *fetch) {
	ctx, cancel := context.WithTimeout(context.Background(), m.timeout)
	defer cancel()
	src.mu.Lock()
	refresh := src.refreshToken
	src.mu.Unlock()

	tok, err := m.request(ctx, src, refresh)
	if m.onFetch != nil {
		m.onFetch(src.server, err)
	}

	src.mu.Lock()
	defer src.mu.Unlock()
	src.inflight = nil
	if err != nil {
		f.err = err
		m.log.Warn("OAuth token request failed", "server", src.server, "error", err.Error())
		close(f.done)
		return
	}
	src.header = tok.header
	src.expiresAt = tok.expiresAt
	if tok.refreshToken != "" {
		src.refreshToken = tok.refreshToken
	}
	f.header = tok.header
	m.log.Info("Refreshed OAuth access token for MCP server", "server", src.server)
	close(f.done)
}

type token struct {
	header       string
	expiresAt    time.Time
	refreshToken string
}

func (m *Manager) request(ctx context.Context, src *source, refresh string) (token, error) {
	cfg := src.cfg
	fail := func(format string, args ...any) (token, error) {
		return token{}, &Error{Server: src.server, Reason: fmt.Sprintf(format, args...)}
	}
	form := url.Values{}
	for _, p := range cfg.ExtraTokenParams {
		form.Set(p.Key, p.Value)
	}
	form.Set("grant_type", cfg.GrantType) // after extras: they can never override it
	if cfg.Scope != "" {
		form.Set("scope", cfg.Scope)
	}
	if cfg.Audience != "" {
		form.Set("audience", cfg.Audience)
	}
	switch cfg.GrantType {
	case config.GrantClientCredentials:
		if cfg.ClientID == "" || cfg.ClientSecret == "" {
			return fail("OAuth client_credentials requires client_id and client_secret")
		}
		form.Set("client_id", cfg.ClientID)
		form.Set("client_secret", cfg.ClientSecret)
	case config.GrantRefreshToken:
		if refresh == "" {
			return fail("OAuth refresh_token grant requires refresh_token")
		}
		form.Set("refresh_token", refresh)
		if cfg.ClientID != "" {
			form.Set("client_id", cfg.ClientID)
		}
		if cfg.ClientSecret != "" {
			form.Set("client_secret", cfg.ClientSecret)
		}
	default:
		return fail("Unsupported OAuth grant type")
	}

	req, err := http.NewRequestWithContext(ctx, http.MethodPost, cfg.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return fail("invalid token_url")
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := m.client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fail("the token endpoint did not answer within %s", m.timeout)
		}
		return fail("the token endpoint could not be reached")
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fail("the token endpoint did not answer within %s", m.timeout)
		}
		return fail("reading the token response failed")
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fail("the token endpoint answered HTTP %d", resp.StatusCode)
	}
	var payload map[string]any
	if err := json.Unmarshal(body, &payload); err != nil {
		return fail("the token response is not a JSON object")
	}
	access, _ := payload[cfg.TokenField].(string)
	if access == "" {
		return fail("OAuth token response missing '%s'", cfg.TokenField)
	}
	// Python's `str(v or default)`: a falsy token type (null, "", false, 0)
	// means the default.
	typ := cfg.DefaultTokenType
	switch v := payload[cfg.TokenTypeField].(type) {
	case string:
		if v != "" {
			typ = v
		}
	case bool:
		if v {
			typ = "True"
		}
	case float64:
		if v != 0 {
			typ = strconv.FormatFloat(v, 'f', -1, 64)
		}
	}
	rendered := typ + " " + access
	if reason := header.IllegalValueReason(rendered); reason != "" {
		return fail("the access token cannot be sent as an HTTP header value: it %s", reason)
	}
	tok := token{header: rendered, expiresAt: m.now().Add(time.Duration(max(expiresIn(payload[cfg.ExpiresInField]), 1)) * time.Second)}
	if cfg.GrantType == config.GrantRefreshToken {
		if rt, ok := payload["refresh_token"].(string); ok && rt != "" {
			tok.refreshToken = rt
		}
	}
	return tok, nil
}

// expiresIn reads an expiry in seconds as Python's int() would; anything
// unusable means the default hour.
func expiresIn(v any) int {
	switch t := v.(type) {
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) || math.Abs(t) > 1e9 {
			return DefaultExpiresIn
		}
		return int(t)
	case string:
		// Same bound as numbers: a larger n overflows time.Duration later.
		if n, err := strconv.Atoi(strings.TrimSpace(t)); err == nil && n >= -1e9 && n <= 1e9 {
			return n
		}
	}
	return DefaultExpiresIn
}
