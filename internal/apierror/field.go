package apierror

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// TruncateField shortens a caller's field or tool name for a message: at
// most 64 bytes, then "…".
func TruncateField(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// JSONProblem describes a decoding error by position and kind, without
// quoting the input.
func JSONProblem(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("invalid JSON at byte %d", syn.Offset)
	case errors.As(err, &typ):
		return fmt.Sprintf("got a JSON %s", typ.Value)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "unexpected end of input"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}
