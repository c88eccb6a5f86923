package main

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"image"
	"image/color"
	"image/png"
)

// MIME types of the media the server returns.
const (
	pngMIME = "image/png"
	wavMIME = "audio/wav"
)

// redPixelPNG is a 1x1 red PNG, base64-encoded: the smallest real image a
// client can decode, used wherever a scenario wants image content or a binary
// resource.
var redPixelPNG = base64.StdEncoding.EncodeToString(encodePNG())

// silenceWAV is 10 ms of 8 kHz, 16-bit mono silence as a RIFF/WAVE file,
// base64-encoded: a minimal audio clip that players accept.
var silenceWAV = base64.StdEncoding.EncodeToString(encodeWAV(8000, 80))

// encodePNG encodes a 1x1 opaque red image.
func encodePNG() []byte {
	img := image.NewNRGBA(image.Rect(0, 0, 1, 1))
	img.Set(0, 0, color.NRGBA{R: 0xff, A: 0xff})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		// Encoding an in-memory image to a bytes.Buffer cannot fail.
		panic("encode PNG: " + err.Error())
	}
	return buf.Bytes()
}

// encodeWAV encodes samples zero-valued samples of 16-bit mono PCM at
// rate Hz, with the canonical 44-byte header.
func encodeWAV(rate, samples uint32) []byte {
	const channels, bitsPerSample = 1, 16
	blockAlign := uint16(channels * bitsPerSample / 8)
	dataSize := samples * uint32(blockAlign)
	var buf bytes.Buffer
	put := func(v any) { _ = binary.Write(&buf, binary.LittleEndian, v) } // bytes.Buffer never fails
	buf.WriteString("RIFF")
	put(36 + dataSize)
	buf.WriteString("WAVEfmt ")
	put(uint32(16))       // fmt chunk size
	put(uint16(1))        // PCM
	put(uint16(channels)) //
	put(rate)
	put(rate * uint32(blockAlign)) // byte rate
	put(blockAlign)
	put(uint16(bitsPerSample))
	buf.WriteString("data")
	put(dataSize)
	buf.Write(make([]byte, dataSize))
	return buf.Bytes()
}
