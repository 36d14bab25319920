// Command challenge-operator runs the Helm-hybrid operator: the embedded
// helm-operator reconciler renders charts/challenge per Challenge, and Go
// controllers beside it keep the Challenge's lifecycle status true.
// Subcommands: `token` mints a team's instancer token (internal/tokencmd);
// `instancer` serves the participants' instancer as a process of its own
// (internal/instancercmd).
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	_ "k8s.io/client-go/plugin/pkg/client/auth"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/instancercmd"
	"github.com/challenge-operator/challenge-operator/internal/operator"
	"github.com/challenge-operator/challenge-operator/internal/security"
	"github.com/challenge-operator/challenge-operator/internal/serving"
	"github.com/challenge-operator/challenge-operator/internal/templatecmd"
	"github.com/challenge-operator/challenge-operator/internal/tokencmd"
)

// options are the command-line flags.
type options struct {
	serving          serving.Options
	probeAddr        string
	pprofAddr        string
	leaderElect      bool
	leaderElectionNS string
	kubeAPIQPS       float64
	kubeAPIBurst     int
	operator         operator.Options
	zap              zap.Options
}

func (o *options) bind(fs *flag.FlagSet) {
	o.serving.Bind(fs, ":8443")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "Address the health and readiness probes bind to.")
	fs.StringVar(&o.pprofAddr, "pprof-bind-address", "", "Address Go's pprof profiles are served on (/debug/pprof/); empty disables it.")
	fs.BoolVar(&o.leaderElect, "leader-elect", false, "Elect a leader so that only one replica reconciles.")
	fs.StringVar(&o.leaderElectionNS, "leader-election-namespace", "", "Namespace of the leader election lease; defaults to the operator's own.")
	fs.StringVar(&o.operator.WatchesFile, "watches-file", "watches.yaml", "helm-operator watches file naming the chart for Challenges.")
	fs.StringVar(&o.operator.NodeAddress, "node-address", "", "Host published as the endpoint of NodePort instances; defaults to a ready node's IP.")
	fs.IntVar(&o.operator.MaxConcurrentReconciles, "max-concurrent-reconciles", 16, "Challenges reconciled at once, unless watches.yaml says otherwise (a burst of installs and teardowns waits on the API server, not on CPU).")
	// client-go's defaults (5/s, burst 10) throttle an install of a few
	// objects each to a crawl when hundreds of Challenges arrive at once.
	fs.Float64Var(&o.kubeAPIQPS, "kube-api-qps", 200, "Requests per second the operator may send to the API server.")
	fs.IntVar(&o.kubeAPIBurst, "kube-api-burst", 400, "Requests the operator may send at once above kube-api-qps.")
	o.operator.MaxInstancesPerParticipant = operator.DefaultMaxInstancesPerParticipant
	fs.Var(int32Value{&o.operator.MaxInstances}, "max-instances", "Live instances the cluster may hold, all templates and teams together; the others are Queued and installed in creation order as instances go. 0 means no bound.")
	fs.Var(int32Value{&o.operator.MaxInstancesPerParticipant}, "max-instances-per-participant", "Active instances one participant may have, unless the template says otherwise; 0 means no limit.")
	fs.Var(cidrsValue{&o.operator.Values.InternalCIDRs}, "internal-cidrs", "Comma-separated pod, service and other ranges instances may not reach, added to the private, link-local, loopback, unique-local and metadata ranges of IPv4 and IPv6 that always apply.")
	fs.StringVar(&o.operator.PoolNamespace, "pool-namespace", "", "Namespace where templates' warm pools (spec.pool) keep their unclaimed instances; platforms need no rights there. Empty: no pools.")
	fs.BoolVar(&o.operator.Values.NamespacePerInstance, "namespace-per-instance", false, "Run every instance in a namespace of its own, with a ResourceQuota and a LimitRange.")
	fs.BoolVar(&o.operator.Webhook, "enable-webhook", false, "Serve the validating webhook that refuses duplicate and over-quota Challenges at admission (needs a serving certificate).")
	// The security policy: what values may set and what a release may contain.
	fs.Var(listValue{&o.operator.Values.IngressFromNamespaces}, "ingress-from-namespaces", "Comma-separated namespaces (an ingress controller's, the platform's) whose pods may connect to instances.")
	fs.StringVar(&o.operator.Values.DNSNamespace, "dns-namespace", "kube-system", "Namespace of the cluster DNS (pods labelled k8s-app=kube-dns), the one in-cluster peer instances may reach.")
	fs.Var(listValue{&o.operator.Values.FlagSecretNamespaces}, "flag-secret-namespaces", "Comma-separated namespaces templates may read flag Secrets from (default: the operator's own, from POD_NAMESPACE).")
	fs.Var(listValue{&o.operator.Values.Keys.Allowed}, "allow-metadata-keys", "Comma-separated reserved label/annotation keys, or prefixes ending in '/', that values may set anyway (e.g. service.beta.kubernetes.io/).")
	fs.StringVar(&o.operator.Values.IngressDomain, "ingress-domain", "", "Domain under which every Ingress-exposed instance gets a host of its own (<name>-<hash>.<domain>); empty refuses Ingress exposure.")
	fs.Var(listValue{&o.operator.Limits.IngressClasses}, "ingress-classes", "Comma-separated ingress classes instances may name; empty: only the cluster's default class.")
	fs.Var(listValue{&o.operator.Values.SharedServiceNamespaces}, "shared-service-namespaces", "Comma-separated namespaces whose Services templates may let their instances reach (sharedServices: a shared admin bot, a checker); default: the operator's own, from POD_NAMESPACE.")
	fs.Var(gatewaysValue{&o.operator.Values.Gateways}, "gateways", "Comma-separated Gateways (namespace/name) of the Gateway API that instances exposed by a TLSRoute or an HTTPRoute attach to, the first by default; empty refuses both. Their listeners serve *.<ingress-domain>.")
	fs.Var(listValue{&o.operator.Limits.TLSSecrets}, "ingress-tls-secrets", "Comma-separated certificate Secrets an instance's Ingress may name in its tls entries; empty: only the ingress controller's default certificate.")
	fs.Var(quantityValue{&o.operator.Limits.CPU}, "max-cpu", "Highest CPU limit of an instance's container, unless its template's policy says otherwise.")
	fs.Var(quantityValue{&o.operator.Limits.Memory}, "max-memory", "Highest memory limit of an instance's container, unless its template's policy says otherwise.")
	o.operator.Limits.EphemeralStorage = operator.DefaultMaxEphemeralStorage
	fs.Var(quantityValue{&o.operator.Limits.EphemeralStorage}, "max-ephemeral-storage", "Highest ephemeral-storage limit of an instance's container and size of its /tmp; a template's policy may only lower it.")
	fs.BoolVar(&o.operator.Limits.AllowLoadBalancer, "allow-load-balancer", false, "Allow every instance a LoadBalancer Service (templates may allow it for their own).")
	fs.Var(listValue{&o.operator.Limits.AllowedRegistries}, "allowed-registries", "Comma-separated registry hosts (ghcr.io, registry.example:5000) or repository prefixes (ghcr.io/org) images may come from; templates may narrow it. Empty: any registry named by a public DNS name, never an IP address, localhost or a site-local name.")
	// What templates may grant their instances on their nodes.
	sec := &o.operator.Values.Security
	sec.MaxProfile = security.DefaultMaxProfile
	fs.Var(profileValue{&sec.MaxProfile}, "max-pod-security", "Highest Pod Security profile a template may use: restricted, baseline or privileged.")
	fs.Var(listValue{&sec.SandboxRuntimeClasses}, "sandbox-runtime-classes", "Comma-separated runtime classes (gVisor, Kata) templates may name; a privileged template must name one.")
	fs.BoolVar(&sec.AllowUnsandboxedPrivileged, "allow-unsandboxed-privileged", false, "Let privileged templates run without a sandbox runtime class, on the node's own kernel.")
	fs.Var(listValue{&sec.AllowedCapabilities}, "allowed-capabilities", "Comma-separated capabilities beyond the baseline standard's (e.g. SYS_ADMIN) that privileged templates may add.")
	fs.Var(listValue{&sec.NodeSelectors}, "allowed-node-selectors", "Comma-separated node labels, key=value, templates may select (a node pool for challenges, nodes with /dev/kvm).")
	fs.Var(listValue{&sec.Tolerations}, "allowed-tolerations", "Comma-separated taint keys templates may tolerate.")
	fs.Var(listValue{&sec.ExtendedResources}, "allowed-extended-resources", "Comma-separated extended resources (e.g. devices.kubevirt.io/kvm) templates may ask for, up to 16 each.")
	fs.Var(listValue{&sec.LocalhostProfiles}, "allowed-localhost-profiles", "Comma-separated seccomp and AppArmor profiles on the nodes (type Localhost) that templates may name.")
	fs.Var(prefixesValue{&o.operator.Limits.AllowedCIDRs}, "allow-egress-cidrs", "Comma-separated internal ranges templates' egress rules may reach on purpose (e.g. a checker service).")
	o.zap.BindFlags(fs)
}

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
	var opts options
	opts.bind(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts.zap)))
	setMemoryLimit()
	if len(opts.operator.Values.FlagSecretNamespaces) == 0 && os.Getenv("POD_NAMESPACE") != "" {
		opts.operator.Values.FlagSecretNamespaces = []string{os.Getenv("POD_NAMESPACE")}
	}
	if len(opts.operator.Values.SharedServiceNamespaces) == 0 && os.Getenv("POD_NAMESPACE") != "" {
		opts.operator.Values.SharedServiceNamespaces = []string{os.Getenv("POD_NAMESPACE")}
	}

	if err := run(opts); err != nil {
		ctrl.Log.Error(err, "challenge-operator failed")
		os.Exit(1)
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

func run(opts options) error {
	scheme, err := operator.NewScheme()
	if err != nil {
		return err
	}
	cfg := ctrl.GetConfigOrDie()
	cfg.QPS, cfg.Burst = float32(opts.kubeAPIQPS), opts.kubeAPIBurst
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 opts.serving.Metrics(),
		WebhookServer:           webhook.NewServer(webhook.Options{TLSOpts: opts.serving.TLSOpts()}),
		HealthProbeBindAddress:  opts.probeAddr,
		PprofBindAddress:        opts.pprofAddr,
		LeaderElection:          opts.leaderElect,
		LeaderElectionID:        "challenge-operator.ctf.challenge-operator.io",
		LeaderElectionNamespace: opts.leaderElectionNS,
		// A stopped operator hands the lease over at once (an upgrade's new
		// pod need not wait for it to expire): safe, as the process exits
		// as soon as the manager returns.
		LeaderElectionReleaseOnCancel: true,
		Cache:                         operator.CacheOptions(watchNamespaces(), len(opts.operator.Values.Gateways) > 0),
		// A panic in any reconciler (the Helm one's hooks, translator and
		// policy gate included) fails that reconcile only, and is counted in
		// controller_runtime_reconcile_panics_total{controller}.
		Controller: config.Controller{RecoverPanic: ptr.To(true)},
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	if err := operator.CheckIngressFrom(opts.operator, watchNamespaces()); err != nil {
		return err
	}
	if err := operator.Setup(mgr, opts.operator); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	ctrl.Log.Info("starting challenge-operator", "watchesFile", opts.operator.WatchesFile, "namespaces", watchNamespaces())
	return mgr.Start(ctrl.SetupSignalHandler())
}

// int32Value is a flag.Value for an int32.
type int32Value struct{ p *int32 }

func (v int32Value) String() string {
	if v.p == nil {
		return "0"
	}
	return strconv.Itoa(int(*v.p))
}

func (v int32Value) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 32)
	if err == nil {
		*v.p = int32(n)
	}
	return err
}

// cidrsValue is a flag.Value for a comma-separated list of CIDRs.
type cidrsValue struct{ p *[]string }

func (v cidrsValue) String() string { return listValue(v).String() }

func (v cidrsValue) Set(s string) error {
	if err := listValue(v).Set(s); err != nil {
		return err
	}
	for _, c := range *v.p {
		p, err := netip.ParsePrefix(c)
		if err != nil {
			return err
		}
		if p.Bits() == 0 {
			return fmt.Errorf("%s covers every address", c)
		}
	}
	return nil
}

// listValue is a flag.Value for a comma-separated list of words.
type profileValue struct {
	p *ctfv1alpha1.SecurityProfile
}

func (v profileValue) String() string {
	if v.p == nil {
		return string(security.DefaultMaxProfile)
	}
	return string(*v.p)
}

func (v profileValue) Set(s string) error {
	p, err := security.ParseProfile(s)
	if err == nil {
		*v.p = p
	}
	return err
}

type listValue struct{ p *[]string }

func (v listValue) String() string {
	if v.p == nil {
		return ""
	}
	return strings.Join(*v.p, ",")
}

func (v listValue) Set(s string) error {
	*v.p = nil
	for _, w := range strings.Split(s, ",") {
		if w = strings.TrimSpace(w); w != "" {
			*v.p = append(*v.p, w)
		}
	}
	return nil
}

// gatewaysValue is a flag.Value for a list of Gateways, namespace/name.
type gatewaysValue struct{ p *[]ctfv1alpha1.GatewayRef }

func (v gatewaysValue) String() string {
	if v.p == nil {
		return ""
	}
	names := make([]string, len(*v.p))
	for i, g := range *v.p {
		names[i] = g.Namespace + "/" + g.Name
	}
	return strings.Join(names, ",")
}

func (v gatewaysValue) Set(s string) error {
	var names []string
	if err := (listValue{&names}).Set(s); err != nil {
		return err
	}
	*v.p = nil
	for _, n := range names {
		ns, name, ok := strings.Cut(n, "/")
		if !ok || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
			return fmt.Errorf("%q is not namespace/name", n)
		}
		*v.p = append(*v.p, ctfv1alpha1.GatewayRef{Namespace: ns, Name: name})
	}
	return nil
}

// quantityValue is a flag.Value for a resource quantity.
type quantityValue struct{ p *resource.Quantity }

func (v quantityValue) String() string {
	if v.p == nil {
		return ""
	}
	return v.p.String()
}

func (v quantityValue) Set(s string) error {
	q, err := resource.ParseQuantity(s)
	if err == nil {
		*v.p = q
	}
	return err
}

// prefixesValue is a flag.Value for a comma-separated list of CIDRs.
type prefixesValue struct{ p *[]netip.Prefix }

func (v prefixesValue) String() string {
	if v.p == nil {
		return ""
	}
	out := make([]string, len(*v.p))
	for i, p := range *v.p {
		out[i] = p.String()
	}
	return strings.Join(out, ",")
}

func (v prefixesValue) Set(s string) error {
	var words []string
	if err := (cidrsValue{&words}).Set(s); err != nil {
		return err
	}
	*v.p = nil
	for _, w := range words {
		*v.p = append(*v.p, netip.MustParsePrefix(w))
	}
	return nil
}

// watchNamespaces reads WATCH_NAMESPACE, a comma-separated list as OLM sets it
// for its install modes; empty means all namespaces.
func watchNamespaces() []string {
	var out []string
	for _, ns := range strings.Split(os.Getenv("WATCH_NAMESPACE"), ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			out = append(out, ns)
		}
	}
	return out
}
