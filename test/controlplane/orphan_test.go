package controlplane

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// orphanHelperEnv names the directory TestOrphanHelper logs to, when it runs
// as the subprocess of TestNothingOutlivesATimedOutTest.
const orphanHelperEnv = "CONTROLPLANE_ORPHAN_HELPER"

// TestNothingOutlivesATimedOutTest: a test process that `go test -timeout`
// ends (its panic runs no deferred Stop, no t.Cleanup) leaves nothing
// running: neither a process it started with StartProcess (KWOK, the
// controllers, the operator, a restarted etcd or kube-apiserver) nor one
// started as envtest starts etcd and kube-apiserver, in a process group of
// its own, that the reaper watches.
func TestNothingOutlivesATimedOutTest(t *testing.T) {
	g := NewWithT(t)
	helper := exec.Command(os.Args[0], "-test.run=^TestOrphanHelper$", "-test.timeout=3s", "-test.v")
	helper.Env = append(os.Environ(), orphanHelperEnv+"="+t.TempDir())
	stdin, err := helper.StdinPipe() // never closed: the helper waits for its timeout
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = stdin.Close() }()
	var out bytes.Buffer
	stdout, err := helper.StdoutPipe()
	g.Expect(err).NotTo(HaveOccurred())
	helper.Stderr = &out
	g.Expect(helper.Start()).To(Succeed())

	var started, envtestLike int
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		if n, _ := fmt.Sscanf(lines.Text(), "pids %d %d", &started, &envtestLike); n == 2 {
			break
		}
		out.WriteString(lines.Text() + "\n")
	}
	g.Expect(started).NotTo(BeZero(), "the helper's output:\n%s", out.String())
	t.Cleanup(func() { _ = syscall.Kill(started, syscall.SIGKILL); _ = syscall.Kill(-envtestLike, syscall.SIGKILL) })
	g.Expect(alive(started)).To(BeTrue())
	g.Expect(alive(envtestLike)).To(BeTrue())

	rest, _ := io.ReadAll(stdout)
	out.Write(rest)
	g.Expect(helper.Wait()).To(HaveOccurred())
	g.Expect(out.String()).To(ContainSubstring("test timed out after 3s"), "the helper ended by -timeout's panic")

	g.Eventually(func() bool { return alive(started) }, 10*time.Second, 50*time.Millisecond).Should(BeFalse(), "the process StartProcess started outlived its test")
	g.Eventually(func() bool { return alive(envtestLike) }, 10*time.Second, 50*time.Millisecond).Should(BeFalse(), "the process the reaper watched outlived its test")
}

// TestOrphanHelper is TestNothingOutlivesATimedOutTest's subprocess: it
// starts a process with StartProcess and one in a process group of its own,
// watched by a reaper, prints their IDs and waits for -timeout to end it.
func TestOrphanHelper(t *testing.T) {
	dir := os.Getenv(orphanHelperEnv)
	if dir == "" {
		t.Skip("the subprocess of TestNothingOutlivesATimedOutTest")
	}
	p, err := StartProcess(exec.Command("sleep", "600"), filepath.Join(dir, "sleep.log"))
	if err != nil {
		t.Fatal(err)
	}
	reaper, err := StartReaper()
	if err != nil {
		t.Fatal(err)
	}
	envtestLike := exec.Command("sleep", "600")
	envtestLike.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // as envtest starts etcd
	if err := envtestLike.Start(); err != nil {
		t.Fatal(err)
	}
	if err := reaper.Watch(envtestLike.Process.Pid); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("pids %d %d\n", p.Pid(), envtestLike.Process.Pid)
	_, _ = io.ReadAll(os.Stdin) // until the timeout's panic
}

// alive reports whether pid is a process that has not exited (a zombie,
// exited but not yet reaped by its new parent, is not).
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	rest := stat[bytes.LastIndexByte(stat, ')')+1:]
	fields := bytes.Fields(rest)
	return len(fields) > 0 && string(fields[0]) != "Z"
}
