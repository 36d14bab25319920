// Package policy is the engine of the post-render gate, the third of the operator's trust layers:
// it judges what Helm rendered for one instance against what that instance may contain. Before
// any object reaches the API server, it refuses the whole release when a single rule breaks. The
// CRD schema and its CEL rules refuse malformed Challenges at admission, and the chart quotes every
// value it writes; this package judges what came out of them.
//
// Policy is the engine; package policyhelm adapts it to Helm's post-renderer. This package takes a
// manifest and an Instance and returns a Violation or the objects that passed: it imports no Helm
// and no client, and what it needs of the cluster (HostTaken) is handed to it. Package policyhelm
// runs it on each render of a release, as Helm's post-renderer, and on each stored release record,
// with the Instance the translator computed for the render in progress.
//
// The engine reads each document strictly into the typed API object of an allowlisted kind,
// refusing a field its Go types do not know, and refuses every set field its rules do not judge
// (fields.go), so no field reaches the API server unread. It checks what the instance may contain:
// its kinds, names, namespace and identity labels, the restricted Pod Security Standard and more for
// its pod, and a NetworkPolicy that keeps it away from the cluster's internal ranges. Helm splits
// hooks off before post-rendering, which is why releases run with hooks disabled and the objects
// the instance needs must be present: a template turned into a hook is dropped, not applied
// unjudged, and the release is then refused for its absence.
package policy

import (
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	psaapi "k8s.io/pod-security-admission/api"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/identity"
	"github.com/challenge-operator/challenge-operator/internal/security"
)

// Instance is what one release may contain: the gate judges every rendered object against it.
type Instance struct {
	// Release is the Helm release name (the Challenge's name); it names the primary workload's
	// Deployment, Service, NetworkPolicy and Ingress, and the ServiceAccount, ResourceQuota and
	// LimitRange, so objects cannot collide with another instance's.
	Release string
	// Namespace is the namespace every namespaced object must be in.
	Namespace string
	// OwnNamespace gives the instance a namespace of its own: the release may, and then must, create
	// the Namespace named Namespace, plus one ResourceQuota and one LimitRange.
	OwnNamespace bool
	// Labels are the identity labels of the instance's objects that belong to no workload (its
	// ServiceAccount, flag Secret, files ConfigMap, Namespace, quota and limit range): each
	// carries every key with exactly this value, so other code can tell whose an object is.
	Labels map[string]string
	// PodParticipant, when set, is the participant label the pod templates carry instead of
	// Labels': a pooled instance a team claimed keeps its pods' labels (changing them would
	// restart them), while its other objects say whose it is now.
	PodParticipant string
	// FlagSecret is the only Secret the release may create and the pod may reference; "" means none.
	FlagSecret string
	// Limits are the organiser's ceilings and allowances.
	Limits Limits
	// Keys decides which reserved label and annotation keys organisers allow.
	Keys Keys
	// Quota is exactly the hard limits of the ResourceQuota of a namespace of its own.
	Quota corev1.ResourceList
	// LimitRange is exactly the limits of the LimitRange of a namespace of its own.
	LimitRange []corev1.LimitRangeItem
	// OwnerAnnotations are the annotations the post-renderer (package policyhelm)
	// writes, after the gate, on a cluster-scoped object of the release (the
	// Namespace of its own) to name the Challenge, in place of an owner
	// reference: the only annotations that Namespace may carry, with exactly
	// these values. A stored release record carries them, a fresh render not.
	OwnerAnnotations map[string]string
	// HostTaken reports whether an Ingress host is already used by another instance, so an instance
	// cannot take over another's traffic; nil means never.
	HostTaken func(host string) bool
	// Workloads are what the instance runs, the primary workload first, then each component: one
	// model, judged by the same rules. The primary's objects are named Release and it needs a
	// Deployment, a Service and a NetworkPolicy; a component's are named
	// identity.ComponentObject(Release, Name) and it needs a Deployment and a NetworkPolicy, its
	// Service being optional (a bot nothing connects to has none).
	Workloads []Workload
	// AnyComponent accepts the objects of components of any name: a stored release record, judged
	// by CheckIdentity for whose its objects are, whatever components its template has now.
	AnyComponent bool
	// SharedServices are the organiser's Services the instance may reach: the only pods of
	// another namespace an egress rule may name, on the ports it lists.
	SharedServices []SharedPeer
	// InstancePods are labels every pod of the instance carries, and no other instance's: the one
	// pod selector a NetworkPolicy may name, as a peer in its own namespace, so the instance's
	// components reach each other; nil allows none.
	InstancePods map[string]string
	// EveryInstancePod, when set, is the label key every instance's pods carry: the instance's
	// NetworkPolicy may then admit every pod that carries it, in any namespace, on its ports (a
	// shared instance, which every team's instances may call). "" allows none.
	EveryInstancePod string
	// BareNames, when set, lets the instance's workloads answer to their bare names: its one
	// headless Service and each pod's hostname, subdomain and search domain. nil allows none of
	// them.
	BareNames *BareNames
}

// BareNames is how an instance's workloads reach each other by bare name (its template's
// bareNames): each pod's hostname is its workload's BareName, its subdomain the headless Service,
// and its one extra search domain Search, so that "db" resolves from the instance's own pods.
type BareNames struct {
	// Service is the headless Service's name (identity.BareNamesService), its pods' subdomain.
	Service string
	// Search is the one search domain every pod of the instance adds to its cluster's:
	// "<Service>.<namespace>.svc.<cluster domain>".
	Search string
	// Selector is exactly the headless Service's selector: every pod of the instance, no other's.
	Selector map[string]string
}

// SharedPeer is the pods of a shared Service: its namespace and its selector.
type SharedPeer struct {
	Namespace string
	Selector  map[string]string
}

// Workload is one pod template of an instance with the objects around it: the primary workload
// or a component.
type Workload struct {
	// Name is the component's name, which ends its objects' names; "" for the primary workload,
	// whose objects are named after the release.
	Name string
	// Labels are the identity labels of its objects and pod template: every key with exactly
	// this value.
	Labels map[string]string
	// Selector is the exact selector of its Deployment, its Service and its NetworkPolicy's
	// podSelector, so none of them reaches another workload's or instance's pods.
	Selector map[string]string
	// Security is exactly what its pod runs with, from its template within the operator's flags:
	// its Pod Security level, pod and container securityContexts and runtime class. nil holds the
	// pod to the restricted standard without naming the exact settings.
	Security *security.Context
	// Exposed lets its Service be of another type than ClusterIP, its NetworkPolicy admit the
	// outside, and an Ingress or a route lead to it. The primary workload is always exposed.
	Exposed bool
	// Host is its own host, the only one its Ingress or route may name; "" means any host under
	// the domain that HostTaken does not report.
	Host string
	// PortHosts are the hosts of its other exposed ports (its template's exposePorts), by port
	// name: each port's Ingress or route, named identity.PortObject(its objects' name, port),
	// may name that host only, and its NetworkPolicy may admit the outside.
	PortHosts map[string]string
	// Sidecars name the containers its pod runs beside its main one (named after the workload:
	// identity.PrimaryWorkload for the primary), in order: its pod has exactly these, each judged
	// by the rules of the main one, under the workload's Security.
	Sidecars []string
	// BareName is its pods' hostname when the instance has BareNames: the component's name, or
	// the template's bareNames.primary.
	BareName string
	// SecretFiles are the keys of the instance's Secret its pod may mount file by file (its
	// containers' secret files): the only items a volume of that Secret may list; none allows none.
	SecretFiles []string
	// SecretEnv are the keys of the instance's Secret its containers' environment may read (the
	// flag, its secretEnv values): the only keys an env secretKeyRef may name; none allows none.
	SecretEnv []string
}

// Primary is the instance's primary workload, the first of Workloads; the zero Workload when
// there is none, which the gate refuses to judge by.
func (in Instance) Primary() Workload {
	if len(in.Workloads) == 0 {
		return Workload{}
	}
	return in.Workloads[0]
}

// Limits are the organiser's ceilings and allowances.
type Limits struct {
	// CPU and Memory bound every container's limits, which every container must set, so one
	// instance cannot starve a node.
	CPU, Memory resource.Quantity
	// TemplateCPU and TemplateMemory are the highest a template's policy.maxCPU and maxMemory
	// may raise CPU and Memory to (the admin's --template-max-cpu and --template-max-memory);
	// below CPU and Memory (zero: unset) a template may only lower them, so that no organiser
	// steps past the admin's ceiling without the admin's word.
	TemplateCPU, TemplateMemory resource.Quantity
	// EphemeralStorage bounds every container's ephemeral-storage limit, which every container
	// must then set, and every emptyDir's sizeLimit, which every emptyDir must then set, so one
	// instance cannot fill its node's disk; zero means no ceiling (and none required).
	EphemeralStorage resource.Quantity
	// MaxReplicas bounds the Deployment's replicas (unset counts as 1).
	MaxReplicas int32
	// AllowLoadBalancer lets the Service be of type LoadBalancer, which costs the organiser money.
	AllowLoadBalancer bool
	// IngressDomain is the domain whose strict subdomains Ingress and TLS hosts must be
	// ("x.ctf.example" for "ctf.example"); "" means no Ingress is allowed at all.
	IngressDomain string
	// IngressClasses are the ingress classes an Ingress may name; one that names none gets the
	// cluster's default class. A class is a controller, and some serve only inside the cluster or
	// another audience, so an instance may not pick one the admin did not list.
	IngressClasses []string
	// Gateways are the Gateways a TLSRoute or HTTPRoute may attach to; none allows no route.
	Gateways []types.NamespacedName
	// TLSSecrets are the certificate Secrets (in the Ingress's namespace) an Ingress's tls entries
	// may name; an entry naming none gets the ingress controller's default certificate. Without
	// the list, an instance could serve another site's certificate kept beside it.
	TLSSecrets []string
	// InternalCIDRs are ranges no NetworkPolicy peer may reach (egress) or admit (ingress ipBlock),
	// in addition to DefaultInternalCIDRs, which are always forbidden.
	InternalCIDRs []netip.Prefix
	// AllowedCIDRs are exceptions: internal ranges organisers allow on purpose.
	AllowedCIDRs []netip.Prefix
	// IngressFromNamespaces are the namespaces whose pods may be ingress peers, selected by
	// namespaceSelector matchLabels kubernetes.io/metadata.name; never the instance's own.
	IngressFromNamespaces []string
	// AllowedRegistries are the registries ("ghcr.io", "registry.example:5000") or repository
	// prefixes ("ghcr.io/org") images may come from; empty allows any registry named by a public
	// DNS name, never an IP address or a name of the site's own.
	AllowedRegistries []string
	// DNSNamespace is the namespace of the DNS peer; "" means "kube-system".
	DNSNamespace string
}

// Violation is a broken rule: the release is refused and nothing of it is applied.
type Violation struct {
	// Rule is the short kebab-case name of the broken rule, e.g. "pod-security".
	Rule string
	// Object is "Kind namespace/name", "Kind name" when cluster-scoped, or "document N" when the
	// document could not be read as an object.
	Object string
	// Detail says what in the object broke the rule.
	Detail string
}

// Error reads "PolicyViolation: <Rule>: <Object>: <Detail>"; other code parses the prefix.
func (v *Violation) Error() string {
	return fmt.Sprintf("PolicyViolation: %s: %s: %s", v.Rule, v.Object, v.Detail)
}

// Rule names, one per rule, as they appear in a Violation.
const (
	ruleParse          = "parse"
	ruleKind           = "kind"
	ruleName           = "name"
	ruleDuplicate      = "duplicate"
	ruleNamespace      = "namespace"
	ruleLabels         = "labels"
	ruleMetadataKey    = "metadata-key"
	ruleHelmAnnotation = "helm-annotation"
	ruleFinalizers     = "finalizers"
	ruleRequired       = "required"
	ruleHostNamespace  = "host-namespace"
	ruleHostPort       = "host-port"
	rulePodSecurity    = "pod-security"
	ruleServiceAccount = "service-account"
	ruleContainers     = "containers"
	rulePlacement      = "placement"
	ruleVolume         = "volume"
	ruleSecretRef      = "secret-ref"
	ruleResources      = "resources"
	ruleReplicas       = "replicas"
	ruleSelector       = "selector"
	ruleService        = "service"
	ruleIngress        = "ingress"
	ruleIngressHost    = "ingress-host"
	ruleSecContext     = "security-context"
	ruleProbeHost      = "probe-host"
	ruleIngressClass   = "ingress-class"
	ruleIngressTLS     = "ingress-tls"
	ruleGatewayRoute   = "gateway-route"
	ruleNetworkPolicy  = "network-policy"
	ruleNetworkEgress  = "network-egress"
	ruleNetworkIngress = "network-ingress"
	ruleSecret         = "secret"
	ruleImageRegistry  = "image-registry"
	ruleProfile        = "security-profile"
	ruleRootGroup      = "root-group"
	ruleGrace          = "termination-grace"
	ruleSchedulingGate = "scheduling-gates"
	ruleClusterIP      = "service-cluster-ip"
	ruleSourceRanges   = "service-source-ranges"
	ruleQuota          = "resource-quota"
	ruleLimitRange     = "limit-range"
	ruleNamespaceMeta  = "namespace-metadata"
	ruleUnjudged       = "unjudged-field"
	ruleOwner          = "owner-reference"
	ruleBareNames      = "bare-names"
)

// Check parses manifest (multi-document YAML as Helm renders it, with "---" separators and
// "# Source:" comments, empty documents allowed) and returns a *Violation for the first broken rule,
// in document order and then the required objects, or nil. An Instance the gate cannot judge by
// (no release, namespace or labels, no workload, a workload without labels or a selector, a
// primary workload with a name or a component without one) is a plain error: the release is
// refused all the same.
func Check(manifest []byte, in Instance) error {
	_, err := Passed(manifest, in)
	return err
}

// Passed is Check that returns the objects that passed, each as the API server reads it, so the
// caller can write them out without parsing the manifest again.
func Passed(manifest []byte, in Instance) ([]*unstructured.Unstructured, error) {
	c, objs, err := prepare(manifest, in)
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		if err := c.object(o); err != nil {
			return nil, err
		}
	}
	if err := c.required(); err != nil {
		return nil, err
	}
	out := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		out[i] = &unstructured.Unstructured{Object: o.raw}
	}
	return out, nil
}

// prepare makes the checker for in and parses manifest into its objects.
func prepare(manifest []byte, in Instance) (*checker, []*object, error) {
	c, err := newChecker(in)
	if err != nil {
		return nil, nil, err
	}
	objs, err := parse(manifest)
	return c, objs, err
}

// CheckIdentity parses manifest and applies only the rules that say whose its objects are: the
// allowlisted kinds, their fixed names, no duplicates and the instance's namespace. It judges a
// stored release record before Helm deletes what it lists (an upgrade, an uninstall): the objects
// must be the instance's own, whatever the policy now says of their specs. A record is a Secret
// that whoever may write Secrets in the Challenge's namespace can forge.
func CheckIdentity(manifest []byte, in Instance) error {
	c, objs, err := prepare(manifest, in)
	if err != nil {
		return err
	}
	for _, o := range objs {
		c.part = c.partOf(o)
		for _, rule := range []func(*object) error{c.scope, c.name, c.duplicate, c.namespace} {
			if err := rule(o); err != nil {
				return err
			}
		}
	}
	return nil
}

// DefaultInternalCIDRs are forbidden whatever the operator is told: the private, shared, loopback,
// link-local and unique-local ranges of both families, and the cloud metadata and host endpoints
// (169.254.169.254 and fd00:ec2::254, Azure's 168.63.129.16). The operator's own ranges
// (--internal-cidrs) are added to them, never put in their place.
var DefaultInternalCIDRs = mustPrefixes(
	"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "168.63.129.16/32", "169.254.0.0/16",
	"172.16.0.0/12", "192.0.0.0/24", "192.168.0.0/16",
	"::/128", "::1/128", "fc00::/7", "fd00:ec2::254/128", "fe80::/10",
)

// mustPrefixes parses constant CIDRs.
func mustPrefixes(cidrs ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(cidrs))
	for i, c := range cidrs {
		out[i] = netip.MustParsePrefix(c)
	}
	return out
}

// checker judges the objects of one release and remembers which it has seen.
type checker struct {
	in Instance
	// part is the part the object being judged belongs to.
	part      *part
	domain    string
	dnsNS     string
	forbidden []netip.Prefix
	allowed   []netip.Prefix
	seen      map[string]bool
	// own is the part of the objects that belong to no workload: the instance's own.
	own *part
	// workloads are the parts of Instance.Workloads, in order: the primary one first.
	workloads []*part
	// byName finds a workload's part by its objects' name.
	byName map[string]*part
	// headless is the part of the instance's bare names' headless Service.
	headless *part
}

// part is what the objects of one workload, or those of the instance that belong to none, must be.
type part struct {
	component string // "" for the primary one
	name      string // its objects' name
	exposed   bool
	// reachable lets its NetworkPolicy admit the outside: exposed, or a port exposed on its own.
	reachable bool
	// port is, for the Ingress or route of one more exposed port, that port's name.
	port     string
	host     string
	labels   map[string]string
	selector map[string]string
	security *security.Context
	// containers are the names of its pod's containers, in order: its main one, then its sidecars.
	containers []string
	bareName   string // its pods' hostname, with the instance's bare names
	headless   bool   // the bare names' headless Service
	// secretFiles are the keys of the instance's Secret its pods may mount by item.
	secretFiles []string
	// secretEnv are the keys of the instance's Secret its pods' environment may read.
	secretEnv []string
}

// profile is the profile the part's pods meet: restricted without a context.
func (p *part) profile() ctfv1alpha1.SecurityProfile {
	if p.security == nil {
		return ctfv1alpha1.ProfileRestricted
	}
	return p.security.Profile
}

// level is the Pod Security Standard level the part's pods meet.
func (p *part) level() psaapi.Level { return psaapi.Level(p.profile()) }

// newChecker prepares the instance's settings once for every object.
func newChecker(in Instance) (*checker, error) {
	if in.Release == "" || in.Namespace == "" || len(in.Labels) == 0 || len(in.Workloads) == 0 {
		return nil, errors.New("policy: the instance needs a release, a namespace, identity labels and a workload")
	}
	if in.OwnNamespace && (len(in.Quota) == 0 || len(in.LimitRange) == 0) {
		return nil, errors.New("policy: an instance with a namespace of its own needs its quota and limit range")
	}
	forbidden, err := masked(append(slices.Clone(in.Limits.InternalCIDRs), DefaultInternalCIDRs...))
	if err != nil {
		return nil, fmt.Errorf("policy: internal CIDRs: %w", err)
	}
	allowed, err := masked(in.Limits.AllowedCIDRs)
	if err != nil {
		return nil, fmt.Errorf("policy: allowed CIDRs: %w", err)
	}
	workloads, err := workloadParts(in)
	if err != nil {
		return nil, err
	}
	c := &checker{in: in, forbidden: forbidden, allowed: allowed, seen: map[string]bool{}, workloads: workloads, byName: map[string]*part{}}
	c.own = &part{name: in.Release, labels: in.Labels}
	c.headless = &part{name: identity.BareNamesService(in.Release), labels: in.Labels, headless: true}
	if in.BareNames != nil {
		c.headless.name, c.headless.selector = in.BareNames.Service, in.BareNames.Selector
	}
	for i, p := range workloads {
		c.byName[p.name] = p
		for port, host := range in.Workloads[i].PortHosts {
			exposure := *p
			exposure.exposed, exposure.port, exposure.host = true, port, host
			c.byName[identity.PortObject(p.name, port)] = &exposure
		}
	}
	c.domain = strings.ToLower(strings.TrimSuffix(in.Limits.IngressDomain, "."))
	c.dnsNS = in.Limits.DNSNamespace
	if c.dnsNS == "" {
		c.dnsNS = "kube-system"
	}
	return c, nil
}

// workloadParts are the parts of in's workloads, in order: the primary one's objects named
// after the release, each component's after the release and its name.
func workloadParts(in Instance) ([]*part, error) {
	parts := make([]*part, 0, len(in.Workloads))
	for i, w := range in.Workloads {
		if len(w.Labels) == 0 || len(w.Selector) == 0 {
			return nil, fmt.Errorf("policy: workload %q needs identity labels and a selector", w.Name)
		}
		// The name rule tells the primary workload, named after the release, by its empty name.
		if (i == 0) != (w.Name == "") {
			return nil, fmt.Errorf("policy: workload %d is named %q: the first, and only it, is the primary one, named \"\"", i, w.Name)
		}
		name, main := in.Release, identity.PrimaryWorkload
		if i > 0 {
			name, main = identity.ComponentObject(in.Release, w.Name), w.Name
		}
		parts = append(parts, &part{component: w.Name, name: name, exposed: w.Exposed, reachable: w.Exposed || len(w.PortHosts) > 0, host: w.Host, labels: w.Labels,
			selector: w.Selector, security: w.Security, containers: append([]string{main}, w.Sidecars...), bareName: w.BareName, secretFiles: w.SecretFiles, secretEnv: w.SecretEnv})
	}
	return parts, nil
}

// object applies every rule to one object, the generic ones first.
func (c *checker) object(o *object) error {
	c.part = c.partOf(o)
	for _, rule := range []func(*object) error{c.scope, c.name, c.duplicate, c.namespace, c.metadata, c.owners, c.spec, c.fields} {
		if err := rule(o); err != nil {
			return err
		}
	}
	return nil
}

// scope refuses the kinds only an instance with a namespace of its own may create.
func (c *checker) scope(o *object) error {
	if o.spec.ownNamespace && !c.in.OwnNamespace {
		return o.violation(ruleKind, "only an instance with a namespace of its own may create a %s", o.kind)
	}
	return nil
}

// partOf is the part o belongs to: for the kinds each workload has, the workload its name names,
// else the primary one (whose name the name rule then requires); for the others, the instance's.
func (c *checker) partOf(o *object) *part {
	if !o.spec.perComponent {
		return c.own
	}
	if c.isHeadless(o) {
		return c.headless
	}
	if p, ok := c.byName[o.obj.GetName()]; ok {
		return p
	}
	return c.primary()
}

// isHeadless reports whether o is the bare names' headless Service: the instance's, or, in a
// stored record judged for whose it is (AnyComponent), the one an instance of any template has.
func (c *checker) isHeadless(o *object) bool {
	_, svc := o.obj.(*corev1.Service)
	return svc && o.obj.GetName() == c.headless.name && (c.in.BareNames != nil || c.in.AnyComponent)
}

// primary is the primary workload's part.
func (c *checker) primary() *part { return c.workloads[0] }

// anyPortObject reports whether o is the Ingress or route of an exposed port of any workload of
// the instance, named identity.PortObject: what a stored record may hold, whatever its template
// exposes now.
func (c *checker) anyPortObject(o *object) bool {
	switch o.obj.(type) {
	case *networkingv1.Ingress, *gatewayv1.TLSRoute, *gatewayv1.HTTPRoute:
	default:
		return false
	}
	object, port, ok := strings.Cut(o.obj.GetName(), ".")
	if !ok || !anyPortName.MatchString(port) {
		return false
	}
	component, named := strings.CutPrefix(object, c.in.Release+"--")
	return object == c.in.Release || (named && anyComponentName.MatchString(component))
}

// anyPortName matches the names of ports.
var anyPortName = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,13}[a-z0-9])?$`)

// anyComponentName matches the names a stored record's component objects may have.
var anyComponentName = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,6}[a-z0-9])?$`)

// name requires every object's fixed name, so the release cannot touch another instance's objects.
func (c *checker) name(o *object) error {
	if c.in.AnyComponent && c.anyPortObject(o) {
		return nil
	}
	if c.part.port != "" {
		// The Ingress or route of one more exposed port, by its name (partOf); nothing else.
		switch o.obj.(type) {
		case *networkingv1.Ingress, *gatewayv1.TLSRoute, *gatewayv1.HTTPRoute:
			return nil
		}
		return o.violation(ruleName, "only an Ingress or a route may be named after an exposed port")
	}
	rule, want := ruleName, c.in.Release
	if c.part.component != "" || c.part.headless {
		want = o.obj.GetName() // one of its components', or its headless Service (partOf)
	} else if component, ok := strings.CutPrefix(o.obj.GetName(), c.in.Release+"--"); ok && o.spec.perComponent && c.in.AnyComponent && anyComponentName.MatchString(component) {
		want = o.obj.GetName()
	}
	switch o.obj.(type) {
	case *corev1.Secret:
		rule, want = ruleSecret, c.in.FlagSecret
	case *corev1.ConfigMap:
		want = identity.FilesConfigMap(c.in.Release)
	case *corev1.Namespace:
		rule, want = ruleNamespace, c.in.Namespace
	}
	if want == "" {
		return o.violation(rule, "the instance may create no %s", o.kind)
	}
	if o.obj.GetName() != want {
		return o.violation(rule, "a %s must be named %q", o.kind, want)
	}
	return nil
}

// duplicate refuses a second object of the same kind and name: which one is applied is not
// what the gate judged.
func (c *checker) duplicate(o *object) error {
	key := o.kind + "/" + o.obj.GetName()
	if c.seen[key] {
		return o.violation(ruleDuplicate, "rendered more than once")
	}
	c.seen[key] = true
	return nil
}

// namespace keeps every namespaced object in the instance's namespace; a cluster-scoped object
// names no namespace.
func (c *checker) namespace(o *object) error {
	want := c.in.Namespace
	if o.spec.clusterScoped {
		want = ""
	}
	if ns := o.obj.GetNamespace(); ns != want {
		return o.violation(ruleNamespace, "namespace %q, want %q", ns, want)
	}
	return nil
}

// spec applies the rules of the object's kind.
func (c *checker) spec(o *object) error {
	switch obj := o.obj.(type) {
	case *appsv1.Deployment:
		return c.deployment(o, obj)
	case *corev1.Service:
		return c.service(o, obj)
	case *corev1.ServiceAccount:
		return c.serviceAccount(o, obj)
	case *corev1.Secret:
		return c.secret(o, obj)
	case *corev1.ConfigMap:
		if len(obj.BinaryData) > 0 {
			return o.violation(ruleVolume, "the files ConfigMap holds text only")
		}
	case *corev1.Namespace:
		return c.namespaceObject(o, obj)
	case *networkingv1.NetworkPolicy:
		return c.networkPolicy(o, obj)
	case *networkingv1.Ingress:
		return c.ingress(o, obj)
	case *gatewayv1.TLSRoute:
		return c.tlsRoute(o, obj)
	case *gatewayv1.HTTPRoute:
		return c.httpRoute(o, obj)
	case *corev1.ResourceQuota:
		return c.resourceQuota(o, obj)
	case *corev1.LimitRange:
		return c.limitRange(o, obj)
	}
	return nil
}

// required demands the objects the instance needs: a hook annotation would otherwise hide them
// from the post-renderer, and an instance without its NetworkPolicy would be open.
func (c *checker) required() error {
	if c.in.OwnNamespace && !c.seen["Namespace/"+c.in.Namespace] {
		return &Violation{Rule: ruleRequired, Object: "Namespace " + c.in.Namespace, Detail: "not rendered"}
	}
	if c.in.BareNames != nil && !c.seen["Service/"+c.headless.name] {
		return &Violation{Rule: ruleRequired, Object: fmt.Sprintf("Service %s/%s", c.in.Namespace, c.headless.name), Detail: "not rendered"}
	}
	for _, p := range c.workloads {
		for _, kind := range c.requiredOf(p) {
			if !c.seen[kind+"/"+p.name] {
				obj := fmt.Sprintf("%s %s/%s", kind, c.in.Namespace, p.name)
				return &Violation{Rule: ruleRequired, Object: obj, Detail: "not rendered"}
			}
		}
	}
	return nil
}

// requiredOf are the kinds rendered under p's name that the instance needs. Every workload has
// its Deployment and the NetworkPolicy that isolates it; a component's Service is optional (a
// bot nothing connects to has none). The instance's own objects share the primary workload's
// name, so they are required with it.
func (c *checker) requiredOf(p *part) []string {
	if p.component != "" {
		return []string{"Deployment", "NetworkPolicy"}
	}
	need := []string{"Deployment", "Service", "ServiceAccount", "NetworkPolicy"}
	if c.in.OwnNamespace {
		need = append(need, "ResourceQuota", "LimitRange")
	}
	return need
}
