package controlplane

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// RestartControlPlane restarts the control plane as a control-plane node's
// reboot would: etcd, kube-apiserver, kube-controller-manager and
// kube-scheduler are killed (SIGKILL) and started again with the same command
// lines, data and certificates, then the API server is waited for. down is
// how long they stay down. KWOK's node and clients outside the control plane
// (the operator) keep running and keep their configuration.
func (c *Cluster) RestartControlPlane(ctx context.Context, down time.Duration) error {
	var restarts []*procInfo
	// Stopped in this order, started in the reverse one.
	for _, name := range []string{"kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd"} {
		p, err := findChild(name)
		if err != nil {
			return err
		}
		if err := syscall.Kill(p.pid, syscall.SIGKILL); err != nil {
			return fmt.Errorf("killing %s: %w", name, err)
		}
		if err := waitGone(ctx, p.pid); err != nil {
			return fmt.Errorf("%s did not exit: %w", name, err)
		}
		// Started again by StartProcess, it dies with this process.
		if c.reaper != nil {
			_ = c.reaper.Forget(p.pid)
		}
		restarts = append(restarts, p)
	}
	select {
	case <-time.After(down):
	case <-ctx.Done():
		return ctx.Err()
	}
	for i := len(restarts) - 1; i >= 0; i-- { // etcd first
		if i == 1 { // the controllers once the API server serves
			if err := c.waitReady(ctx); err != nil {
				return err
			}
		}
		r := restarts[i]
		if err := waitBindable(ctx, listenAddresses(r.argv)); err != nil {
			return fmt.Errorf("restarting %s: %w", r.argv[0], err)
		}
		cmd := exec.Command(r.argv[0], r.argv[1:]...)
		cmd.Env = r.env
		p, err := StartProcess(cmd, filepath.Join(c.LogDir, filepath.Base(r.argv[0])+".log"))
		if err != nil {
			return fmt.Errorf("restarting %s: %w", r.argv[0], err)
		}
		c.children = append(c.children, p)
	}
	return c.waitReady(ctx)
}

// waitReady waits until the API server answers /readyz.
func (c *Cluster) waitReady(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(body) == "ok", nil
	})
}

// procInfo is what it takes to start a process again.
type procInfo struct {
	pid  int
	argv []string
	env  []string
}

// findChild finds the one running child of this process whose executable
// is named name. envtest starts etcd and kube-apiserver without exposing
// their processes, so /proc is read.
func findChild(name string) (*procInfo, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split after the last ')'.
		rest := stat[bytes.LastIndexByte(stat, ')')+1:]
		fields := bytes.Fields(rest)
		if len(fields) < 2 || string(fields[0]) == "Z" || string(fields[1]) != strconv.Itoa(os.Getpid()) {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		argv := split0(cmdline)
		if len(argv) == 0 || filepath.Base(argv[0]) != name {
			continue
		}
		environ, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			return nil, err
		}
		return &procInfo{pid: pid, argv: argv, env: split0(environ)}, nil
	}
	return nil, fmt.Errorf("no running %s started by this process", name)
}

func split0(b []byte) []string {
	var out []string
	for _, part := range bytes.Split(bytes.TrimRight(b, "\x00"), []byte{0}) {
		if len(part) > 0 {
			out = append(out, string(part))
		}
	}
	return out
}

// waitGone waits until pid has exited.
func waitGone(ctx context.Context, pid int) error {
	return wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
		if err != nil {
			return true, nil //nolint:nilerr // no such process: gone
		}
		fields := bytes.Fields(stat[bytes.LastIndexByte(stat, ')')+1:])
		return len(fields) > 0 && string(fields[0]) == "Z", nil
	})
}

// listenAddresses are the host:ports a control-plane process listens on,
// read from its command line: etcd's client and peer URLs, the API server's
// secure port on its bind address.
func listenAddresses(argv []string) []string {
	var out []string
	bind, port := "0.0.0.0", ""
	for _, a := range argv {
		name, value, _ := strings.Cut(a, "=")
		switch name {
		case "--listen-client-urls", "--listen-peer-urls":
			for _, raw := range strings.Split(value, ",") {
				if u, err := url.Parse(raw); err == nil && u.Host != "" {
					out = append(out, u.Host)
				}
			}
		case "--bind-address":
			bind = value
		case "--secure-port":
			port = value
		}
	}
	if port != "" && port != "0" {
		out = append(out, net.JoinHostPort(bind, port))
	}
	return out
}

// waitBindable waits until every one of addresses can be listened on. A
// process killed with SIGKILL shows as a zombie once its main thread has
// exited, while its other threads, and so its listening sockets, may not
// have gone yet: started at once, its successor failed with "bind: address
// already in use".
func waitBindable(ctx context.Context, addresses []string) error {
	var busy error
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		for _, a := range addresses {
			ln, err := net.Listen("tcp", a)
			if err != nil {
				busy = err
				return false, nil //nolint:nilerr // in use: not yet
			}
			_ = ln.Close()
		}
		return true, nil
	})
	if err != nil && busy != nil {
		return fmt.Errorf("%w: %w", err, busy)
	}
	return err
}
