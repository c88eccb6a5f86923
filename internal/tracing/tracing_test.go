package tracing_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/antler-mcp/antler/internal/tracing"
)

// TestFromEnv: tracing is on only when an exporter is named, and the SDK
// switch turns it off whatever the exporter.
func TestFromEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		enabled bool
		fails   bool
	}{
		{"no exporter is off", nil, false, false},
		{"exporter none is off", map[string]string{"OTEL_TRACES_EXPORTER": "none"}, false, false},
		{"console is on", map[string]string{"OTEL_TRACES_EXPORTER": "console"}, true, false},
		{"sdk disabled wins", map[string]string{"OTEL_TRACES_EXPORTER": "console", "OTEL_SDK_DISABLED": "true"}, false, false},
		{"unknown exporter is an error", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, false, true},
		{"unknown protocol is an error", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			tr, err := tracing.FromEnv(context.Background(), tracing.Options{
				Lookup:  func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok },
				Console: &out,
			})
			if (err != nil) != tt.fails {
				t.Fatalf("FromEnv error = %v, want failure %v", err, tt.fails)
			}
			if (tr != nil) != tt.enabled {
				t.Fatalf("FromEnv enabled = %v, want %v", tr != nil, tt.enabled)
			}
			if tr == nil {
				return
			}
			_, span := tr.Start(context.Background(), "probe", 0)
			span.End()
			if err := tr.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(out.Bytes(), []byte(`"probe"`)) {
				t.Errorf("console exporter wrote %q, want the span", out.String())
			}
		})
	}
}
