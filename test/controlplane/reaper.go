package controlplane

import (
	"fmt"
	"os"
	"os/exec"
	"sync"
)

// reaperScript keeps the process IDs it is told to watch ("watch <pid>"),
// forgets those it is told to ("forget <pid>"), exits at "done", and at the
// end of its input, which comes when the test process holding the pipe's
// other end dies, kills each watched process and its process group.
const reaperScript = `pids=" "
while read -r op pid; do
  case "$op" in
    watch) pids="$pids$pid " ;;
    forget) pids=$(printf '%s' "$pids" | sed "s/ $pid / /") ;;
    done) exit 0 ;;
  esac
done
for p in $pids; do kill -9 "-$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done
exit 0
`

// Reaper kills the processes a test process started but could not start
// with dieWithParent (envtest's etcd and kube-apiserver), once the test
// process is gone without stopping them: a `go test -timeout` panic exits at
// once, running no deferred Stop and no t.Cleanup.
type Reaper struct {
	mu  sync.Mutex
	in  *os.File // the pipe's write end, held by this process alone
	cmd *exec.Cmd
}

// StartReaper starts the reaper, a shell reading from a pipe this process
// alone holds open (os.Pipe's ends are close-on-exec).
func StartReaper() (*Reaper, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("/bin/sh", "-c", reaperScript)
	cmd.Stdin = r
	if err := cmd.Start(); err != nil {
		_ = r.Close()
		_ = w.Close()
		return nil, fmt.Errorf("starting the reaper: %w", err)
	}
	_ = r.Close()
	go func() { _ = cmd.Wait() }()
	return &Reaper{in: w, cmd: cmd}, nil
}

// Watch has the reaper kill pid, and its process group, if this process
// dies before it calls Forget or Close.
func (r *Reaper) Watch(pid int) error { return r.say("watch", pid) }

// Forget tells the reaper that pid was ended, so that it never kills
// another process given the same ID.
func (r *Reaper) Forget(pid int) error { return r.say("forget", pid) }

// Close stops the reaper without killing anything: whoever calls it has
// stopped what it watched.
func (r *Reaper) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.in == nil {
		return
	}
	_, _ = fmt.Fprintln(r.in, "done 0")
	_ = r.in.Close()
	r.in = nil
}

func (r *Reaper) say(op string, pid int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.in == nil {
		return fmt.Errorf("the reaper is closed")
	}
	_, err := fmt.Fprintf(r.in, "%s %d\n", op, pid)
	return err
}
