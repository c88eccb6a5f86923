package abi

import (
	"encoding/binary"
	"errors"
	"math"
	"unsafe"
)

// Protobuf wire types used by the contract.
const (
	wireVarint  = 0
	wireFixed64 = 1
	wireBytes   = 2
	wireFixed32 = 5
)

// ErrMalformed is returned for bytes that are not a valid message.
var ErrMalformed = errors.New("abi: malformed message")

// Encoder appends protobuf fields to a buffer. The zero value is ready; Reset
// keeps the buffer for reuse. Default values (empty strings, zero numbers,
// false) are not written, as in proto3.
type Encoder struct {
	buf []byte
}

// Bytes returns the encoded message.
func (e *Encoder) Bytes() []byte { return e.buf }

// Reset empties the encoder, keeping its buffer.
func (e *Encoder) Reset() { e.buf = e.buf[:0] }

func (e *Encoder) tag(field, wire int) {
	e.buf = binary.AppendUvarint(e.buf, uint64(field)<<3|uint64(wire))
}

// String writes a string field (skipped when empty).
func (e *Encoder) String(field int, s string) {
	if s == "" {
		return
	}
	e.tag(field, wireBytes)
	e.buf = binary.AppendUvarint(e.buf, uint64(len(s)))
	e.buf = append(e.buf, s...)
}

// RepeatedString writes one element of a repeated string field (even if empty).
func (e *Encoder) RepeatedString(field int, s string) {
	e.tag(field, wireBytes)
	e.buf = binary.AppendUvarint(e.buf, uint64(len(s)))
	e.buf = append(e.buf, s...)
}

// Bytes writes a bytes field when b is non-nil (an empty non-nil slice is
// written, so presence can be expressed).
func (e *Encoder) BytesField(field int, b []byte) {
	if b == nil {
		return
	}
	e.tag(field, wireBytes)
	e.buf = binary.AppendUvarint(e.buf, uint64(len(b)))
	e.buf = append(e.buf, b...)
}

// Uint writes a varint field (skipped when zero).
func (e *Encoder) Uint(field int, v uint64) {
	if v == 0 {
		return
	}
	e.tag(field, wireVarint)
	e.buf = binary.AppendUvarint(e.buf, v)
}

// Bool writes a bool field (skipped when false).
func (e *Encoder) Bool(field int, v bool) {
	if v {
		e.Uint(field, 1)
	}
}

// Double writes a double field; present is false to leave it out.
func (e *Encoder) Double(field int, v float64, present bool) {
	if !present {
		return
	}
	e.tag(field, wireFixed64)
	e.buf = binary.LittleEndian.AppendUint64(e.buf, math.Float64bits(v))
}

// Message writes an embedded message produced by enc.
func (e *Encoder) Message(field int, enc func(*Encoder)) {
	e.tag(field, wireBytes)
	// Reserve the length later: encode into the tail, then splice.
	start := len(e.buf)
	enc(e)
	body := append([]byte(nil), e.buf[start:]...)
	e.buf = binary.AppendUvarint(e.buf[:start], uint64(len(body)))
	e.buf = append(e.buf, body...)
}

// Decoder reads protobuf fields from a message.
type Decoder struct {
	buf []byte
	err error
	// field, wire type and payload of the current field
	field int
	wire  int
	v     uint64
	b     []byte
}

// NewDecoder starts reading b.
func NewDecoder(b []byte) *Decoder { return &Decoder{buf: b} }

// uvarint reads a varint from the front of b, with a fast path for the
// one-byte values that tags and short lengths almost always are.
func uvarint(b []byte) (uint64, int) {
	if len(b) > 0 && b[0] < 0x80 {
		return uint64(b[0]), 1
	}
	return binary.Uvarint(b)
}

// Next advances to the next field and reports whether there is one.
func (d *Decoder) Next() bool {
	if d.err != nil || len(d.buf) == 0 {
		return false
	}
	buf := d.buf
	key, n := uvarint(buf)
	if n <= 0 || key>>3 == 0 || key>>3 > math.MaxInt32 {
		d.err = ErrMalformed
		return false
	}
	buf = buf[n:]
	d.field, d.wire = int(key>>3), int(key&7)
	switch d.wire {
	case wireBytes:
		l, n := uvarint(buf)
		if n <= 0 || l > uint64(len(buf)-n) {
			d.err = ErrMalformed
			return false
		}
		d.b, buf = buf[n:n+int(l)], buf[n+int(l):]
	case wireVarint:
		v, n := uvarint(buf)
		if n <= 0 {
			d.err = ErrMalformed
			return false
		}
		d.v, buf = v, buf[n:]
	case wireFixed64:
		if len(buf) < 8 {
			d.err = ErrMalformed
			return false
		}
		d.v, buf = binary.LittleEndian.Uint64(buf), buf[8:]
	case wireFixed32:
		if len(buf) < 4 {
			d.err = ErrMalformed
			return false
		}
		d.v, buf = uint64(binary.LittleEndian.Uint32(buf)), buf[4:]
	default:
		d.err = ErrMalformed
		return false
	}
	d.buf = buf
	return true
}

// Field is the current field number.
func (d *Decoder) Field() int { return d.field }

// Err is the first decoding error.
func (d *Decoder) Err() error { return d.err }

func (d *Decoder) want(wire int) bool {
	if d.wire != wire {
		d.err = ErrMalformed
		return false
	}
	return true
}

// String reads the current field as a string. It shares memory with the
// decoded buffer (no copy): the buffer must not change while the value is in
// use. Decoded messages are therefore valid only as long as their input.
func (d *Decoder) String() string {
	if !d.want(wireBytes) || len(d.b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(d.b), len(d.b))
}

// Bytes reads the current field as bytes, non-nil, sharing the decoded
// buffer (see String).
func (d *Decoder) Bytes() []byte {
	if !d.want(wireBytes) {
		return nil
	}
	if d.b == nil {
		return []byte{}
	}
	return d.b[:len(d.b):len(d.b)]
}

// Uint reads the current field as a varint.
func (d *Decoder) Uint() uint64 {
	if !d.want(wireVarint) {
		return 0
	}
	return d.v
}

// Bool reads the current field as a bool.
func (d *Decoder) Bool() bool { return d.Uint() != 0 }

// Double reads the current field as a double.
func (d *Decoder) Double() float64 {
	if !d.want(wireFixed64) {
		return 0
	}
	return math.Float64frombits(d.v)
}

// Message returns a decoder over the current embedded message (a value, so
// decoding nested messages does not allocate).
func (d *Decoder) Message() Decoder {
	if !d.want(wireBytes) {
		return Decoder{err: d.err}
	}
	return Decoder{buf: d.b}
}

// Fail records a decoding error found by the caller (for example in an
// embedded message) so Err reports it.
func (d *Decoder) Fail(err error) {
	if d.err == nil && err != nil {
		d.err = err
	}
}
