package settings_test

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/antler-mcp/antler/internal/settings"
)

func TestHTTPSection(t *testing.T) {
	t.Parallel()
	s, err := settings.Load(writeSettings(t, `http:
  allowed_hosts: [Antler.Example.COM, "*.corp.example:8443", "::1", "[fe80::1]:80", "*", antler.test.]
  allowed_origins: ["HTTPS://App.Example.com:443", "http://localhost:3000/"]
  max_connections: 10
  read_header_timeout: 2s
  body_read_timeout: 3s
  write_timeout: 4s
  idle_timeout: 5s
  per_principal: {max_concurrent_calls: 2, max_event_streams: 1}
`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := settings.HTTP{
		AllowedHosts:   []string{"antler.example.com", "*.corp.example:8443", "[::1]", "[fe80::1]:80", "*", "antler.test"},
		AllowedOrigins: []string{"https://app.example.com", "http://localhost:3000"},
		MaxConnections: 10, ReadHeaderTimeout: "2s", BodyReadTimeout: "3s", WriteTimeout: "4s", IdleTimeout: "5s",
		PerPrincipal: settings.PerPrincipal{MaxConcurrentCalls: 2, MaxEventStreams: 1},
	}
	if !reflect.DeepEqual(s.HTTP, want) {
		t.Errorf("http = %+v\nwant %+v", s.HTTP, want)
	}
	rh, br, w, idle := s.HTTP.Durations()
	if rh != 2*time.Second || br != 3*time.Second || w != 4*time.Second || idle != 5*time.Second {
		t.Errorf("durations %v %v %v %v", rh, br, w, idle)
	}
	// A partial section keeps the other defaults.
	s, err = settings.Load(writeSettings(t, "http:\n  allowed_origins: [https://ui.example]\n"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	def := settings.DefaultHTTP()
	def.AllowedOrigins = []string{"https://ui.example"}
	if !reflect.DeepEqual(s.HTTP, def) {
		t.Errorf("partial http = %+v, want the defaults plus the origin", s.HTTP)
	}
}

func TestHTTPSectionInvalid(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, yaml, want string }{
		{"host with a scheme", "allowed_hosts: [http://a.example]", "http.allowed_hosts[0]:"},
		{"host with a path", "allowed_hosts: [ok.example, a.example/x]", "http.allowed_hosts[1]:"},
		{"host with a bad port", "allowed_hosts: [a.example:99999]", "http.allowed_hosts[0]: port"},
		{"empty host", `allowed_hosts: [""]`, "http.allowed_hosts[0]: must not be empty"},
		{"wildcard in the middle", "allowed_hosts: [a.*.example]", "http.allowed_hosts[0]:"},
		{"origin null", "allowed_origins: [\"null\"]", "http.allowed_origins[0]:"},
		{"origin with a path", "allowed_origins: [https://a.example/app]", "http.allowed_origins[0]: must be an origin only"},
		{"origin wildcard", "allowed_origins: [\"*\"]", "http.allowed_origins[0]:"},
		{"origin without scheme", "allowed_origins: [a.example]", "http.allowed_origins[0]:"},
		{"zero connections", "max_connections: 0", "http.max_connections: must be at least 1"},
		{"negative calls", "per_principal: {max_concurrent_calls: -1}", "http.per_principal.max_concurrent_calls: must be at least 1"},
		{"zero streams", "per_principal: {max_event_streams: 0}", "http.per_principal.max_event_streams: must be at least 1"},
		{"bad duration", "read_header_timeout: soon", "http.read_header_timeout: must be a positive duration"},
		{"negative duration", "idle_timeout: -1s", "http.idle_timeout: must be a positive duration"},
		{"unknown key", "max_conns: 3", "max_conns"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := settings.Load(writeSettings(t, "http:\n  "+tc.yaml+"\n"), env(nil))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestHostPatternMatches(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pattern, host string
		want          bool
	}{
		{"a.example", "a.example:8080", true},
		{"a.example", "A.EXAMPLE.", true},
		{"a.example:8080", "a.example:8080", true},
		{"a.example:8080", "a.example:9090", false},
		{"a.example:8080", "a.example", false},
		{"*.a.example", "x.a.example", true},
		{"*.a.example", "x.y.a.example:1", true},
		{"*.a.example", "a.example", false},
		{"*.a.example", "evila.example", false},
		{"*", "anything.example:1", true},
		{"::1", "[::1]:8080", true},
		{"a.example", "a.example.evil.example", false},
	} {
		p, err := settings.ParseHostPattern(tc.pattern)
		if err != nil {
			t.Fatalf("%s: %v", tc.pattern, err)
		}
		host, port, err := settings.SplitHost(tc.host)
		if err != nil {
			t.Fatalf("%s: %v", tc.host, err)
		}
		if got := p.Matches(host, port); got != tc.want {
			t.Errorf("%s matches %s = %v, want %v", tc.pattern, tc.host, got, tc.want)
		}
	}
}
