// Package egress holds the host's rule for requests it sends to servers it
// does not control (MCP upstreams, OAuth token endpoints, task webhooks): a
// redirect is an answer, never followed.
//
// Following one would let the server send the host's request, with its
// body and every configured header but Authorization and Cookie, to a place
// of the server's choosing: this host's own loopback API, another tenant's
// service, a cloud metadata endpoint. The server's address is the one the
// operator configured; a redirect is reported as the 3xx it is.
package egress

import "net/http"

// NoRedirects is an http.Client CheckRedirect that follows no redirect:
// the client returns the 3xx response itself.
func NoRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// Client returns a client over rt (http.DefaultTransport when nil) that
// follows no redirect.
func Client(rt http.RoundTripper) *http.Client {
	return &http.Client{Transport: rt, CheckRedirect: NoRedirects}
}
