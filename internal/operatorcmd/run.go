package operatorcmd

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/challenge-operator/challenge-operator/internal/flagtag"
	"github.com/challenge-operator/challenge-operator/internal/operator"
	"github.com/challenge-operator/challenge-operator/internal/selfmonitor"
)

// Run runs the operator until ctx ends. fs holds the flags args are parsed
// with: the command line's, where controller-runtime registers --kubeconfig
// beside the operator's own (Bind).
func Run(ctx context.Context, fs *flag.FlagSet, args []string) error {
	var opts Options
	opts.Bind(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts.Zap)))
	setMemoryLimit()
	opts.defaultNamespaces(os.Getenv("POD_NAMESPACE"))
	return run(ctx, opts)
}

// defaultNamespaces makes the operator's own namespace (own) the one
// organiser Secrets and shared Services come from, unless flags name others,
// and its canaries run in the pool's namespace, else its own.
func (o *Options) defaultNamespaces(own string) {
	if o.Operator.CanaryNamespace == "" {
		o.Operator.CanaryNamespace = cmp.Or(o.Operator.PoolNamespace, own)
	}
	if own == "" {
		return
	}
	if len(o.Operator.Values.FlagSecretNamespaces) == 0 {
		o.Operator.Values.FlagSecretNamespaces = []string{own}
	}
	if len(o.Operator.Values.SharedServiceNamespaces) == 0 {
		o.Operator.Values.SharedServiceNamespaces = []string{own}
	}
}

// setMemoryLimit tells the Go runtime the container's memory limit (90% of
// its cgroup's, unless GOMEMLIMIT says otherwise): the garbage collector
// then works harder as the heap nears the limit instead of letting garbage
// double it, which at a few thousand resident instances is the difference
// between a busy operator and an OOM-killed one. Without a limit, nothing
// changes.
func setMemoryLimit() {
	_, _ = memlimit.SetGoMemLimitWithOpts(
		memlimit.WithRatio(0.9),
		memlimit.WithProvider(memlimit.FromCgroup),
		memlimit.WithLogger(slog.New(logr.ToSlogHandler(ctrl.Log.WithName("memlimit")))),
	)
}

// addMonitors adds the runnable that applies the operator's own ServiceMonitor
// and alerts in its namespace (--create-monitors).
func addMonitors(mgr ctrl.Manager) error {
	ns := os.Getenv("POD_NAMESPACE")
	if ns == "" {
		return errors.New("--create-monitors needs POD_NAMESPACE, the operator's namespace")
	}
	dc, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
	if err != nil {
		return err
	}
	return mgr.Add(&selfmonitor.Monitors{Namespace: ns, Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Discovery: dc})
}

func run(ctx context.Context, opts Options) error {
	scheme, err := operator.NewScheme()
	if err != nil {
		return err
	}
	cfg := ctrl.GetConfigOrDie()
	cfg.QPS, cfg.Burst = float32(opts.KubeAPIQPS), opts.KubeAPIBurst
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 opts.Serving.Metrics(),
		WebhookServer:           webhook.NewServer(webhook.Options{Port: opts.WebhookPort, CertDir: opts.WebhookCertDir, TLSOpts: opts.Serving.TLSOpts()}),
		HealthProbeBindAddress:  opts.ProbeAddr,
		PprofBindAddress:        opts.PprofAddr,
		LeaderElection:          opts.LeaderElect,
		LeaderElectionID:        "challenge-operator.ctf.challenge-operator.io",
		LeaderElectionNamespace: opts.LeaderElectionNS,
		// A stopped operator hands the lease over at once (an upgrade's new
		// pod need not wait for it to expire): safe, as the process exits
		// as soon as the manager returns.
		LeaderElectionReleaseOnCancel: true,
		Cache:                         operator.CacheOptions(WatchNamespaces(), opts.Operator.Features()),
		// A panic in any reconciler (the Helm one's hooks, translator and
		// policy gate included) fails that reconcile only, and is counted in
		// controller_runtime_reconcile_panics_total{controller}.
		Controller: config.Controller{RecoverPanic: ptr.To(true)},
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	if err := operator.CheckIngressFrom(opts.Operator, WatchNamespaces()); err != nil {
		return err
	}
	if opts.Operator.FlagCodec, err = flagtag.LoadKeyFile(opts.FlagKeyFile); err != nil {
		return err
	}
	if opts.Operator.FlagWriterImage == "" && opts.Operator.PoolNamespace != "" {
		if opts.Operator.FlagWriterImage, err = ownImage(ctx, mgr.GetAPIReader()); err != nil {
			ctrl.Log.Error(err, "the operator's own image is unknown (set --flag-writer-image): a pooled template's perTeam flags cannot be delivered")
		}
	}
	if opts.Operator.FlagCodec == nil {
		ctrl.Log.Info("no flag key: templates' perTeam flags are refused until the Secret challenge-operator-flag-key is mounted", "file", opts.FlagKeyFile)
	}
	opts.Operator.Namespaces = WatchNamespaces()
	if err := operator.Setup(mgr, opts.Operator); err != nil {
		return err
	}
	if opts.CreateMonitors {
		if err := addMonitors(mgr); err != nil {
			return err
		}
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	ctrl.Log.Info("starting challenge-operator", "watchesFile", opts.Operator.WatchesFile, "namespaces", WatchNamespaces())
	return mgr.Start(ctx)
}

// ownImage is the image of the operator's own container, read from its pod
// (POD_NAME, POD_NAMESPACE): what writes a team's flags into a claimed
// pooled instance.
func ownImage(ctx context.Context, r client.Reader) (string, error) {
	name, ns := os.Getenv("POD_NAME"), os.Getenv("POD_NAMESPACE")
	if name == "" || ns == "" {
		return "", errors.New("POD_NAME and POD_NAMESPACE are not set")
	}
	var pod corev1.Pod
	if err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &pod); err != nil {
		return "", fmt.Errorf("reading the operator's pod: %w", err)
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == "manager" {
			return c.Image, nil
		}
	}
	return "", fmt.Errorf("pod %s/%s has no container manager", ns, name)
}
