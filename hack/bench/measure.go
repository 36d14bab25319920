package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/cpuset"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/instancer"
	"github.com/challenge-operator/challenge-operator/internal/render"
	"github.com/challenge-operator/challenge-operator/internal/values"
	"github.com/challenge-operator/challenge-operator/test/builders"
	"github.com/challenge-operator/challenge-operator/test/controlplane"
	"github.com/challenge-operator/challenge-operator/test/harness"
)

const (
	benchNamespace = "bench"
	// poolNamespace holds the pooled instances of the pooled systems.
	poolNamespace  = "bench-pool"
	pooledTemplate = "bench"
	instanceLabel  = ctfv1alpha1.InstanceLabel
)

// The addresses the processes under measurement serve on, free ones drawn
// at start: with fixed ports, a second bench on the machine found the
// first one's operator answering on them while its own could not listen,
// and measured the wrong process.
var metricsAddr, pprofAddr, instancerAddr, instancerProbeAddr = func() (string, string, string, string) {
	a := freeAddrs(4)
	return a[0], a[1], a[2], a[3]
}()

// freeAddrs are n distinct local addresses no process listens on now.
func freeAddrs(n int) []string {
	addrs := make([]string, 0, n)
	for range n {
		// Held open until all are drawn, so that no two are the same.
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			panic(fmt.Sprintf("finding a free port: %v", err))
		}
		defer func() { _ = l.Close() }()
		addrs = append(addrs, l.Addr().String())
	}
	return addrs
}

// stockGVK is the kind the stock helm-operator reconciles: a CR whose spec is the values.
var stockGVK = schema.GroupVersionKind{Group: "bench.challenge-operator.io", Version: "v1", Kind: "StockChallenge"}

func stockCRD() *apiextensionsv1.CustomResourceDefinition {
	preserve := true
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "stockchallenges." + stockGVK.Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: stockGVK.Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: stockGVK.Kind, ListKind: stockGVK.Kind + "List", Plural: "stockchallenges", Singular: "stockchallenge"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: stockGVK.Version, Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: &preserve,
				}},
			}},
		},
	}
}

// startCluster starts a fresh control plane with the project's CRDs and the
// stock helm-operator's, creates the bench namespace and returns a client.
// With webhooks, the API server calls the operator's webhooks (oursArgs
// serves them), as the OLM bundle installs them.
func startCluster(ctx context.Context, root string, webhooks bool) (*controlplane.Cluster, client.WithWatch, error) {
	opts := controlplane.Options{
		CRDDirectoryPaths: []string{filepath.Join(root, "config", "crd", "bases")},
		CRDs:              []*apiextensionsv1.CustomResourceDefinition{stockCRD()},
	}
	if webhooks {
		validating, mutating, err := harness.GeneratedWebhooks()
		if err != nil {
			return nil, nil, err
		}
		opts.ValidatingWebhooks = []*admissionregistrationv1.ValidatingWebhookConfiguration{validating}
		opts.MutatingWebhooks = []*admissionregistrationv1.MutatingWebhookConfiguration{mutating}
	}
	cluster, err := controlplane.Start(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	scheme := runtime.NewScheme()
	err = errors.Join(clientgoscheme.AddToScheme(scheme), ctfv1alpha1.AddToScheme(scheme))
	var cl client.WithWatch
	if err == nil {
		cl, err = client.NewWithWatch(cluster.Config, client.Options{Scheme: scheme})
	}
	if err == nil {
		err = cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNamespace}})
	}
	if err != nil {
		cluster.Stop()
		return nil, nil, err
	}
	return cluster, cl, nil
}

// oursArgs are challenge-operator's flags in every bench, then -ours-flags;
// with -webhooks, as the OLM bundle runs it, its webhooks served to cluster.
func oursArgs(cfg config, cluster *controlplane.Cluster) ([]string, error) {
	watches, err := harness.WatchesFile()
	if err != nil {
		return nil, err
	}
	args := []string{"--watches-file=" + watches,
		"--metrics-bind-address=" + metricsAddr, "--metrics-secure=false", "--health-probe-bind-address=0", "--leader-elect=false",
		"--flag-secret-namespaces=" + benchNamespace, "--zap-log-level=info", "--pprof-bind-address=" + pprofAddr}
	if cfg.webhooks {
		_, port, certDir := cluster.Webhook()
		args = append(args, "--enable-webhook", fmt.Sprintf("--webhook-port=%d", port), "--webhook-cert-dir="+certDir)
	}
	return append(args, cfg.flags...), nil
}

// measure runs one burst of n for one system on a fresh control plane.
func measure(cfg config, root, bin, sys string, n int) (result, error) {
	ctx := context.Background()
	r := result{System: sys, N: n}
	cluster, cl, err := startCluster(ctx, root, cfg.webhooks && isOurs(sys))
	if err != nil {
		return r, err
	}
	defer cluster.Stop()
	poolSize, pooled := poolSizeOf(sys, n)
	r.PoolSize = poolSize
	if sys == claimFloor {
		r.PoolSize = n
	}
	chs := make([]*ctfv1alpha1.Challenge, n)
	for i := range chs {
		chs[i] = builders.Challenge(benchNamespace, fmt.Sprintf("c-%04d", i), fmt.Sprintf("team-%04d", i))
		if pooled || sys == claimFloor {
			chs[i] = builders.FromTemplate(benchNamespace, chs[i].Name, chs[i].Spec.Participant, pooledTemplate)
		}
		if viaInstancer(sys) {
			chs[i].Name = instancer.InstanceName(instancer.NameKey(benchKeys), pooledTemplate, chs[i].Spec.Participant)
		}
	}
	var floor *floorClaims
	var create func(i int) error
	if sys == claimFloor {
		if floor, err = fillFloorPool(ctx, cl, n); err == nil {
			create = floor.create(ctx, chs)
		}
	} else {
		create, err = creator(ctx, cl, cluster, sys, chs, root)
	}
	if err != nil {
		return r, err
	}

	var proc process
	switch {
	case isOurs(sys):
		args, err := oursArgs(cfg, cluster)
		if err != nil {
			return r, err
		}
		if pooled {
			args = append(args, "--pool-namespace="+poolNamespace)
		}
		if withFlags(sys) {
			extra, err := flagArgs(cluster.LogDir)
			if err != nil {
				return r, err
			}
			args = append(args, extra...)
			writers, stopWriters := context.WithCancel(ctx)
			defer stopWriters()
			go answerWriters(writers, cl)
		}
		proc, err = startProcess(cluster, cfg, filepath.Join(bin, "manager"), args...)
		if err != nil {
			return r, err
		}
	case sys == "stock":
		watches := filepath.Join(cluster.LogDir, "stock-watches.yaml")
		content := fmt.Sprintf("- group: %s\n  version: %s\n  kind: %s\n  chart: %s\n", stockGVK.Group, stockGVK.Version, stockGVK.Kind, filepath.Join(root, "charts", "challenge"))
		if err := os.WriteFile(watches, []byte(content), 0o644); err != nil {
			return r, err
		}
		proc, err = startProcess(cluster, cfg, filepath.Join(bin, "helm-operator"), "run", "--watches-file="+watches,
			"--metrics-bind-address="+metricsAddr, "--health-probe-bind-address=0", "--zap-log-level=info")
		if err != nil {
			return r, err
		}
	}
	if proc.Process != nil {
		defer proc.Kill()
		if err := waitMetrics(ctx); err != nil {
			return r, fmt.Errorf("%w (log: %s)", err, proc.Log)
		}
	}
	if pooled {
		if err := fillPool(ctx, cl, proc, int32(poolSize), withFlags(sys), &r); err != nil {
			return r, err
		}
	}
	if viaInstancer(sys) {
		var p *controlplane.Process
		create, p, err = startInstancer(ctx, cluster, bin, chs)
		if p != nil {
			defer p.Kill()
		}
		if err != nil {
			return r, err
		}
	}

	created := make([]time.Time, n)
	readyCh := make(chan map[string]time.Time, 1)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	if floor == nil {
		if err := watchReady(watchCtx, cl, sys, n, readyCh); err != nil {
			return r, err
		}
	}
	var burstRequestsBefore map[string]requests
	var operatorBefore string // the operator's metrics, BENCH_DEBUG only
	// stopTimeline ends the timeline 10 s after the last Running, with the burst's requests.
	timelineCtx, stopTimeline := context.WithCancel(ctx)
	defer stopTimeline()
	if os.Getenv("BENCH_DEBUG") != "" {
		burstRequestsBefore = apiserverRequests(ctx, cluster.Config)
		operatorBefore, _ = scrape()
		if proc.Process != nil {
			go timeline(timelineCtx, time.Now())
		}
	}
	var beforeBurst sample
	if proc.Process != nil {
		if beforeBurst, err = proc.sample(controllerLabel(sys)); err != nil {
			return r, err
		}
	}
	cpuBefore := processCPU()
	start := time.Now()
	profiled := make(chan error, 2)
	switch seconds := cmp.Or(cfg.profileSeconds, profileSeconds(n)); {
	case cfg.profile != "" && isOurs(sys):
		go func() { profiled <- cpuProfile(cfg.profile, seconds) }()
		go func() { profiled <- apiserverProfile(cluster.Config, cfg.profile+".apiserver", seconds) }()
	case cfg.profile != "" && isFloor(sys):
		profiled <- nil
		go func() { profiled <- apiserverProfile(cluster.Config, cfg.profile+"."+sys+".apiserver", seconds) }()
	default:
		profiled <- nil
		profiled <- nil
	}
	workers := 8
	if sys == "kubectl" {
		workers = 1 // the floor: one kubectl apply after another
	}
	if err := parallel(n, workers, func(i int) error {
		created[i] = time.Now()
		return create(i)
	}); err != nil {
		return r, err
	}
	if os.Getenv("BENCH_DEBUG") != "" {
		fmt.Fprintf(os.Stderr, "+%5.1fs the last create answered\n", since(start, time.Now()))
	}
	var ready map[string]time.Time
	if floor != nil {
		if ready, err = floor.wait(); err != nil {
			return r, err
		}
		r.RequestsPerInstance = floor.requestsPerClaim(n)
		r.RequestsToRunningPerInstance = r.RequestsPerInstance
	} else {
		select {
		case ready = <-readyCh:
		case <-time.After(time.Duration(n)*time.Second + 10*time.Minute):
			return r, fmt.Errorf("not all %d Running in time", n)
		}
	}
	last := start
	var latencies []float64
	for i, ch := range chs {
		t := ready[ch.Name]
		if t.After(last) {
			last = t
		}
		latencies = append(latencies, since(created[i], t))
	}
	r.AllRunning = since(start, last)
	cpuAtLast := processCPU()
	r.MachineCPUPerInstanceMs, r.APIServerCPUPerInstanceMs = cpuPerInstance(cpuBefore, cpuAtLast, n)
	if proc.Process != nil {
		atLast, err := proc.sample(controllerLabel(sys))
		if err != nil {
			return r, err
		}
		r.RequestsToRunningPerInstance = (atLast.requests - beforeBurst.requests) / float64(n)
	}
	if burstRequestsBefore != nil {
		printRequestDiff("burst, until the last Running", burstRequestsBefore, apiserverRequests(ctx, cluster.Config))
		printReconcileTimes(operatorBefore)
		printCPU("burst, until the last Running", cpuBefore, cpuAtLast, n)
		printObjectSizes(ctx, cl)
	}
	for range 2 {
		if err := <-profiled; err != nil {
			return r, err
		}
	}
	r.P50, r.P95, r.P99 = percentile(latencies, 0.5), percentile(latencies, 0.95), percentile(latencies, 0.99)

	if proc.Process != nil {
		controllerLabel := controllerLabel(sys)
		sleepUntil(last.Add(10 * time.Second))
		stopTimeline()
		a, err := proc.sample(controllerLabel)
		if err != nil {
			return r, err
		}
		if burstRequestsBefore != nil {
			printRequestDiff("burst, until 10 s after the last Running", burstRequestsBefore, apiserverRequests(ctx, cluster.Config))
		}
		sleepUntil(last.Add(70 * time.Second))
		b, err := proc.sample(controllerLabel)
		if err != nil {
			return r, err
		}
		r.AfterRequestsPerSecond, r.AfterCPUPercent = rates(a, b)
		r.RequestsPerInstance = a.requests / float64(n)
		r.HelmReconcilesPerInstance = b.reconciles / float64(n)
		if cfg.idle {
			sleepUntil(last.Add(300 * time.Second))
			a, err := proc.sample(controllerLabel)
			if err != nil {
				return r, err
			}
			sleepUntil(last.Add(360 * time.Second))
			b, err := proc.sample(controllerLabel)
			if err != nil {
				return r, err
			}
			r.IdleRequestsPerSecond, r.IdleCPUPercent = rates(a, b)
		}
		r.PeakRSSMiB = proc.memory("VmHWM")
		if cfg.secrets > 0 {
			before := proc.memory("VmRSS")
			if err := unrelatedSecrets(ctx, cl, cfg.secrets); err != nil {
				return r, err
			}
			sleepUntil(time.Now().Add(20 * time.Second)) // let the caches settle, if they hold the Secrets
			r.SecretsGrowthMiB = proc.memory("VmRSS") - before
		}
	}

	var before sample
	if proc.Process != nil {
		if before, err = proc.sample(controllerLabel(sys)); err != nil {
			return r, err
		}
	}
	deleteProfiled := make(chan error, 1)
	if cfg.profile != "" && isOurs(sys) {
		go func() { deleteProfiled <- cpuProfile(cfg.profile+".delete", profileSeconds(n)) }()
	} else {
		deleteProfiled <- nil
	}
	debug := os.Getenv("BENCH_DEBUG") != ""
	var requestsBefore map[string]requests
	if debug {
		requestsBefore = apiserverRequests(ctx, cluster.Config)
	}
	t0 := time.Now()
	if err := deleteAll(ctx, cl, sys); err != nil {
		return r, err
	}
	if err := wait.PollUntilContextTimeout(ctx, time.Second, 30*time.Minute, true, func(ctx context.Context) (bool, error) {
		return nothingLeft(ctx, cl, sys)
	}); err != nil {
		return r, fmt.Errorf("delete all: %w", err)
	}
	r.DeleteAll = since(t0, time.Now())
	if debug {
		printRequestDiff("delete", requestsBefore, apiserverRequests(ctx, cluster.Config))
	}
	if proc.Process != nil {
		after, err := proc.sample(controllerLabel(sys))
		if err != nil {
			return r, err
		}
		r.DeleteRequestsPerInstance = (after.requests - before.requests) / float64(n)
		r.DeleteReconcilesPerInstance = (after.reconciles - before.reconciles) / float64(n)
		if os.Getenv("BENCH_DEBUG") != "" {
			_, cpu := rates(before, after)
			fmt.Fprintf(os.Stderr, "delete: %.0f%% of a core\n", cpu)
		}
	}
	return r, <-deleteProfiled
}

// controllerLabel selects the Helm controller's reconcile metrics of sys.
func controllerLabel(sys string) string {
	if sys == "stock" {
		return `controller="stockchallenge-controller"`
	}
	return `controller="challenge-controller"`
}

// creator returns how instance i is created for sys; the floor's manifests
// are rendered here, before the clock starts.
func creator(ctx context.Context, cl client.Client, cluster *controlplane.Cluster, sys string, chs []*ctfv1alpha1.Challenge, root string) (func(i int) error, error) {
	if isOurs(sys) {
		return func(i int) error { return cl.Create(ctx, chs[i].DeepCopy()) }, nil
	}
	switch sys {
	case "stock", "floor", "kubectl":
	default:
		return nil, fmt.Errorf("unknown system %q: want ours, stock, floor or kubectl", sys)
	}
	translator := render.Translator{Rules: values.Rules{Settings: values.Settings{FlagSecretNamespaces: []string{benchNamespace}}}}
	vals := make([]map[string]any, len(chs))
	for i, ch := range chs {
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ch)
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{Object: obj}
		u.SetGroupVersionKind(ctfv1alpha1.GroupVersion.WithKind("Challenge"))
		v, err := translator.Translate(ctx, u)
		if err != nil {
			return nil, fmt.Errorf("values of %s: %w", ch.Name, err)
		}
		vals[i] = v.AsMap()
	}
	if sys == "stock" {
		return func(i int) error {
			u := &unstructured.Unstructured{Object: map[string]any{"spec": vals[i]}}
			u.SetGroupVersionKind(stockGVK)
			u.SetNamespace(benchNamespace)
			u.SetName(chs[i].Name)
			return cl.Create(ctx, u)
		}, nil
	}
	chrt, err := loader.Load(filepath.Join(root, "charts", "challenge"))
	if err != nil {
		return nil, err
	}
	objects := make([][]*unstructured.Unstructured, len(chs))
	for i, ch := range chs {
		install := action.NewInstall(&action.Configuration{})
		install.DryRun, install.ClientOnly, install.Replace = true, true, true
		install.ReleaseName, install.Namespace = ch.Name, benchNamespace
		install.KubeVersion = &chartutil.KubeVersion{Version: "v1.35.4", Major: "1", Minor: "35"}
		rel, err := install.Run(chrt, vals[i])
		if err != nil {
			return nil, fmt.Errorf("rendering %s: %w", ch.Name, err)
		}
		for _, doc := range strings.Split(rel.Manifest, "\n---") {
			m := map[string]any{}
			if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
				return nil, err
			}
			if len(m) == 0 {
				continue
			}
			u := &unstructured.Unstructured{Object: m}
			if u.GetNamespace() == "" {
				u.SetNamespace(benchNamespace)
			}
			objects[i] = append(objects[i], u)
		}
	}
	if sys == "kubectl" {
		return kubectlApply(cluster, objects)
	}
	return func(i int) error {
		for _, obj := range objects[i] {
			//nolint:staticcheck // server-side apply of unstructured objects, as kubectl apply --server-side does
			if err := cl.Patch(ctx, obj.DeepCopy(), client.Apply, client.FieldOwner("bench-floor"), client.ForceOwnership); err != nil {
				return fmt.Errorf("applying %s %s: %w", obj.GetKind(), obj.GetName(), err)
			}
		}
		return nil
	}, nil
}

// kubectlApply writes each instance's objects to a file and returns a
// function that applies instance i's with kubectl apply --server-side.
func kubectlApply(cluster *controlplane.Cluster, objects [][]*unstructured.Unstructured) (func(i int) error, error) {
	assets, err := controlplane.AssetsDir()
	if err != nil {
		return nil, err
	}
	kubectl := filepath.Join(assets, "kubectl")
	if _, err := os.Stat(kubectl); err != nil {
		return nil, fmt.Errorf("the kubectl floor needs kubectl: run hack/test-bins.sh --with-kubectl (%w)", err)
	}
	files := make([]string, len(objects))
	for i, objs := range objects {
		var docs []string
		for _, obj := range objs {
			doc, err := yaml.Marshal(obj.Object)
			if err != nil {
				return nil, err
			}
			docs = append(docs, string(doc))
		}
		files[i] = filepath.Join(cluster.LogDir, fmt.Sprintf("instance-%04d.yaml", i))
		if err := os.WriteFile(files[i], []byte(strings.Join(docs, "---\n")), 0o644); err != nil {
			return nil, err
		}
	}
	return func(i int) error {
		out, err := exec.Command(kubectl, "--kubeconfig="+cluster.Kubeconfig, "apply", "--server-side", "-f", files[i]).CombinedOutput()
		if err != nil {
			return fmt.Errorf("kubectl apply %s: %w: %s", files[i], err, out)
		}
		return nil
	}, nil
}

// watchReady sends, once all n are Running (ours) or Available, when each became so.
func watchReady(ctx context.Context, cl client.WithWatch, sys string, n int, out chan<- map[string]time.Time) error {
	var list client.ObjectList = &appsv1.DeploymentList{}
	if isOurs(sys) {
		list = &ctfv1alpha1.ChallengeList{}
	}
	w, err := cl.Watch(ctx, list, client.InNamespace(benchNamespace))
	if err != nil {
		return err
	}
	go func() {
		ready := map[string]time.Time{}
		resourceVersion, restarts := "", 0
		for {
			for ev := range w.ResultChan() {
				if ev.Type == watch.Error {
					resourceVersion = "" // too old: start again from the current state
					continue
				}
				o, ok := ev.Object.(client.Object)
				if !ok {
					continue
				}
				resourceVersion = o.GetResourceVersion()
				if ev.Type != watch.Added && ev.Type != watch.Modified {
					continue
				}
				name, ok := "", false
				switch o := o.(type) {
				case *ctfv1alpha1.Challenge:
					name, ok = o.Name, o.Status.Phase == ctfv1alpha1.PhaseRunning
				case *appsv1.Deployment:
					name, ok = o.Labels[instanceLabel], o.Status.AvailableReplicas > 0
				}
				if _, seen := ready[name]; ok && name != "" && !seen {
					ready[name] = time.Now()
					if len(ready) == n {
						if restarts > 0 && os.Getenv("BENCH_DEBUG") != "" {
							fmt.Fprintf(os.Stderr, "the bench's watch of %s was ended and started again %d times\n", sys, restarts)
						}
						out <- ready
						return
					}
				}
			}
			if ctx.Err() != nil {
				return
			}
			// The API server ends watches now and then, and one whose reader
			// falls behind in a burst: start again where it ended. From no
			// version it would send every object again, hundreds of them, on
			// the CPU of the system measured.
			restarts++
			if w, err = cl.Watch(ctx, list, client.InNamespace(benchNamespace), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: resourceVersion}}); err != nil {
				return
			}
		}
	}()
	return nil
}

func deleteAll(ctx context.Context, cl client.Client, sys string) error {
	if sys == claimFloor {
		// No operator deletes the claimed instances with their claimants.
		for _, ns := range []string{benchNamespace, poolNamespace} {
			if err := cl.DeleteAllOf(ctx, &ctfv1alpha1.Challenge{}, client.InNamespace(ns)); err != nil {
				return err
			}
		}
		return cl.Delete(ctx, &ctfv1alpha1.ChallengeTemplate{ObjectMeta: metav1.ObjectMeta{Name: pooledTemplate}})
	}
	if _, pooled := poolSizeOf(sys, 0); pooled {
		if err := cl.DeleteAllOf(ctx, &ctfv1alpha1.Challenge{}, client.InNamespace(benchNamespace)); err != nil {
			return err
		}
		// Its unclaimed instances go with it.
		return cl.Delete(ctx, &ctfv1alpha1.ChallengeTemplate{ObjectMeta: metav1.ObjectMeta{Name: pooledTemplate}})
	}
	switch sys {
	case "ours":
		return cl.DeleteAllOf(ctx, &ctfv1alpha1.Challenge{}, client.InNamespace(benchNamespace))
	case "stock":
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(stockGVK)
		return cl.DeleteAllOf(ctx, u, client.InNamespace(benchNamespace))
	}
	has := client.HasLabels{instanceLabel}
	for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}, &corev1.ServiceAccount{}, &networkingv1.NetworkPolicy{}, &corev1.Secret{}} {
		if err := cl.DeleteAllOf(ctx, obj, client.InNamespace(benchNamespace), has, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
			return err
		}
	}
	return nil
}

// nothingLeft reports whether no instance object, pod, release record or CR is left.
func nothingLeft(ctx context.Context, cl client.Client, sys string) (bool, error) {
	if _, pooled := poolSizeOf(sys, 0); pooled || sys == claimFloor {
		if done, err := nothingLeftIn(ctx, cl, poolNamespace); !done || err != nil {
			return done, err
		}
	}
	return nothingLeftIn(ctx, cl, benchNamespace)
}

// nothingLeftIn reports whether no instance object, pod, release record or CR is left in ns.
func nothingLeftIn(ctx context.Context, cl client.Client, ns string) (bool, error) {
	in := client.InNamespace(ns)
	stock := &unstructured.UnstructuredList{}
	stock.SetGroupVersionKind(stockGVK.GroupVersion().WithKind(stockGVK.Kind + "List"))
	lists := []struct {
		list client.ObjectList
		opts []client.ListOption
	}{
		{&ctfv1alpha1.ChallengeList{}, []client.ListOption{in}},
		{stock, []client.ListOption{in}},
		{&corev1.SecretList{}, []client.ListOption{in, client.MatchingLabels{"owner": "helm"}}},
		{&appsv1.DeploymentList{}, []client.ListOption{in, client.HasLabels{instanceLabel}}},
		{&corev1.PodList{}, []client.ListOption{in, client.HasLabels{instanceLabel}}},
		{&corev1.ServiceList{}, []client.ListOption{in, client.HasLabels{instanceLabel}}},
		{&corev1.ServiceAccountList{}, []client.ListOption{in, client.HasLabels{instanceLabel}}},
		{&networkingv1.NetworkPolicyList{}, []client.ListOption{in, client.HasLabels{instanceLabel}}},
	}
	debug := os.Getenv("BENCH_DEBUG") != ""
	left := []string{}
	for _, l := range lists {
		if err := cl.List(ctx, l.list, l.opts...); err != nil {
			return false, err
		}
		if n := apimeta.LenList(l.list); n > 0 {
			if !debug {
				return false, nil
			}
			left = append(left, fmt.Sprintf("%d %T", n, l.list))
		}
	}
	if len(left) > 0 {
		fmt.Fprintf(os.Stderr, "%s left: %s\n", time.Now().Format("15:04:05"), strings.Join(left, ", "))
	}
	return len(left) == 0, nil
}

// unrelatedSecrets creates count 32 KiB Secrets the operator has no business with.
func unrelatedSecrets(ctx context.Context, cl client.Client, count int) error {
	if err := cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "unrelated"}}); err != nil {
		return err
	}
	payload := bytes.Repeat([]byte("x"), 32*1024)
	return parallel(count, 16, func(i int) error {
		return cl.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("unrelated-%05d", i), Namespace: "unrelated"},
			Data:       map[string][]byte{"blob": payload},
		})
	})
}

// parallel runs f(0..n-1) on workers goroutines and returns the first error.
func parallel(n, workers int, f func(i int) error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				if err := f(i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func sleepUntil(t time.Time) { time.Sleep(time.Until(t)) }

// process is an operator under measurement.
type process struct{ *controlplane.Process }

// startProcess starts an operator pinned to -cpu, with the run's GOMAXPROCS:
// the setting its report states.
func startProcess(cluster *controlplane.Cluster, cfg config, path string, args ...string) (process, error) {
	// taskset execs the operator in its own place: the PID is the operator's.
	cmd := exec.Command("taskset", append([]string{"-c", cfg.cpu, path}, args...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cluster.Kubeconfig, "POD_NAMESPACE="+benchNamespace, cfg.run.GoMaxProcs)
	p, err := controlplane.StartProcess(cmd, filepath.Join(cluster.LogDir, filepath.Base(path)+".log"))
	return process{p}, err
}

// goMaxProcs is the GOMAXPROCS setting of an operator pinned to cpus (a
// taskset list): the one Go chooses in the shipped pod, whose CPU limit
// stands for the pinning. Go reads a CPU limit below 2 as 2 (on a node of
// at least two CPUs), where an affinity of one CPU would make it 1: a
// single P, on which a webhook's answer waits behind reconciles for the
// 10 ms of a time slice. A GOMAXPROCS of the caller's own is kept.
func goMaxProcs(cpus string) (string, error) {
	if v, ok := os.LookupEnv("GOMAXPROCS"); ok {
		return "GOMAXPROCS=" + v, nil
	}
	set, err := cpuset.Parse(cpus)
	if err != nil {
		return "", fmt.Errorf("-cpu %q: %w", cpus, err)
	}
	return fmt.Sprintf("GOMAXPROCS=%d", max(2, set.Size())), nil
}

// sample is a process's counters at one moment.
type sample struct {
	at                   time.Time
	requests, reconciles float64
	cpuSeconds           float64
}

func (p process) sample(controllerLabel string) (sample, error) {
	s := sample{at: time.Now()}
	body, err := scrape()
	if err != nil {
		return s, err
	}
	s.requests = sentRequests(body)
	if os.Getenv("BENCH_DEBUG") != "" {
		for _, line := range strings.Split(body, "\n") {
			if strings.HasPrefix(line, "rest_client_requests_total") || strings.HasPrefix(line, "controller_runtime_reconcile_total") ||
				strings.HasPrefix(line, "challenge_helm_requests_answered_total") {
				fmt.Fprintln(os.Stderr, line)
			}
		}
	}
	s.reconciles = sum(body, "controller_runtime_reconcile_total", controllerLabel)
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.Pid()))
	if err != nil {
		return s, err
	}
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+2:]))
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	s.cpuSeconds = (utime + stime) / 100 // USER_HZ
	return s, nil
}

func rates(a, b sample) (requestsPerSecond, cpuPercent float64) {
	d := b.at.Sub(a.at).Seconds()
	return (b.requests - a.requests) / d, 100 * (b.cpuSeconds - a.cpuSeconds) / d
}

// memory reads a VmRSS-style field of /proc/pid/status, in MiB.
func (p process) memory(field string) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Pid()))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, field+":") {
			kb, _ := strconv.ParseFloat(strings.Fields(line)[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// requests are the API server's requests of one kind since it started: how
// many, and the seconds they took in all (watches' included, which last as
// long as they are open).
type requests struct{ n, seconds float64 }

// apiserverRequests counts the API server's requests by verb, resource and
// subresource (all clients): BENCH_DEBUG prints where a phase's requests go.
func apiserverRequests(ctx context.Context, cfg *rest.Config) map[string]requests {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil
	}
	body, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil
	}
	return requestsIn(string(body))
}

// requestsIn reads apiserverRequests' rows from the API server's metrics.
func requestsIn(body string) map[string]requests {
	const total, seconds = "apiserver_request_total{", "apiserver_request_duration_seconds_sum{"
	// The API server allocates Services' ClusterIPs one at a time, under one
	// lock, each a create of an IPAddress: their mean time is the most
	// Services it can create a second.
	const allocations, allocating = "kube_apiserver_clusterip_allocator_allocation_duration_seconds_count{", "kube_apiserver_clusterip_allocator_allocation_duration_seconds_sum{"
	// A watcher that falls behind is closed by the API server, and its
	// client watches again: in a burst, a sign of a client short of CPU.
	const terminated = "apiserver_terminated_watchers_total{"
	counts := map[string]requests{}
	for _, line := range strings.Split(body, "\n") {
		if v, ok := metricValue(line, terminated); ok {
			_, labels, _ := strings.Cut(line, `resource="`)
			resource, _, _ := strings.Cut(labels, `"`)
			c := counts[resource+terminatedWatchers]
			c.n += v
			counts[resource+terminatedWatchers] = c
		}
		if v, ok := metricValue(line, allocations); ok {
			c := counts[clusterIPAllocations]
			c.n += v
			counts[clusterIPAllocations] = c
		}
		if v, ok := metricValue(line, allocating); ok {
			c := counts[clusterIPAllocations]
			c.seconds += v
			counts[clusterIPAllocations] = c
		}
		metric := total
		if strings.HasPrefix(line, seconds) {
			metric = seconds
		}
		if !strings.HasPrefix(line, metric) {
			continue
		}
		labels, value, _ := strings.Cut(strings.TrimPrefix(line, metric), "} ")
		key := []string{}
		for _, l := range strings.Split(labels, ",") {
			k, v, _ := strings.Cut(l, "=")
			if k == "verb" || k == "resource" || k == "subresource" {
				key = append(key, strings.Trim(v, `"`))
			}
		}
		v, _ := strconv.ParseFloat(value, 64)
		kind := strings.Join(key, " ")
		c := counts[kind]
		if metric == total {
			c.n += v
		} else {
			c.seconds += v
		}
		counts[kind] = c
	}
	return counts
}

// clusterIPAllocations is the row of apiserverRequests that counts the API
// server's ClusterIP allocations, not requests.
const clusterIPAllocations = "ClusterIP allocations, one at a time"

// terminatedWatchers ends the rows of apiserverRequests that count, by
// resource, the watchers the API server closed for falling behind, not
// requests (their time is none).
const terminatedWatchers = " watchers closed for falling behind"

// metricValue is the value of line when it is a series of the metric whose
// name and opening brace are prefix.
func metricValue(line, prefix string) (float64, bool) {
	series, ok := strings.CutPrefix(line, prefix)
	if !ok {
		return 0, false
	}
	_, value, _ := strings.Cut(series, "} ")
	v, err := strconv.ParseFloat(value, 64)
	return v, err == nil
}

// printReconcileTimes prints, since before (a scrape of the operator's
// metrics), how many reconciles the Challenge controller made and their
// mean time: beside the API server's times, what of a claim is the
// operator's own.
func printReconcileTimes(before string) {
	after, err := scrape()
	if err != nil {
		return
	}
	const metric, label = "controller_runtime_reconcile_time_seconds", `controller="challenge-controller"`
	n := sum(after, metric+"_count", label) - sum(before, metric+"_count", label)
	if n == 0 {
		return
	}
	ms := 1000 * (sum(after, metric+"_sum", label) - sum(before, metric+"_sum", label)) / n
	fmt.Fprintf(os.Stderr, "the operator, burst, until the last Running: %.0f Challenge reconciles, %.1f ms each on average\n", n, ms)
}

// printRequestDiff prints the busiest request kinds between two counts,
// with the mean time each took in the API server.
func printRequestDiff(phase string, before, after map[string]requests) {
	type row struct {
		key        string
		n, seconds float64
	}
	var rows []row
	for k, v := range after {
		if d := v.n - before[k].n; d > 0 {
			rows = append(rows, row{k, d, v.seconds - before[k].seconds})
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].n > rows[j].n })
	fmt.Fprintf(os.Stderr, "API server requests, %s (all clients; mean time in the API server):\n", phase)
	for _, r := range rows[:min(len(rows), 25)] {
		fmt.Fprintf(os.Stderr, "  %8.0f %s (%.1f ms)\n", r.n, r.key, 1000*r.seconds/r.n)
	}
}

// timeline prints, every half second until ctx ends, the operator's API
// requests per second and what its Helm controllers' queues hold: whether a
// burst is held by the client's rate limit (--kube-api-qps) or by a queue.
func timeline(ctx context.Context, t0 time.Time) {
	body, _ := scrape()
	last := sentRequests(body)
	_ = wait.PollUntilContextCancel(ctx, 500*time.Millisecond, false, func(context.Context) (bool, error) {
		body, err := scrape()
		if err != nil {
			return false, nil //nolint:nilerr // try again at the next tick
		}
		requests := sentRequests(body)
		fmt.Fprintf(os.Stderr, "+%5.1fs %6.0f requests/s; queued: teams %.0f, pool %.0f, pool sizing %.0f\n", since(t0, time.Now()), (requests-last)*2,
			sum(body, "workqueue_depth", `name="challenge-controller"`), sum(body, "workqueue_depth", `name="challenge-pool-controller"`),
			sum(body, "workqueue_depth", `name="challenge-pool"`))
		last = requests
		return false, nil
	})
}

func scrape() (string, error) {
	resp, err := http.Get("http://" + metricsAddr + "/metrics")
	if err != nil {
		return "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

func waitMetrics(ctx context.Context) error {
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		_, err := scrape()
		return err == nil, nil
	})
}

// sentRequests counts the API requests an operator sent: client-go counts
// each request of a client, also those ours answers without sending them
// (challenge_helm_requests_answered_total).
func sentRequests(body string) float64 {
	return sum(body, "rest_client_requests_total") - sum(body, "challenge_helm_requests_answered_total")
}

// sum adds the values of a metric's series whose labels contain every one of labels.
func sum(body, metric string, labels ...string) float64 {
	total := 0.0
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, metric+"{") && !strings.HasPrefix(line, metric+" ") {
			continue
		}
		match := true
		for _, l := range labels {
			match = match && strings.Contains(line, l)
		}
		if !match {
			continue
		}
		fields := strings.Fields(line)
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err == nil {
			total += v
		}
	}
	return total
}

// apiserverProfile writes a CPU profile of the API server over the given
// seconds to path.
func apiserverProfile(config *rest.Config, path string, seconds int) error {
	cs, err := kubernetes.NewForConfig(rest.CopyConfig(config))
	if err != nil {
		return err
	}
	body, err := cs.RESTClient().Get().AbsPath("/debug/pprof/profile").Param("seconds", strconv.Itoa(seconds)).
		Timeout(time.Duration(seconds+30) * time.Second).DoRaw(context.Background())
	if err != nil {
		return fmt.Errorf("profiling the API server: %w", err)
	}
	return os.WriteFile(path, body, 0o644)
}

// cpuProfile writes a CPU profile of ours over the given seconds to path.
func cpuProfile(path string, seconds int) error {
	resp, err := http.Get(fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", pprofAddr, seconds))
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	_, err = io.Copy(f, resp.Body)
	return err
}

// poolSizeOf says whether sys is ours with a warm pool ("pooled": as large
// as the burst n; "pooled:P": P instances; "pooled-flags" and
// "pooled-flags:P" the same with a perTeam flag) and how large.
func poolSizeOf(sys string, n int) (int, bool) {
	for _, kind := range []string{"pooled", "pooled-flags", "instancer"} {
		if sys == kind {
			return n, true
		}
		if p, ok := strings.CutPrefix(sys, kind+":"); ok {
			size, err := strconv.Atoi(p)
			return size, err == nil && size > 0
		}
	}
	return 0, false
}

// viaInstancer tells whether sys's teams start their instances through the
// instancer's API (instancer, instancer:P) rather than by creating Challenges.
func viaInstancer(sys string) bool { return strings.HasPrefix(sys, "instancer") }

// isOurs tells whether sys runs challenge-operator.
func isOurs(sys string) bool {
	_, pooled := poolSizeOf(sys, 0)
	return sys == "ours" || pooled
}

// pooledTemplateOf is the pooled systems' template, with a pool of size
// (and a perTeam flag with flags).
func pooledTemplateOf(size int32, flags bool) *ctfv1alpha1.ChallengeTemplate {
	tmpl := &ctfv1alpha1.ChallengeTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: pooledTemplate},
		Spec: ctfv1alpha1.ChallengeTemplateSpec{
			Image: "registry.example/ctf/web-intro:1.0",
			Ports: []ctfv1alpha1.ChallengePort{{Name: "http", Port: 8080}},
			Pool:  &ctfv1alpha1.PoolSpec{Min: size, Max: size},
			// The instancer systems' teams start it themselves; what teams
			// start must expire.
			Instancer: &ctfv1alpha1.InstancerAccess{Startable: true},
			Lifetime:  &ctfv1alpha1.LifetimePolicy{Default: &metav1.Duration{Duration: time.Hour}},
		},
	}
	if flags {
		tmpl.Spec.Flags = perTeamFlags()
	}
	return tmpl
}

// fillPool creates the pooled template and waits until its pool holds size
// Running instances, then measures the pool at rest: requests and CPU from
// 10 to 70 s after, and memory.
func fillPool(ctx context.Context, cl client.Client, proc process, size int32, flags bool, r *result) error {
	if err := cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: poolNamespace}}); err != nil {
		return err
	}
	start := time.Now()
	tmpl := pooledTemplateOf(size, flags)
	if err := cl.Create(ctx, tmpl); err != nil {
		return err
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Duration(size)*time.Second+10*time.Minute, true, func(ctx context.Context) (bool, error) {
		err := cl.Get(ctx, client.ObjectKeyFromObject(tmpl), tmpl)
		return err == nil && tmpl.Status.Pool != nil && tmpl.Status.Pool.Ready == size, client.IgnoreNotFound(err)
	}); err != nil {
		return fmt.Errorf("filling the pool of %d: %w", size, err)
	}
	full := time.Now()
	r.PoolFill = since(start, full)
	label := controllerLabel("ours")
	sleepUntil(full.Add(10 * time.Second))
	a, err := proc.sample(label)
	if err != nil {
		return err
	}
	sleepUntil(full.Add(70 * time.Second))
	b, err := proc.sample(label)
	if err != nil {
		return err
	}
	r.PoolRestRequestsPerSecond, r.PoolRestCPUPercent = rates(a, b)
	r.PoolRestRSSMiB = proc.memory("VmRSS")
	return nil
}

// printObjectSizes prints the size of one Challenge of the burst and of
// one pooled instance (the first of each namespace, claimed or not), and
// who manages their fields: every write of a Challenge decodes, validates
// and stores all of it.
func printObjectSizes(ctx context.Context, cl client.Client) {
	for _, ns := range []string{benchNamespace, poolNamespace} {
		var list ctfv1alpha1.ChallengeList
		if err := cl.List(ctx, &list, client.InNamespace(ns), client.Limit(1)); err != nil || len(list.Items) == 0 {
			continue
		}
		ch := &list.Items[0]
		raw, _ := json.Marshal(ch)
		managed, _ := json.Marshal(ch.ManagedFields)
		fmt.Fprintf(os.Stderr, "%s/%s: %d bytes, managed fields %d bytes:\n", ns, ch.Name, len(raw), len(managed))
		for _, m := range ch.ManagedFields {
			fmt.Fprintf(os.Stderr, "  %s %s %s %d bytes\n", m.Manager, m.Operation, m.Subresource, len(m.FieldsV1.Raw))
		}
		status, _ := json.Marshal(ch.Status)
		fmt.Fprintf(os.Stderr, "  status: %s\n", status)
	}
}

// profileSeconds is how long a CPU profile of a burst of n lasts unless
// told: a fifth of a second per instance, at least 10, about as long as a
// burst of installs or deletions takes here.
func profileSeconds(n int) int { return max(10, n/5) }
