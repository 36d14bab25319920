// Package operatorcmd is the operator's command: Run parses its flags and
// runs its manager. The flags, with their defaults and help, are in one
// place that hack/chart-gen also reads to write the install chart's values
// schema.
package operatorcmd

import (
	"flag"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/flagtag"
	"github.com/challenge-operator/challenge-operator/internal/operator"
	"github.com/challenge-operator/challenge-operator/internal/security"
	"github.com/challenge-operator/challenge-operator/internal/serving"
)

// Options are the operator's command-line flags.
type Options struct {
	Serving          serving.Options
	ProbeAddr        string
	PprofAddr        string
	LeaderElect      bool
	LeaderElectionNS string
	CreateMonitors   bool
	// WebhookPort and WebhookCertDir are where the webhooks are served
	// (--enable-webhook) and the certificate they are served with.
	WebhookPort    int
	WebhookCertDir string
	KubeAPIQPS     float64
	KubeAPIBurst   int
	Operator       operator.Options
	// FlagKeyFile holds the key of the teams' perTeam flags.
	FlagKeyFile string
	Zap         zap.Options
}

// NewFlagSet returns the operator's flags bound to fresh options, for reading
// arguments other than the command line's: their names, types and help for
// hack/chart-gen, and the install chart's rendered arguments in its tests.
func NewFlagSet() (*Options, *flag.FlagSet) {
	opts := &Options{}
	fs := flag.NewFlagSet("challenge-operator", flag.ContinueOnError)
	opts.Bind(fs)
	return opts, fs
}

// Bind registers the flags on fs, with their defaults.
func (o *Options) Bind(fs *flag.FlagSet) {
	o.Serving.Bind(fs, ":8443")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", ":8081", "Address the health and readiness probes bind to.")
	fs.StringVar(&o.PprofAddr, "pprof-bind-address", "", "Address Go's pprof profiles are served on (/debug/pprof/); empty disables it.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", false, "Elect a leader so that only one replica reconciles.")
	fs.StringVar(&o.LeaderElectionNS, "leader-election-namespace", "", "Namespace of the leader election lease; defaults to the operator's own.")
	fs.StringVar(&o.Operator.WatchesFile, "watches-file", "watches.yaml", "helm-operator watches file naming the chart for Challenges.")
	fs.StringVar(&o.Operator.NodeAddress, "node-address", "", "Host published as the endpoint of NodePort instances; defaults to a ready node's IP.")
	fs.IntVar(&o.Operator.MaxConcurrentReconciles, "max-concurrent-reconciles", 16, "Challenges reconciled at once, unless watches.yaml says otherwise (a burst of installs and teardowns waits on the API server, not on CPU).")
	// client-go's defaults (5/s, burst 10) throttle an install of a few
	// objects each to a crawl when hundreds of Challenges arrive at once.
	// The bound is per kind (each kind has its own client), and a claim
	// writes two Challenges (the pooled instance, the claimant's status): at
	// 200/s claims were held to about 100 a second, below the API server's
	// pace, whose priority and fairness protects it from any one client.
	fs.Float64Var(&o.KubeAPIQPS, "kube-api-qps", 1000, "Requests per second the operator may send to the API server, for each kind of object.")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", 2000, "Requests of one kind the operator may send at once above kube-api-qps.")
	fs.Float64Var(&o.Operator.Events.QPS, "event-qps", 50, "Events the operator writes a second once --event-burst is spent, as the kubelet's flag: the rest wait, none is dropped, so a burst of claims or installs is not slowed by Events reporting it. 0: no bound but --kube-api-qps.")
	fs.IntVar(&o.Operator.Events.Burst, "event-burst", 100, "Events the operator may write at once (--event-qps).")
	o.Operator.MaxInstancesPerParticipant = operator.DefaultMaxInstancesPerParticipant
	fs.Var(int32Value{&o.Operator.MaxInstances}, "max-instances", "Live instances the cluster may hold, all templates and teams together; the others are Queued and installed in creation order as instances go. 0 means no bound.")
	fs.Var(int32Value{&o.Operator.MaxInstancesPerParticipant}, "max-instances-per-participant", "Active instances one participant may have, unless the template says otherwise; 0 means no limit.")
	fs.Var(quantityValue{&o.Operator.TeamBudgetCPU}, "team-budget-cpu", "CPU one participant's live instances may request together, all templates (every container's requests, the operator's defaults where a template names none, times replicas); a Challenge beyond it is refused with BudgetExceeded, in creation order. No template or Challenge can raise it. 0 means no budget.")
	fs.Var(quantityValue{&o.Operator.TeamBudgetMemory}, "team-budget-memory", "Memory one participant's live instances may request together, all templates, counted as --team-budget-cpu counts CPU. 0 means no budget.")
	fs.Var(cidrsValue{&o.Operator.Values.InternalCIDRs}, "internal-cidrs", "Comma-separated pod, service and other ranges instances may not reach, added to the private, link-local, loopback, unique-local and metadata ranges of IPv4 and IPv6 that always apply.")
	fs.StringVar(&o.Operator.PoolNamespace, "pool-namespace", "", "Namespace where templates' warm pools (spec.pool) keep their unclaimed instances; platforms need no rights there. Empty: no pools.")
	fs.StringVar(&o.Operator.CanaryNamespace, "canary-namespace", "", "Namespace where the operator tries a Degraded template's canary instance (a template whose newest instances keep failing holds its new starts until one runs); platforms need no rights there. Default: --pool-namespace, else the operator's own (POD_NAMESPACE).")
	fs.BoolVar(&o.Operator.Values.NamespacePerInstance, "namespace-per-instance", false, "Run every instance in a namespace of its own, with a ResourceQuota and a LimitRange.")
	fs.BoolVar(&o.CreateMonitors, "create-monitors", false, "Apply the operator's own ServiceMonitor and alerts (PrometheusRule) in its namespace, owned by its metrics Service, wherever the cluster serves the Prometheus Operator's kinds (the OLM bundle sets it; needs config/self-monitoring's Role).")
	fs.BoolVar(&o.Operator.Webhook, "enable-webhook", false, "Serve the validating webhook that refuses duplicate and over-quota Challenges at admission, and the mutating one that sets the uninstall finalizer (needs a serving certificate).")
	fs.IntVar(&o.WebhookPort, "webhook-port", 9443, "Port the webhooks are served on (--enable-webhook).")
	fs.StringVar(&o.WebhookCertDir, "webhook-cert-dir", "", "Directory with the webhooks' tls.crt and tls.key; empty: controller-runtime's /tmp/k8s-webhook-server/serving-certs, where OLM mounts them.")
	// The security policy: what values may set and what a release may contain.
	fs.Var(listValue{&o.Operator.Values.IngressFromNamespaces}, "ingress-from-namespaces", "Comma-separated namespaces (an ingress controller's, the platform's) whose pods may connect to instances.")
	fs.StringVar(&o.Operator.Values.DNSNamespace, "dns-namespace", "kube-system", "Namespace of the cluster DNS (pods labelled k8s-app=kube-dns), the one in-cluster peer instances may reach.")
	o.Operator.Values.ClusterDomain = "cluster.local"
	fs.Var(domainValue{&o.Operator.Values.ClusterDomain}, "cluster-domain", "The cluster's DNS domain (the kubelet's clusterDomain): the search domain through which an instance's workloads reach each other by bare name (spec.bareNames).")
	fs.Var(listValue{&o.Operator.Values.FlagSecretNamespaces}, "flag-secret-namespaces", "Comma-separated namespaces templates may read flag and secretEnv Secrets from (default: the operator's own, from POD_NAMESPACE); only Opaque Secrets labelled ctf.challenge-operator.io/organiser-secret=true, and never an instance's.")
	fs.StringVar(&o.Operator.FlagWriterImage, "flag-writer-image", "", "Image of the ephemeral container that writes a team's perTeam flags into a claimed pooled instance's running pods (`challenge-operator write-flags`); default: the operator's own, read from its pod (POD_NAME).")
	fs.StringVar(&o.FlagKeyFile, "flag-key-file", flagtag.DefaultKeyFile, "File holding the flag key (the Secret challenge-operator-flag-key, key \"key\", at least 16 bytes, mounted as a volume) that seals each team's perTeam flags; the instancer verifies submissions with the same file. Absent: perTeam flags are refused.")
	fs.Var(listValue{&o.Operator.Values.Keys.Allowed}, "allow-metadata-keys", "Comma-separated prefixed label/annotation keys, or prefixes ending in '/', that instances may carry (e.g. service.beta.kubernetes.io/, or io.kubernetes.cri-o.userns-mode); plain words (no prefix, no dot) need no listing, and helm.sh/, meta.helm.sh/ and ctf.challenge-operator.io/ keys are never allowed.")
	fs.StringVar(&o.Operator.Values.IngressDomain, "ingress-domain", "", "Domain under which every Ingress-exposed instance gets a host of its own (<name>-<hash>.<domain>); empty refuses Ingress exposure.")
	fs.Var(listValue{&o.Operator.Limits.IngressClasses}, "ingress-classes", "Comma-separated ingress classes instances may name; empty: only the cluster's default class.")
	fs.Var(listValue{&o.Operator.Values.SharedServiceNamespaces}, "shared-service-namespaces", "Comma-separated namespaces whose Services templates may let their instances reach (sharedServices: a shared admin bot, a checker); default: the operator's own, from POD_NAMESPACE.")
	fs.Var(gatewaysValue{&o.Operator.Values.Gateways}, "gateways", "Comma-separated Gateways (namespace/name) of the Gateway API that instances exposed by a TLSRoute or an HTTPRoute attach to, the first by default; empty refuses both. Their listeners serve *.<ingress-domain>.")
	fs.Var(listValue{&o.Operator.Limits.TLSSecrets}, "ingress-tls-secrets", "Comma-separated certificate Secrets an instance's Ingress may name in its tls entries; empty: only the ingress controller's default certificate.")
	fs.Var(quantityValue{&o.Operator.Limits.CPU}, "max-cpu", "Highest CPU limit of an instance's container, unless its template's policy lowers it (or raises it, within --template-max-cpu).")
	fs.Var(quantityValue{&o.Operator.Limits.Memory}, "max-memory", "Highest memory limit of an instance's container, unless its template's policy lowers it (or raises it, within --template-max-memory).")
	fs.Var(quantityValue{&o.Operator.Limits.TemplateCPU}, "template-max-cpu", "Highest CPU limit a template's policy.maxCPU may raise its containers to; unset (or below --max-cpu): a template may only lower --max-cpu.")
	fs.Var(quantityValue{&o.Operator.Limits.TemplateMemory}, "template-max-memory", "Highest memory limit a template's policy.maxMemory may raise its containers to; unset (or below --max-memory): a template may only lower --max-memory.")
	o.Operator.Limits.EphemeralStorage = operator.DefaultMaxEphemeralStorage
	fs.Var(quantityValue{&o.Operator.Limits.EphemeralStorage}, "max-ephemeral-storage", "Highest ephemeral-storage limit of an instance's container and size of its /tmp; a template's policy may only lower it.")
	fs.BoolVar(&o.Operator.Limits.AllowLoadBalancer, "allow-load-balancer", false, "Allow every instance a LoadBalancer Service (templates may allow it for their own).")
	fs.Var(listValue{&o.Operator.Limits.AllowedRegistries}, "allowed-registries", "Comma-separated registry hosts (ghcr.io, registry.example:5000) or repository prefixes (ghcr.io/org) images may come from; templates may narrow it. Empty: any registry named by a public DNS name, never an IP address, localhost or a site-local name.")
	// What templates may grant their instances on their nodes.
	sec := &o.Operator.Values.Security
	sec.MaxProfile = security.DefaultMaxProfile
	fs.Var(profileValue{&sec.MaxProfile}, "max-pod-security", "Highest Pod Security profile a template may use: restricted, baseline or privileged.")
	fs.Var(listValue{&sec.SandboxRuntimeClasses}, "sandbox-runtime-classes", "Comma-separated runtime classes (gVisor, Kata) templates may name; a privileged template must name one.")
	fs.BoolVar(&sec.AllowUnsandboxedPrivileged, "allow-unsandboxed-privileged", false, "Let privileged templates run without a sandbox runtime class, on the node's own kernel.")
	fs.Var(listValue{&sec.AllowedCapabilities}, "allowed-capabilities", "Comma-separated capabilities beyond the baseline standard's (e.g. SYS_ADMIN) that privileged templates may add.")
	fs.Var(listValue{&sec.NodeSelectors}, "allowed-node-selectors", "Comma-separated node labels, key=value, templates may select (a node pool for challenges, nodes with /dev/kvm).")
	fs.Var(listValue{&sec.Tolerations}, "allowed-tolerations", "Comma-separated taint keys templates may tolerate.")
	fs.Var(listValue{&sec.ExtendedResources}, "allowed-extended-resources", "Comma-separated extended resources (e.g. devices.kubevirt.io/kvm) templates may ask for, up to 16 each.")
	fs.Var(listValue{&sec.LocalhostProfiles}, "allowed-localhost-profiles", "Comma-separated seccomp and AppArmor profiles on the nodes (type Localhost) that templates may name.")
	fs.Var(prefixesValue{&o.Operator.Limits.AllowedCIDRs}, "allow-egress-cidrs", "Comma-separated internal ranges templates' egress rules may reach on purpose (e.g. a checker service).")
	o.Zap.BindFlags(fs)
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

// domainValue is a flag.Value for a DNS domain, as DNS reads it: lower
// case, no trailing dot.
type domainValue struct{ p *string }

func (v domainValue) String() string {
	if v.p == nil {
		return ""
	}
	return *v.p
}

func (v domainValue) Set(s string) error {
	d := strings.ToLower(strings.TrimSuffix(s, "."))
	if errs := validation.IsDNS1123Subdomain(d); len(errs) > 0 {
		return fmt.Errorf("%q is not a DNS domain: %s", s, strings.Join(errs, "; "))
	}
	*v.p = d
	return nil
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

// profileValue is a flag.Value for a Pod Security profile.
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

// listValue is a flag.Value for a comma-separated list of words.
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

// quantityValue is a flag.Value for a resource quantity, never negative
// (as the install chart's schema has it).
type quantityValue struct{ p *resource.Quantity }

func (v quantityValue) String() string {
	if v.p == nil {
		return ""
	}
	return v.p.String()
}

func (v quantityValue) Set(s string) error {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return err
	}
	if q.Sign() < 0 {
		return fmt.Errorf("%s is negative", s)
	}
	*v.p = q
	return nil
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

// WatchNamespaces reads WATCH_NAMESPACE, a comma-separated list as OLM sets it
// for its install modes; empty means all namespaces.
func WatchNamespaces() []string {
	var out []string
	for _, ns := range strings.Split(os.Getenv("WATCH_NAMESPACE"), ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			out = append(out, ns)
		}
	}
	return out
}
