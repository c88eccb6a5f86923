package abi_test

import (
	"math"
	"math/bits"
	"testing"

	"github.com/antler-mcp/antler/abi"
)

func TestPackVersion(t *testing.T) {
	cases := []struct {
		major, minor uint16
		packed       int32
	}{
		{0, 0, 0},
		{1, 0, 0x10000},
		{1, 2, 0x10002},
		{0, math.MaxUint16, 0xffff},
		{0x7fff, math.MaxUint16, math.MaxInt32},
		{0x8000, 0, math.MinInt32},
		{math.MaxUint16, math.MaxUint16, -1},
	}
	for _, c := range cases {
		if got := abi.PackVersion(c.major, c.minor); got != c.packed {
			t.Errorf("PackVersion(%d, %d) = %#x, want %#x", c.major, c.minor, got, c.packed)
		}
		if major, minor := abi.UnpackVersion(c.packed); major != c.major || minor != c.minor {
			t.Errorf("UnpackVersion(%#x) = %d, %d, want %d, %d", c.packed, major, minor, c.major, c.minor)
		}
	}
	if major, minor := abi.UnpackVersion(abi.PackVersion(abi.Major, abi.Minor)); major != abi.Major || minor != abi.Minor {
		t.Errorf("current version round trip = %d.%d", major, minor)
	}
}

func TestPackVersionRoundTrip(t *testing.T) {
	for major := 0; major <= math.MaxUint16; major += 257 {
		for _, minor := range []uint16{0, 1, 0x7fff, 0x8000, 0xfffe, math.MaxUint16, uint16(major)} {
			v := abi.PackVersion(uint16(major), minor)
			if gm, gn := abi.UnpackVersion(v); gm != uint16(major) || gn != minor {
				t.Fatalf("UnpackVersion(PackVersion(%d, %d)) = %d, %d", major, minor, gm, gn)
			}
		}
	}
	// Every int32 is some version: Pack(Unpack(v)) == v.
	for _, v := range []int32{0, 1, -1, math.MaxInt32, math.MinInt32, 0x12345678, -0x12345678} {
		if got := abi.PackVersion(abi.UnpackVersion(v)); got != v {
			t.Errorf("PackVersion(UnpackVersion(%#x)) = %#x", v, got)
		}
	}
}

func TestPack(t *testing.T) {
	cases := []struct {
		ptr, length uint32
		packed      uint64
	}{
		{0, 0, 0},
		{1, 0, 1 << 32},
		{0, 1, 1},
		{0x1000, 42, 0x1000<<32 | 42},
		{math.MaxUint32, 0, 0xffffffff00000000},
		{0, math.MaxUint32, 0xffffffff},
		{math.MaxUint32, math.MaxUint32, math.MaxUint64},
	}
	for _, c := range cases {
		if got := abi.Pack(c.ptr, c.length); got != c.packed {
			t.Errorf("Pack(%#x, %#x) = %#x, want %#x", c.ptr, c.length, got, c.packed)
		}
		if p, l := abi.Unpack(c.packed); p != c.ptr || l != c.length {
			t.Errorf("Unpack(%#x) = %#x, %#x, want %#x, %#x", c.packed, p, l, c.ptr, c.length)
		}
	}
	for i := range 64 {
		v := uint64(1)<<i | bits.RotateLeft64(0x9e3779b97f4a7c15, i)
		if got := abi.Pack(abi.Unpack(v)); got != v {
			t.Errorf("Pack(Unpack(%#x)) = %#x", v, got)
		}
		// The i64 crosses the Wasm boundary as a signed value.
		if got := abi.Pack(abi.Unpack(uint64(int64(v)))); int64(got) != int64(v) {
			t.Errorf("signed round trip of %#x = %#x", v, got)
		}
	}
}

func TestFeatures(t *testing.T) {
	all := []uint64{abi.FeatureIntercept, abi.FeatureResultHook, abi.FeatureTaskDriver, abi.FeatureLog, abi.FeatureCallTool, abi.FeatureTaskAnswer}
	var union uint64
	for _, f := range all {
		if bits.OnesCount64(f) != 1 || union&f != 0 {
			t.Errorf("feature %#x is not a distinct single bit", f)
		}
		union |= f
	}
	if union != abi.KnownFeatures {
		t.Errorf("KnownFeatures = %#x, want %#x", abi.KnownFeatures, union)
	}
	if abi.PackVersion(abi.Major, abi.Minor) != 1<<16|1 {
		t.Errorf("v1.1 packs to %#x", abi.PackVersion(abi.Major, abi.Minor))
	}
}
