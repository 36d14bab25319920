package main

import "testing"

func TestParseStatReadsNameParentAndCPU(t *testing.T) {
	// A command name may hold spaces and parentheses: it ends at the last ')'.
	stat := "4242 (kube (api) server) S 17 4242 17 0 -1 4194560 1000 0 0 0 250 50 0 0 20 0 12 0 100 0 0"
	name, ppid, ticks, ok := parseStat(stat)
	if !ok || name != "kube (api) server" || ppid != 17 || ticks != 300 {
		t.Fatalf("parseStat = %q, %d, %d, %v; want \"kube (api) server\", 17, 300, true", name, ppid, ticks, ok)
	}
	if _, _, _, ok := parseStat("4242 (cut short) S 17"); ok {
		t.Fatal("a line cut short was read")
	}
}
