// Package dashboard is the operator's web UI at /ui: static HTML, CSS and
// ES-module JavaScript embedded in the binary, which call the gateway's REST
// API from the browser with the operator's API key. The page holds no data
// of its own and no secret beyond the key the operator types (kept in the
// tab's sessionStorage); every figure it shows comes from the API under that
// key's role, so an agent key sees only what the API shows an agent.
//
// The assets carry no inline script or style and name no remote URL, so the
// strict Content-Security-Policy the handler sends holds: the page can load
// only its own files and talk only to its own origin.
package dashboard

import (
	"embed"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
)

// Prefix is the path the dashboard is served under.
const Prefix = "/ui"

// CSP is the Content-Security-Policy of every dashboard response.
const CSP = "default-src 'self'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

//go:embed assets
var embedded embed.FS

// Assets are the dashboard's files (index.html, the modules, the style
// sheet), rooted at the assets folder.
func Assets() fs.FS {
	sub, err := fs.Sub(embedded, "assets")
	if err != nil { // the folder is embedded above
		panic(err)
	}
	return sub
}

// Handler serves the dashboard: Prefix and Prefix+"/" answer index.html,
// Prefix+"/<file>" an asset, anything else 404. Only GET and HEAD are
// answered. Every response carries CSP, nosniff and no-store caching
// directives, errors included.
func Handler() http.Handler {
	files := Assets()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", CSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		// same-origin keeps the Origin of the page's own POSTs (no-referrer
		// would send "Origin: null", which the gateway refuses).
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cache-Control", "no-cache")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		name, ok := assetName(r.URL.Path)
		if !ok {
			http.NotFound(w, r)
			return
		}
		data, err := fs.ReadFile(files, name)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		ctype := mime.TypeByExtension(path.Ext(name))
		if ctype == "" {
			ctype = "application/octet-stream"
		}
		h.Set("Content-Type", ctype)
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			_, _ = w.Write(data)
		}
	})
}

// assetName maps a request path to a file in Assets.
func assetName(p string) (string, bool) {
	if p == Prefix || p == Prefix+"/" {
		return "index.html", true
	}
	rest, ok := strings.CutPrefix(p, Prefix+"/")
	if !ok || rest == "" || !fs.ValidPath(rest) {
		return "", false
	}
	return rest, true
}
