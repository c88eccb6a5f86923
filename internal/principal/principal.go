// Package principal maps API keys to the caller identities the gateway works
// with: a user id and a role (admin, agent or internal).
package principal

import (
	"context"
	"crypto/sha256"
	"errors"
	"net"
	"strings"

	"github.com/antler-mcp/antler/internal/settings"
)

// Principal is an authenticated caller.
type Principal struct {
	User string
	Role string
}

// Default is every caller when no keys are configured (loopback only).
var Default = Principal{User: "default", Role: settings.RoleAdmin}

// IsAdmin reports whether p may change configuration and reset the cache.
func (p Principal) IsAdmin() bool { return p.Role == settings.RoleAdmin }

// Authenticator resolves API keys. Keys are held as SHA-256 digests so the
// table never keeps the secrets themselves and lookups do not compare secrets
// byte by byte.
type Authenticator struct {
	byDigest map[[32]byte]Principal
}

// New builds an authenticator from the settings' key table.
func New(keys []settings.Key) *Authenticator {
	a := &Authenticator{byDigest: make(map[[32]byte]Principal, len(keys))}
	for _, k := range keys {
		a.byDigest[sha256.Sum256([]byte(k.Key))] = Principal{User: k.User, Role: k.Role}
	}
	return a
}

// Open reports whether no keys are configured: loopback only, every caller Default.
func (a *Authenticator) Open() bool { return len(a.byDigest) == 0 }

// ErrNoCredentials and ErrBadCredentials are the two authentication failures.
var (
	ErrNoCredentials  = errors.New("missing API key: send Authorization: Bearer <key> or X-API-Key")
	ErrBadCredentials = errors.New("invalid API key")
)

// Authenticate resolves the key in an Authorization: Bearer header or an
// X-API-Key header.
func (a *Authenticator) Authenticate(authorization, apiKey string) (Principal, error) {
	if a.Open() {
		return Default, nil
	}
	key := apiKey
	if key == "" {
		scheme, rest, ok := strings.Cut(strings.TrimSpace(authorization), " ")
		if ok && strings.EqualFold(scheme, "Bearer") {
			key = strings.TrimSpace(rest)
		}
	}
	if key == "" {
		return Principal{}, ErrNoCredentials
	}
	p, ok := a.byDigest[sha256.Sum256([]byte(key))]
	if !ok {
		return Principal{}, ErrBadCredentials
	}
	return p, nil
}

// IsLoopbackHost reports whether a listen host is a loopback address or
// "localhost". An empty host (all interfaces) is not.
func IsLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ActingUser is the user a call made by p acts for when the request names
// requested (""): p's own user, or requested when p is internal (a backend
// serving many users). ignored reports a requested user that was not
// honoured, which callers log: an agent must not borrow another user's
// credentials.
func (p Principal) ActingUser(requested string) (user string, ignored bool) {
	if requested == "" || requested == p.User {
		return p.User, false
	}
	if p.Role == settings.RoleInternal {
		return requested, false
	}
	return p.User, true
}

type contextKey struct{}

// NewContext returns ctx carrying p, so handlers mounted behind the
// gateway's authentication (the MCP endpoint) see the caller.
func NewContext(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, contextKey{}, p)
}

// FromContext returns the principal NewContext stored, if any.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(contextKey{}).(Principal)
	return p, ok
}
