// Command challenge-operator runs the Helm-hybrid operator: the embedded
// helm-operator reconciler renders charts/challenge per Challenge, and Go
// controllers beside it keep the Challenge's lifecycle status true.
// Subcommands: `token` mints a team's instancer token (internal/tokencmd);
// `instancer` serves the participants' instancer as a process of its own
// (internal/instancercmd).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/go-logr/logr"
	"k8s.io/client-go/discovery"
	_ "k8s.io/client-go/plugin/pkg/client/auth"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	"github.com/challenge-operator/challenge-operator/internal/instancercmd"
	"github.com/challenge-operator/challenge-operator/internal/operator"
	"github.com/challenge-operator/challenge-operator/internal/operatorcmd"
	"github.com/challenge-operator/challenge-operator/internal/selfmonitor"
	"github.com/challenge-operator/challenge-operator/internal/templatecmd"
	"github.com/challenge-operator/challenge-operator/internal/tokencmd"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "token":
			if err := tokencmd.Run(os.Args[2:], os.Stdout); err != nil {
				fmt.Fprintln(os.Stderr, "challenge-operator token:", err)
				os.Exit(2)
			}
			return
		case "template":
			if err := templatecmd.Run(context.Background(), os.Args[2:], os.Stdout, os.Stderr); err != nil {
				fmt.Fprintln(os.Stderr, "challenge-operator template:", err)
				os.Exit(2)
			}
			return
		case "instancer":
			if err := instancercmd.Run(ctrl.SetupSignalHandler(), os.Args[2:]); err != nil {
				fmt.Fprintln(os.Stderr, "challenge-operator instancer:", err)
				os.Exit(1)
			}
			return
		}
	}
	var opts operatorcmd.Options
	opts.Bind(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts.Zap)))
	setMemoryLimit()
	if len(opts.Operator.Values.FlagSecretNamespaces) == 0 && os.Getenv("POD_NAMESPACE") != "" {
		opts.Operator.Values.FlagSecretNamespaces = []string{os.Getenv("POD_NAMESPACE")}
	}
	if len(opts.Operator.Values.SharedServiceNamespaces) == 0 && os.Getenv("POD_NAMESPACE") != "" {
		opts.Operator.Values.SharedServiceNamespaces = []string{os.Getenv("POD_NAMESPACE")}
	}

	if err := run(opts); err != nil {
		ctrl.Log.Error(err, "challenge-operator failed")
		os.Exit(1)
	}
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

func run(opts operatorcmd.Options) error {
	scheme, err := operator.NewScheme()
	if err != nil {
		return err
	}
	cfg := ctrl.GetConfigOrDie()
	cfg.QPS, cfg.Burst = float32(opts.KubeAPIQPS), opts.KubeAPIBurst
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 opts.Serving.Metrics(),
		WebhookServer:           webhook.NewServer(webhook.Options{TLSOpts: opts.Serving.TLSOpts()}),
		HealthProbeBindAddress:  opts.ProbeAddr,
		PprofBindAddress:        opts.PprofAddr,
		LeaderElection:          opts.LeaderElect,
		LeaderElectionID:        "challenge-operator.ctf.challenge-operator.io",
		LeaderElectionNamespace: opts.LeaderElectionNS,
		// A stopped operator hands the lease over at once (an upgrade's new
		// pod need not wait for it to expire): safe, as the process exits
		// as soon as the manager returns.
		LeaderElectionReleaseOnCancel: true,
		Cache:                         operator.CacheOptions(operatorcmd.WatchNamespaces(), len(opts.Operator.Values.Gateways) > 0),
		// A panic in any reconciler (the Helm one's hooks, translator and
		// policy gate included) fails that reconcile only, and is counted in
		// controller_runtime_reconcile_panics_total{controller}.
		Controller: config.Controller{RecoverPanic: ptr.To(true)},
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	if err := operator.CheckIngressFrom(opts.Operator, operatorcmd.WatchNamespaces()); err != nil {
		return err
	}
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
	ctrl.Log.Info("starting challenge-operator", "watchesFile", opts.Operator.WatchesFile, "namespaces", operatorcmd.WatchNamespaces())
	return mgr.Start(ctrl.SetupSignalHandler())
}
