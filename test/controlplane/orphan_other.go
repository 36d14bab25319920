//go:build !linux

package controlplane

import "os/exec"

// dieWithParent has no portable equivalent of Linux's parent-death signal;
// the reaper alone ends what a dead test process left.
func dieWithParent(*exec.Cmd) {}
