//go:build !linux

package loadgen

// Process accounting needs /proc; elsewhere the figures stay zero.

func selfPID() int            { return 0 }
func childrenOf(int) []int    { return nil }
func treeCPU([]int) cpuSample { return nil }
func treePeakRSS([]int) int64 { return 0 }
