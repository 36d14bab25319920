package controlplane

import (
	"os"
	"os/exec"
	"syscall"
)

// Process is a process started for a test, a benchmark or the cluster
// itself, logging to a file and reaped as soon as it exits.
type Process struct {
	Cmd *exec.Cmd
	// Log is the path of the file its standard output and error go to.
	Log    string
	exited chan struct{}
}

// StartProcess starts cmd with its output appended to the file at log. The
// process dies with the test process that started it (dieWithParent), so a
// timed-out `go test` leaves nothing running.
func StartProcess(cmd *exec.Cmd, log string) (*Process, error) {
	dieWithParent(cmd)
	logFile, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, err
	}
	p := &Process{Cmd: cmd, Log: log, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); _ = logFile.Close(); close(p.exited) }()
	return p, nil
}

// Kill ends the process as a crash or an OOM kill would (SIGKILL, no
// cleanup) and returns once it has exited.
func (p *Process) Kill() {
	_ = p.Cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
}

// Stop ends the process as a rollout would (SIGTERM, its graceful
// shutdown) and returns once it has exited.
func (p *Process) Stop() {
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	<-p.exited
}

// Running reports whether the process has not exited.
func (p *Process) Running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Pid is the process's ID.
func (p *Process) Pid() int { return p.Cmd.Process.Pid }
