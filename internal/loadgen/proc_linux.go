package loadgen

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

// clockTick is the unit of utime and stime in /proc/<pid>/stat (USER_HZ,
// 100 on every Linux platform Go supports).
const clockTick = 10 * time.Millisecond

func selfPID() int { return os.Getpid() }

// procStat reads a process's parent id and CPU time (user + system) from
// /proc/<pid>/stat; ok is false when the process is gone.
func procStat(pid int) (ppid int, cpu time.Duration, ok bool) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, 0, false
	}
	// The command name (field 2) is in parentheses and may hold spaces;
	// fields are counted after the last ')'.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := bytes.Fields(data[i+1:])
	if len(f) < 13 { // state ppid … utime(12) stime(13), 1-based after ')'
		return 0, 0, false
	}
	ppid, _ = strconv.Atoi(string(f[1]))
	ut, _ := strconv.ParseInt(string(f[11]), 10, 64)
	st, _ := strconv.ParseInt(string(f[12]), 10, 64)
	return ppid, time.Duration(ut+st) * clockTick, true
}

// parents maps every live process to its parent.
func parents() map[int]int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	m := make(map[int]int, len(ents))
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, _, ok := procStat(pid); ok {
			m[pid] = ppid
		}
	}
	return m
}

// childrenOf lists pid's direct children.
func childrenOf(pid int) []int {
	var out []int
	for p, pp := range parents() {
		if pp == pid {
			out = append(out, p)
		}
	}
	return out
}

// tree lists roots and all their live descendants, each once.
func tree(roots []int) []int {
	if len(roots) == 0 {
		return nil
	}
	kids := map[int][]int{}
	for p, pp := range parents() {
		kids[pp] = append(kids[pp], p)
	}
	seen := map[int]bool{}
	var out []int
	queue := append([]int(nil), roots...)
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if seen[p] {
			continue
		}
		seen[p] = true
		out = append(out, p)
		queue = append(queue, kids[p]...)
	}
	return out
}

// treeCPU samples the CPU time spent so far by roots and each of their
// descendants.
func treeCPU(roots []int) cpuSample {
	s := cpuSample{}
	for _, p := range tree(roots) {
		if _, cpu, ok := procStat(p); ok {
			s[p] = cpu
		}
	}
	return s
}

// treePeakRSS sums the high-water resident size (VmHWM) of roots and their
// descendants, in bytes.
func treePeakRSS(roots []int) int64 {
	var sum int64
	for _, p := range tree(roots) {
		data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p), "status"))
		if err != nil {
			continue
		}
		for line := range bytes.Lines(data) {
			if v, ok := bytes.CutPrefix(line, []byte("VmHWM:")); ok {
				kb, _ := strconv.ParseInt(string(bytes.TrimSuffix(bytes.TrimSpace(v), []byte(" kB"))), 10, 64)
				sum += kb << 10
			}
		}
	}
	return sum
}
