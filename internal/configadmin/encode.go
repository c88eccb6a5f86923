package configadmin

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/antler-mcp/antler/internal/config"
)

// encodeDocument writes an ordered JSON document as DeerFlow does
// (json.dump with indent=2), keeping key order and number spelling, without
// HTML escaping (URLs keep their "&"), with a final newline.
func encodeDocument(v any) ([]byte, error) {
	var b bytes.Buffer
	if err := writeValue(&b, v, 0); err != nil {
		return nil, err
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}

func writeValue(b *bytes.Buffer, v any, depth int) error {
	indent := func(d int) {
		b.WriteByte('\n')
		for range d {
			b.WriteString("  ")
		}
	}
	switch t := v.(type) {
	case *config.Object:
		if t.Len() == 0 {
			b.WriteString("{}")
			return nil
		}
		b.WriteByte('{')
		for i, k := range t.Keys() {
			if i > 0 {
				b.WriteByte(',')
			}
			indent(depth + 1)
			if err := writeString(b, k); err != nil {
				return err
			}
			b.WriteString(": ")
			val, _ := t.Get(k)
			if err := writeValue(b, val, depth+1); err != nil {
				return err
			}
		}
		indent(depth)
		b.WriteByte('}')
	case []any:
		if len(t) == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				b.WriteByte(',')
			}
			indent(depth + 1)
			if err := writeValue(b, e, depth+1); err != nil {
				return err
			}
		}
		indent(depth)
		b.WriteByte(']')
	case string:
		return writeString(b, t)
	case json.Number:
		if !json.Valid([]byte(t)) {
			return fmt.Errorf("invalid number in document")
		}
		b.WriteString(string(t))
	case bool:
		if t {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
	case nil:
		b.WriteString("null")
	default:
		data, err := json.Marshal(t)
		if err != nil {
			return err
		}
		b.Write(data)
	}
	return nil
}

func writeString(b *bytes.Buffer, s string) error {
	var sb bytes.Buffer
	enc := json.NewEncoder(&sb)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		return err
	}
	b.Write(bytes.TrimSuffix(sb.Bytes(), []byte("\n")))
	return nil
}
