package mcpserver

import (
	"encoding/json"
	"testing"
)

func TestPlainID(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want bool
	}{
		{`"a"`, true}, {`""`, true}, {`1`, true}, {`0`, true}, {`-7`, true}, {` 42 `, true},
		{`123456789012345`, true}, {`1234567890123456`, false},
		{`1.5`, false}, {`1e3`, false}, {`01`, false}, {`-`, false}, {`null`, false}, {`{}`, false}, {``, false},
	} {
		if got := plainID(json.RawMessage(tc.id)); got != tc.want {
			t.Errorf("plainID(%s) = %v, want %v", tc.id, got, tc.want)
		}
	}
}
