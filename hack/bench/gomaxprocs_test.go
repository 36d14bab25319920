package main

import (
	"testing"

	. "github.com/onsi/gomega"
)

// TestGoMaxProcsIsThePodsChoice: an operator pinned to one CPU runs with
// the GOMAXPROCS Go picks under the shipped CPU limit of 1 (2), not the 1
// an affinity of one CPU gives; pinned to more, with as many; a setting
// of the caller's is kept.
func TestGoMaxProcsIsThePodsChoice(t *testing.T) {
	g := NewWithT(t)
	for cpus, want := range map[string]string{"1": "GOMAXPROCS=2", "0-1": "GOMAXPROCS=2", "0-3": "GOMAXPROCS=4", "0,2,5": "GOMAXPROCS=3"} {
		g.Expect(goMaxProcs(cpus)).To(Equal(want), cpus)
	}
	_, err := goMaxProcs("one")
	g.Expect(err).To(MatchError(ContainSubstring(`-cpu "one"`)))
	t.Setenv("GOMAXPROCS", "1")
	g.Expect(goMaxProcs("1")).To(Equal("GOMAXPROCS=1"))
}
