package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/test/builders"
)

// residentPoint is the operator's cost with n instances Running and left alone.
type residentPoint struct {
	N int `json:"n"`
	// Fill is how long the wave that brought the count to N took, from its
	// first create to its last Running.
	FillSeconds float64 `json:"fillSeconds"`
	RSSMiB      float64 `json:"rssMiB"`
	PeakRSSMiB  float64 `json:"peakRSSMiB"`
	// HeapInUseMiB is the Go heap in use after a garbage collection the
	// operator was asked for (pprof's heap profile with gc=1).
	HeapInUseMiB       float64 `json:"heapInUseMiB"`
	RequestsPerSecond  float64 `json:"restRequestsPerSecond"`
	CPUPercent         float64 `json:"restCPUPercent"`
	HeapProfile        string  `json:"heapProfile,omitempty"`
	PerInstanceKiB     float64 `json:"rssPerInstanceKiB"`
	HeapPerInstanceKiB float64 `json:"heapPerInstanceKiB"`
}

// resident creates instances in waves up to each of sizes on one control
// plane and one operator, and measures the operator at rest after each: what
// a CTF's live instances cost it, whatever bursts brought them.
func resident(cfg config, root, bin string) error {
	ctx := context.Background()
	cluster, cl, err := startCluster(ctx, root, cfg.webhooks)
	if err != nil {
		return err
	}
	defer cluster.Stop()
	args, err := oursArgs(cfg, cluster)
	if err != nil {
		return err
	}
	// The operator as it ships: its garbage collector aims under the
	// Deployment's memory limit, as the cgroup would make it in a pod.
	limit, err := shippedMemoryLimit(root)
	if err != nil {
		return err
	}
	_ = os.Setenv("GOMEMLIMIT", strconv.FormatInt(limit.Value()*9/10, 10))
	defer func() { _ = os.Unsetenv("GOMEMLIMIT") }()
	proc, err := startProcess(cluster, cfg, filepath.Join(bin, "manager"), args...)
	if err != nil {
		return err
	}
	defer proc.Kill()
	if err := waitMetrics(ctx); err != nil {
		return fmt.Errorf("%w (log: %s)", err, proc.Log)
	}
	running, err := countRunning(ctx, cl)
	if err != nil {
		return err
	}
	var points []residentPoint
	have := 0
	for _, n := range cfg.sizes {
		if n <= have {
			continue
		}
		fmt.Fprintf(os.Stderr, "== resident: %d to %d instances\n", have, n)
		start := time.Now()
		from := have
		if err := parallel(n-from, 8, func(i int) error {
			ch := builders.Challenge(benchNamespace, fmt.Sprintf("c-%05d", from+i), fmt.Sprintf("team-%05d", from+i))
			return cl.Create(ctx, ch)
		}); err != nil {
			return err
		}
		if err := wait.PollUntilContextTimeout(ctx, time.Second, time.Duration(n-from)*time.Second+10*time.Minute, true, func(context.Context) (bool, error) {
			return running() >= n, nil
		}); err != nil {
			return fmt.Errorf("%d of %d Running: %w (log: %s)", running(), n, err, proc.Log)
		}
		have = n
		p := residentPoint{N: n, FillSeconds: since(start, time.Now())}
		// At rest: after the burst's requeues and a minute of nothing.
		sleepUntil(time.Now().Add(60 * time.Second))
		a, err := proc.sample(controllerLabel("ours"))
		if err != nil {
			return err
		}
		sleepUntil(time.Now().Add(60 * time.Second))
		b, err := proc.sample(controllerLabel("ours"))
		if err != nil {
			return err
		}
		p.RequestsPerSecond, p.CPUPercent = rates(a, b)
		p.RSSMiB, p.PeakRSSMiB = proc.memory("VmRSS"), proc.memory("VmHWM")
		if cfg.profile != "" {
			p.HeapProfile = fmt.Sprintf("%s.%d", cfg.profile, n)
		}
		if p.HeapInUseMiB, err = heapInUse(p.HeapProfile); err != nil {
			return err
		}
		p.PerInstanceKiB = p.RSSMiB * 1024 / float64(n)
		p.HeapPerInstanceKiB = p.HeapInUseMiB * 1024 / float64(n)
		fmt.Fprintf(os.Stderr, "   %+v\n", p)
		points = append(points, p)
		if err := writeResident(cfg, limit, points); err != nil {
			return err
		}
	}
	return nil
}

// shippedMemoryLimit is the memory limit of the operator's Deployment in config/manager.
func shippedMemoryLimit(root string) (resource.Quantity, error) {
	data, err := os.ReadFile(filepath.Join(root, "config", "manager", "manager.yaml"))
	if err != nil {
		return resource.Quantity{}, err
	}
	for _, doc := range strings.Split(string(data), "\n---") {
		var dep appsv1.Deployment
		if err := yaml.Unmarshal([]byte(doc), &dep); err != nil || dep.Kind != "Deployment" {
			continue
		}
		for _, c := range dep.Spec.Template.Spec.Containers {
			if l, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
				return l, nil
			}
		}
	}
	return resource.Quantity{}, fmt.Errorf("config/manager/manager.yaml: no Deployment with a memory limit")
}

// countRunning watches the bench's Challenges and returns how many are Running now.
func countRunning(ctx context.Context, cl client.WithWatch) (func() int, error) {
	var mu sync.Mutex
	phases := map[string]ctfv1alpha1.Phase{}
	running := 0
	list := &ctfv1alpha1.ChallengeList{}
	w, err := cl.Watch(ctx, list, client.InNamespace(benchNamespace))
	if err != nil {
		return nil, err
	}
	go func() {
		for {
			for ev := range w.ResultChan() {
				ch, ok := ev.Object.(*ctfv1alpha1.Challenge)
				if !ok {
					continue
				}
				mu.Lock()
				was := phases[ch.Name]
				now := ch.Status.Phase
				if ev.Type == watch.Deleted {
					now = ""
				}
				phases[ch.Name] = now
				if was == ctfv1alpha1.PhaseRunning {
					running--
				}
				if now == ctfv1alpha1.PhaseRunning {
					running++
				}
				mu.Unlock()
			}
			if ctx.Err() != nil {
				return
			}
			// The API server ends watches now and then; a restarted watch
			// replays every object as Added, which the counts absorb.
			if w, err = cl.Watch(ctx, list, client.InNamespace(benchNamespace)); err != nil {
				return
			}
		}
	}()
	return func() int {
		mu.Lock()
		defer mu.Unlock()
		return running
	}, nil
}

// heapInUse asks the operator for its heap profile after a garbage
// collection, keeps it at path (when given) and returns the heap in use.
func heapInUse(path string) (float64, error) {
	resp, err := http.Get("http://" + pprofAddr + "/debug/pprof/heap?gc=1&debug=1")
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	text, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	inUse := 0.0
	for _, line := range strings.Split(string(text), "\n") {
		if _, err := fmt.Sscanf(line, "# HeapInuse = %f", &inUse); err == nil {
			break
		}
	}
	if path != "" {
		resp, err := http.Get("http://" + pprofAddr + "/debug/pprof/heap")
		if err != nil {
			return 0, err
		}
		defer func() { _ = resp.Body.Close() }()
		f, err := os.Create(path)
		if err != nil {
			return 0, err
		}
		defer func() { _ = f.Close() }()
		if _, err := io.Copy(f, resp.Body); err != nil {
			return 0, err
		}
	}
	return inUse / (1 << 20), nil
}

func writeResident(cfg config, limit resource.Quantity, points []residentPoint) error {
	return writeSection(cfg, points, residentReport(cfg, limit, points))
}

// residentReport is the report's resident section.
func residentReport(cfg config, limit resource.Quantity, points []residentPoint) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s One operator (pinned to CPU %s%s) on one local control plane "+
		"(kube-apiserver, etcd, controller-manager, scheduler, KWOK) is brought to each count in waves of plain Challenges "+
		"(8 creating at once, each its own team), and measured once they are all Running: from 60 to 120 s after the wave, "+
		"its API requests and CPU, then its RSS and the Go heap in use after a forced garbage collection. It runs with "+
		"GOMEMLIMIT at %.0f MiB, which it sets itself in a pod under the memory limit it ships with (%s, config/manager). One repetition.\n\n",
		cfg.run.line(cfg.raw), cfg.cpu, cfg.run.procs(), float64(limit.Value())*0.9/(1<<20), limit.String())
	fmt.Fprintf(&b, "Machine: %s.\n\n", cfg.run.Machine)
	fmt.Fprintf(&b, "| instances Running | wave: create to last Running (s) | RSS (MiB) | peak RSS (MiB) | heap in use (MiB) | RSS per instance (KiB) | heap per instance (KiB) | at rest: requests/s | at rest: CPU %% of a core |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, p := range points {
		fmt.Fprintf(&b, "| %d | %.0f | %.0f | %.0f | %.0f | %.1f | %.1f | %.3f | %.2f |\n", p.N, p.FillSeconds, p.RSSMiB, p.PeakRSSMiB, p.HeapInUseMiB,
			p.PerInstanceKiB, p.HeapPerInstanceKiB, p.RequestsPerSecond, p.CPUPercent)
	}
	return b.String()
}
