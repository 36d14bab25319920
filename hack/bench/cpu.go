package main

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// clockTicks is the unit of /proc/<pid>/stat's CPU times (USER_HZ, 100 on
// every Linux the bench runs on).
const clockTicks = 100

// processCPU is the CPU time the bench and each of its child processes (the
// control plane's, the operator's) have used, by command name. With both
// floors sharing the machine's cores with the API server, what a system
// costs the whole machine per instance is what its burst waits on.
func processCPU() map[string]time.Duration {
	cpu := map[string]time.Duration{}
	var self syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &self) == nil {
		cpu["bench (its clients)"] = time.Duration(self.Utime.Nano() + self.Stime.Nano())
	}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	me := os.Getpid()
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		name, ppid, ticks, ok := parseStat(string(b))
		if ok && ppid == me {
			cpu[name] += time.Duration(ticks) * time.Second / clockTicks
		}
	}
	return cpu
}

// parseStat reads a process's command name, parent and CPU time (user and
// system, in clock ticks) from the text of its /proc/<pid>/stat.
func parseStat(stat string) (name string, ppid int, ticks int64, ok bool) {
	open, end := strings.IndexByte(stat, '('), strings.LastIndexByte(stat, ')')
	if open < 0 || end < open {
		return "", 0, 0, false
	}
	// After the name: state, ppid, ..., utime and stime (the 14th and 15th
	// fields of the whole line).
	fields := strings.Fields(stat[end+1:])
	if len(fields) < 13 {
		return "", 0, 0, false
	}
	ppid, err1 := strconv.Atoi(fields[1])
	utime, err2 := strconv.ParseInt(fields[11], 10, 64)
	stime, err3 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return "", 0, 0, false
	}
	return stat[open+1 : end], ppid, utime + stime, true
}

// printCPU prints the CPU each process used between two processCPU, in all
// and per instance of a burst of n.
func printCPU(phase string, before, after map[string]time.Duration, n int) {
	names := make([]string, 0, len(after))
	var total time.Duration
	for name, d := range after {
		names = append(names, name)
		total += d - before[name]
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Compare(after[b]-before[b], after[a]-before[a]) })
	fmt.Fprintf(os.Stderr, "CPU, %s (s; ms per instance):\n", phase)
	for _, name := range names {
		d := after[name] - before[name]
		fmt.Fprintf(os.Stderr, "  %-24s %6.1f (%.1f)\n", name, d.Seconds(), 1000*d.Seconds()/float64(n))
	}
	fmt.Fprintf(os.Stderr, "  %-24s %6.1f (%.1f)\n", "all", total.Seconds(), 1000*total.Seconds()/float64(n))
}

// cpuPerInstance is the CPU the whole machine and the API server used
// between two processCPU, per instance of a burst of n, in ms.
func cpuPerInstance(before, after map[string]time.Duration, n int) (machine, apiserver float64) {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(n) }
	var total time.Duration
	for name, d := range after {
		total += d - before[name]
	}
	return ms(total), ms(after["kube-apiserver"] - before["kube-apiserver"])
}
