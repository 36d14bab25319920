// Package instancercmd is the `challenge-operator instancer` subcommand: the
// participants' instancer as a process of its own, with its own service
// account, cache and probes, so that the internet-facing server never holds
// the operator's rights. Any number of replicas may run: its limits are kept
// in the cluster.
package instancercmd

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/flagtag"
	"github.com/challenge-operator/challenge-operator/internal/instancer"
	"github.com/challenge-operator/challenge-operator/internal/serving"
	"github.com/challenge-operator/challenge-operator/internal/token"
)

// options are the subcommand's flags.
type options struct {
	instancer    instancer.Options
	serving      serving.Options
	probeAddr    string
	flagKeyFile  string
	kubeAPIQPS   float64
	kubeAPIBurst int
	zap          zap.Options
}

func (o *options) bind(fs *flag.FlagSet) {
	fs.StringVar(&o.instancer.BindAddress, "bind-address", ":8443", "Address the page and API listen on, e.g. :8443 behind a TLS ingress.")
	fs.StringVar(&o.instancer.KeyDir, "key-dir", "/etc/challenge-operator/instancer-keys", "Directory of the token keys: a Secret mounted as a volume, one file (key id) per HS256 key of at least 32 bytes.")
	fs.StringVar(&o.instancer.Namespace, "namespace", "", "Namespace the instancer creates Challenges and keeps its limits in (default: POD_NAMESPACE, else default); its Role must be bound there.")
	fs.Func("allowed-origins", "Comma-separated origins (e.g. https://ctf.example.org) whose pages may call the API; none by default.", func(s string) error {
		o.instancer.AllowedOrigins = nil
		for _, w := range strings.Split(s, ",") {
			if w = strings.TrimSpace(w); w != "" {
				o.instancer.AllowedOrigins = append(o.instancer.AllowedOrigins, w)
			}
		}
		return nil
	})
	fs.IntVar(&o.instancer.StartsPerMinute, "starts-per-minute", 3, "Instances a team may start in any minute, across every replica; 0 means no limit.")
	fs.DurationVar(&o.instancer.RenewInterval, "renew-interval", time.Minute, "The least time between two renewals of one instance by a team, across every replica; 0 disables it.")
	fs.DurationVar(&o.instancer.Cooldown, "cooldown", 30*time.Second, "How long a team waits to start a challenge again after stopping it, across every replica; 0 disables it.")
	fs.StringVar(&o.instancer.Audience, "audience", token.Audience, "Audience team tokens must name: give each instancer its own (and challenge-operator token --audience the same), so that one's tokens never open another's.")
	fs.DurationVar(&o.instancer.MaxTokenLifetime, "max-token-lifetime", token.DefaultMaxLifetime, "Longest a team token may be valid (expiry minus issue time); longer ones are refused.")
	fs.StringVar(&o.instancer.RevocationsDir, "revocations-dir", "", "Directory of per-team revocations (a ConfigMap mounted as a volume): a file per team id holding an RFC 3339 time; that team's tokens issued before it are refused. Empty: none.")
	fs.StringVar(&o.instancer.PlatformKeyDir, "platform-key-dir", "", "Directory of the keys the CTF platform signs its calls with (a Secret of its own mounted as a volume, one file per key id, 32 bytes or more): turns on the platform API (flag verification, solves). Empty: off.")
	fs.StringVar(&o.flagKeyFile, "flag-key-file", flagtag.DefaultKeyFile, "File holding the operator's flag key (the Secret challenge-operator-flag-key, key \"key\"), with which the platform API verifies perTeam flags.")
	fs.DurationVar(&o.instancer.KeyReload, "key-reload-interval", 10*time.Second, "How often the key and revocation directories are read again (a rotation or revocation needs no restart).")
	// Its page and API are on :8443.
	o.serving.Bind(fs, ":8444")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "Address the health and readiness probes bind to; 0 disables them.")
	fs.Float64Var(&o.kubeAPIQPS, "kube-api-qps", 50, "Requests per second the instancer may send to the API server.")
	fs.IntVar(&o.kubeAPIBurst, "kube-api-burst", 100, "Requests the instancer may send at once above kube-api-qps.")
	o.zap.BindFlags(fs)
}

// Flags returns the subcommand's flags, bound to throwaway options: their
// names, defaults and help, for hack/chart-gen.
func Flags() *flag.FlagSet {
	fs := flag.NewFlagSet("instancer", flag.ContinueOnError)
	new(options).bind(fs)
	return fs
}

// Run serves the instancer until ctx ends.
func Run(ctx context.Context, args []string) error {
	var opts options
	fs := flag.NewFlagSet("instancer", flag.ContinueOnError)
	opts.bind(fs)
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		return nil // the usage is printed
	} else if err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts.zap)))
	opts.instancer.Namespace = cmp.Or(opts.instancer.Namespace, os.Getenv("POD_NAMESPACE"), "default")
	mgr, err := newManager(opts)
	if err != nil {
		return err
	}
	if opts.instancer.FlagCodec, err = flagtag.LoadKeyFile(opts.flagKeyFile); err != nil {
		return err
	}
	srv := &instancer.Server{Options: opts.instancer, Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Informers: mgr.GetCache(),
		Recorder: mgr.GetEventRecorder("challenge-instancer")}
	if err := mgr.Add(srv); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("serving", srv.Ready); err != nil {
		return err
	}
	ctrl.Log.Info("starting the instancer", "namespace", opts.instancer.Namespace, "address", opts.instancer.BindAddress)
	return mgr.Start(ctx)
}

// newManager makes the instancer's manager: no controllers, no leader
// election, a cache of the Challenges in its namespace and of the
// (cluster-scoped) templates, nothing else.
func newManager(opts options) (ctrl.Manager, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := ctfv1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = float32(opts.kubeAPIQPS), opts.kubeAPIBurst
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                opts.serving.Metrics(),
		HealthProbeBindAddress: opts.probeAddr,
		Cache: cache.Options{
			// Cluster-scoped objects (templates) are cached cluster-wide.
			DefaultNamespaces: map[string]cache.Config{opts.instancer.Namespace: {}},
			DefaultTransform:  cache.TransformStripManagedFields(),
		},
	})
	if err != nil {
		return nil, fmt.Errorf("creating the instancer's manager: %w", err)
	}
	return mgr, nil
}
