package settings

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// HTTP is the gateway's HTTP edge (the http: section): which Host and Origin
// headers it answers, how long a client may take, how many connections it
// holds and how much one principal may hold at once.
type HTTP struct {
	// AllowedHosts are Host header values served besides the loopback names
	// (localhost, 127.0.0.0/8, [::1]), which are always served; with API keys
	// configured, IP literals are served too. An entry is a name or IP with
	// an optional port (none: any port), "*.example.com" for its subdomains,
	// or "*" for any Host. Default empty.
	AllowedHosts []string `yaml:"allowed_hosts"`
	// AllowedOrigins are the browser origins (scheme://host[:port]) whose
	// requests are served; a request with any other Origin gets 403.
	// Default empty: no browser page may call the host.
	AllowedOrigins []string `yaml:"allowed_origins"`
	// MaxConnections caps open client connections; one more is answered 503
	// and closed (default 1024).
	MaxConnections int `yaml:"max_connections"`
	// ReadHeaderTimeout bounds reading a request's headers (default 10s).
	ReadHeaderTimeout string `yaml:"read_header_timeout"`
	// BodyReadTimeout bounds reading a request's body (default 30s).
	BodyReadTimeout string `yaml:"body_read_timeout"`
	// WriteTimeout bounds writing one response; on an event stream it bounds
	// each write, never the stream (default 60s).
	WriteTimeout string `yaml:"write_timeout"`
	// IdleTimeout closes a keep-alive connection idle this long (default 120s).
	IdleTimeout string `yaml:"idle_timeout"`
	// PerPrincipal limits what one caller holds at once.
	PerPrincipal PerPrincipal `yaml:"per_principal"`
}

// PerPrincipal limits one caller (one user id; an internal principal's calls
// count against the user they act for). Beyond a limit the gateway answers 429.
type PerPrincipal struct {
	// MaxConcurrentCalls caps tool calls in flight (default 16).
	MaxConcurrentCalls int `yaml:"max_concurrent_calls"`
	// MaxEventStreams caps open task event streams (default 4).
	MaxEventStreams int `yaml:"max_event_streams"`
}

// DefaultHTTP is the http: section when the file does not set it.
func DefaultHTTP() HTTP {
	return HTTP{MaxConnections: 1024, ReadHeaderTimeout: "10s", BodyReadTimeout: "30s", WriteTimeout: "60s", IdleTimeout: "120s",
		PerPrincipal: PerPrincipal{MaxConcurrentCalls: 16, MaxEventStreams: 4}}
}

// Durations returns the four timeouts, defaults for any that is empty.
// Values are validated when the settings load.
func (h HTTP) Durations() (readHeader, bodyRead, write, idle time.Duration) {
	def := DefaultHTTP()
	d := func(v, fallback string) time.Duration {
		if v == "" {
			v = fallback
		}
		out, _ := time.ParseDuration(v)
		return out
	}
	return d(h.ReadHeaderTimeout, def.ReadHeaderTimeout), d(h.BodyReadTimeout, def.BodyReadTimeout),
		d(h.WriteTimeout, def.WriteTimeout), d(h.IdleTimeout, def.IdleTimeout)
}

// validate normalizes the host and origin lists in place and reports each
// bad field by name.
func (h *HTTP) validate() []string {
	var problems []string
	for i, v := range h.AllowedHosts {
		p, err := ParseHostPattern(v)
		if err != nil {
			problems = append(problems, fmt.Sprintf("http.allowed_hosts[%d]: %v", i, err))
			continue
		}
		h.AllowedHosts[i] = p.String()
	}
	for i, v := range h.AllowedOrigins {
		o, err := NormalizeOrigin(v)
		if err != nil {
			problems = append(problems, fmt.Sprintf("http.allowed_origins[%d]: %v", i, err))
			continue
		}
		h.AllowedOrigins[i] = o
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"http.max_connections", h.MaxConnections}, {"http.per_principal.max_concurrent_calls", h.PerPrincipal.MaxConcurrentCalls},
		{"http.per_principal.max_event_streams", h.PerPrincipal.MaxEventStreams}} {
		if f.v < 1 {
			problems = append(problems, f.name+": must be at least 1")
		}
	}
	for _, f := range []struct{ name, v string }{{"http.read_header_timeout", h.ReadHeaderTimeout},
		{"http.body_read_timeout", h.BodyReadTimeout}, {"http.write_timeout", h.WriteTimeout}, {"http.idle_timeout", h.IdleTimeout}} {
		if d, err := time.ParseDuration(f.v); err != nil || d <= 0 {
			problems = append(problems, f.name+": must be a positive duration such as 10s")
		}
	}
	return problems
}

// HostPattern is one allowed_hosts entry: Host is a lower-case name, an IP
// (IPv6 in brackets), "*.suffix" or "*"; Port is empty for any port.
type HostPattern struct {
	Host string
	Port string
}

func (p HostPattern) String() string {
	if p.Port == "" {
		return p.Host
	}
	return p.Host + ":" + p.Port
}

// Matches reports whether a request's host (lower case, IPv6 in brackets)
// and port ("" when the Host header has none) fall under the pattern.
func (p HostPattern) Matches(host, port string) bool {
	if p.Port != "" && p.Port != port {
		return false
	}
	switch {
	case p.Host == "*":
		return true
	case strings.HasPrefix(p.Host, "*."):
		return strings.HasSuffix(host, p.Host[1:]) && len(host) > len(p.Host)-1
	}
	return host == p.Host
}

// ParseHostPattern reads an allowed_hosts entry. It accepts a DNS name, an
// IP literal, "*.name" or "*", each with an optional ":port".
func ParseHostPattern(v string) (HostPattern, error) {
	v = strings.ToLower(strings.TrimSpace(v))
	if v == "*" {
		return HostPattern{Host: "*"}, nil
	}
	host, port, err := SplitHost(v)
	if err != nil {
		return HostPattern{}, err
	}
	if !strings.HasPrefix(host, "[") && !isDNSName(strings.TrimPrefix(host, "*.")) { // SplitHost checked a bracketed IPv6
		return HostPattern{}, errors.New("must be a host name or IP, optionally with :port, *.name or *")
	}
	return HostPattern{Host: host, Port: port}, nil
}

// SplitHost splits a Host header value into a lower-case host (IPv6 in
// brackets, no trailing dot) and a port ("" when absent).
func SplitHost(v string) (host, port string, err error) {
	v = strings.ToLower(v)
	switch {
	case v == "":
		return "", "", errors.New("must not be empty")
	case strings.Count(v, ":") > 1 && !strings.HasPrefix(v, "["): // a bare IPv6 literal
		if net.ParseIP(v) == nil {
			return "", "", errors.New("must be a host name or IP")
		}
		return "[" + v + "]", "", nil
	case strings.HasSuffix(v, "]") || !strings.Contains(v, ":"):
		host = v
	default:
		if host, port, err = net.SplitHostPort(v); err != nil {
			return "", "", errors.New("must be host or host:port")
		}
		if n, perr := strconv.Atoi(port); perr != nil || n < 1 || n > 65535 || strconv.Itoa(n) != port {
			return "", "", errors.New("port must be a number from 1 to 65535")
		}
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
	}
	if strings.HasPrefix(host, "[") {
		if !strings.HasSuffix(host, "]") || net.ParseIP(host[1:len(host)-1]) == nil {
			return "", "", errors.New("bracketed host must be an IPv6 address")
		}
		return host, port, nil
	}
	return strings.TrimSuffix(host, "."), port, nil
}

// isDNSName reports whether s is made of dot-separated labels of letters,
// digits and hyphens.
func isDNSName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
				return false
			}
		}
	}
	return true
}

// NormalizeOrigin reads a browser origin (scheme://host[:port], http or
// https) into the form browsers send: lower case, no default port, no path.
func NormalizeOrigin(v string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(v))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", errors.New("must be an origin such as https://app.example.com (http or https, no path)")
	}
	if u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return "", errors.New("must be an origin only: no user, path, query or fragment")
	}
	host, port, err := SplitHost(u.Host)
	if err != nil {
		return "", err
	}
	if !isDNSName(host) && net.ParseIP(strings.Trim(host, "[]")) == nil {
		return "", errors.New("must be an origin such as https://app.example.com (http or https, no path)")
	}
	scheme := strings.ToLower(u.Scheme)
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + host, nil
}
