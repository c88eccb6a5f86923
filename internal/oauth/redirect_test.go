package oauth_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/antler-mcp/antler/internal/oauth"
)

// TestTokenEndpointRedirectIsNotFollowed performs a token endpoint's 307 to
// a host of its choosing: a client that followed it would POST the form,
// client secret and all, there. Whether the manager made its own client or
// was given one, the token request fails and nothing reaches the other
// host.
func TestTokenEndpointRedirectIsNotFollowed(t *testing.T) {
	var reached atomic.Int32
	var sawSecret atomic.Bool
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		b, _ := io.ReadAll(r.Body)
		sawSecret.Store(strings.Contains(string(b), "csecret"))
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"access_token": "stolen", "token_type": "Bearer"}`)
	}))
	t.Cleanup(elsewhere.Close)
	endpoint := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+"/token", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(endpoint.Close)

	for name, opts := range map[string]oauth.Options{
		"its own client": {},
		"a given client": {Client: &http.Client{}},
	} {
		t.Run(name, func(t *testing.T) {
			m := oauth.New(extWith(t, endpoint.URL, clientCreds()), opts)
			if h, err := header(t, m, "api"); err == nil {
				t.Errorf("Header = %q after a redirect, want an error", h)
			}
			if n := reached.Load(); n > 0 {
				t.Fatalf("the redirect was followed: %d request(s) reached the other host (client secret in the body: %v)", n, sawSecret.Load())
			}
		})
	}
}
