// Package values turns a Challenge into the Helm values of charts/challenge,
// and says what the policy gate lets their release contain. It reads
// nothing from the cluster: what a render reads (Inputs) is handed to it by
// internal/render.
//
// Precedence, lowest to highest: the chart's defaults (applied later by the
// Helm reconciler), spec.values, the typed spec fields, and the values the
// operator enforces (the instance's identity).
package values

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"helm.sh/helm/v3/pkg/chartutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/identity"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
	"github.com/challenge-operator/challenge-operator/internal/organisersecret"
	"github.com/challenge-operator/challenge-operator/internal/policy"
	"github.com/challenge-operator/challenge-operator/internal/security"
)

// Settings are operator-wide values every instance is rendered with.
type Settings struct {
	// InternalCIDRs are the cluster's internal ranges (pods, services,
	// metadata) beyond policy.DefaultInternalCIDRs, which always apply:
	// instances may neither reach them nor count as "outside".
	InternalCIDRs []string
	// NamespacePerInstance, when set, renders each instance into a namespace of its own.
	NamespacePerInstance bool
	// IngressFromNamespaces are the namespaces (an ingress controller's, the
	// platform's) whose pods may connect to instances.
	IngressFromNamespaces []string
	// DNSNamespace is where the cluster DNS runs (kube-system when empty).
	DNSNamespace string
	// ClusterDomain is the cluster's DNS domain (cluster.local when empty),
	// under which the search domain of an instance's bare names lies.
	ClusterDomain string
	// FlagSecretNamespaces are the namespaces flag Secrets may be read from.
	FlagSecretNamespaces []string
	// Keys are the label and annotation keys values may set.
	Keys policy.Keys
	// IngressDomain is the domain under which each instance exposed by an
	// Ingress or a Gateway route gets a host of its own (identity.Host); ""
	// means neither.
	IngressDomain string
	// Gateways are the Gateways TLSRoutes and HTTPRoutes may attach to, the
	// first by default; none means no route.
	Gateways []ctfv1alpha1.GatewayRef
	// SharedServiceNamespaces are the namespaces whose Services templates may
	// let their instances reach (SharedServices).
	SharedServiceNamespaces []string
	// Security bounds what templates may grant their instances.
	Security security.Bounds
}

// Resource floor: every instance's container gets cpu, memory and
// ephemeral-storage limits (these unless its values say otherwise) and
// requests no larger than them.
const (
	DefaultCPULimit      = "500m"
	DefaultMemoryLimit   = "256Mi"
	DefaultCPURequest    = "50m"
	DefaultMemoryRequest = "64Mi"
	// The scratch space: /tmp (64Mi by default) and the root filesystem if
	// a template makes it writable; raised to what the container's
	// disk-backed /tmp and scratch directories hold (diskFloor).
	DefaultEphemeralStorageLimit   = "256Mi"
	DefaultEphemeralStorageRequest = "64Mi"
)

// ForChallenge returns the chart values for a Challenge without a template.
func ForChallenge(c *ctfv1alpha1.Challenge) (chartutil.Values, error) {
	return Compose(c, nil, Settings{})
}

// Compose returns the chart values for c, an instance of tmpl (nil when c has
// no template), without the chart defaults. Precedence, lowest first: the
// template's values, c's spec.values, the typed fields (c's over tmpl's),
// the values the operator enforces.
//
// It reads nothing: what a render reads from the cluster (Inputs) is left
// out, as the checks before admission and of a template alone want it.
func Compose(c *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate, settings Settings) (chartutil.Values, error) {
	return compose(c, tmpl, settings, nil, instanceWorkloads(c, tmpl, settings.IngressDomain))
}

// compose is Compose, with in written where the chart takes it (nil: left
// out), from c's workloads (instanceWorkloads).
func compose(c *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate, settings Settings, in *Inputs, workloads []workload) (chartutil.Values, error) {
	user, err := toMap(c.Spec.Values)
	if err != nil {
		return nil, err
	}
	typed, err := typedValues(&c.Spec)
	if err != nil {
		return nil, err
	}
	vals := map[string]any{}
	if tmpl != nil {
		if err := checkAllowed(tmpl, user, typed); err != nil {
			return nil, err
		}
		if err := checkLifetime(c, tmpl); err != nil {
			return nil, err
		}
		if err := settings.Security.CheckTemplate(tmpl); err != nil {
			return nil, err
		}
		if vals, err = toMap(tmpl.Spec.Values); err != nil {
			return nil, fmt.Errorf("ChallengeTemplate %s: %w", tmpl.Name, err)
		}
		tmplTyped, err := typedValues(templateAsSpec(tmpl))
		if err != nil {
			return nil, err
		}
		merge(tmplTyped, typed)
		typed = tmplTyped
	}
	merge(vals, user)
	merge(vals, typed)
	if err := checkKeys(vals, settings.Keys); err != nil {
		return nil, err
	}
	podSecurity := workloads[0].security
	enforced, err := enforcedValues(c, tmpl, settings, workloads, in)
	if err != nil {
		return nil, err
	}
	merge(vals, enforced)
	if exp, ok := vals["expose"].(map[string]any); ok {
		// An empty tls ({}: the controller's default certificate) may not survive
		// the merge of values, which drops empty objects; say it in so many words.
		exp["https"] = WantsTLS(c, tmpl)
		if err := settings.gateway(exp); err != nil {
			return nil, err
		}
	}
	if tmpl != nil {
		if err := checkExposedPorts("ChallengeTemplate "+tmpl.Name, tmpl.Spec.ExposePorts, vals["ports"]); err != nil {
			return nil, err
		}
	}
	lowPortSysctl(vals)
	vals["resources"] = withExtendedResources(diskFloor(vals), podSecurity.ExtendedResources)
	// From the resources as floored, of every workload: a quota for what the
	// template asks.
	vals["namespacePerInstance"].(map[string]any)["quota"] = toAnyMap(instanceQuota(vals))
	if err := checkAddressNames(vals); err != nil {
		return nil, err
	}
	if in != nil {
		withRoutePorts(vals, in.Gateways)
	}
	withAddresses(vals, workloads[0].secretEnv)
	if in != nil && tmpl != nil {
		// After the addresses: a flag's variable may not take one's name.
		if err := deliverNamedFlags(vals, tmpl, in.Flags); err != nil {
			return nil, err
		}
	}
	return vals, nil
}

// templateAsSpec views a template's typed fields as a Challenge's.
func templateAsSpec(tmpl *ctfv1alpha1.ChallengeTemplate) *ctfv1alpha1.ChallengeSpec {
	t := &tmpl.Spec
	return &ctfv1alpha1.ChallengeSpec{Image: t.Image, Ports: t.Ports, Env: t.Env, Resources: t.Resources, Expose: t.Expose}
}

// typedValues maps the typed spec fields to chart values; unset fields are left out
// so that spec.values and the chart defaults show through.
func typedValues(spec *ctfv1alpha1.ChallengeSpec) (map[string]any, error) {
	return toMap(ctfv1alpha1.Values{Image: spec.Image, Ports: spec.Ports, Env: spec.Env, Resources: spec.Resources, Expose: spec.Expose})
}

// enforcedValues are what no override may change, set on every render
// whatever the values and the operator's flags say: the instance's identity,
// its flag, its namespace and its network boundaries, with what the render
// read (in; nil: left out).
func enforcedValues(c *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate, settings Settings, workloads []workload, in *Inputs) (map[string]any, error) {
	podSecurity := workloads[0].security
	flagValues := flagValuesFor("", nil)
	egress := []any{}
	internetEgress := false
	var components []ctfv1alpha1.Component
	container := containerValues{Command: []ctfv1alpha1.Argument{}, Args: []ctfv1alpha1.Argument{}, Scratch: []scratchValues{}, MountTmp: true,
		Files: []fileValues{}, SecretFiles: []secretFileValues{}}
	if tmpl != nil {
		container = containerValuesFor(&tmpl.Spec.Container, "", probesFor(tmpl.Spec.Probes))
		var delivery *ctfv1alpha1.FlagDelivery
		if f := tmpl.Spec.Flag; f != nil {
			delivery = &f.FlagDelivery
		}
		if needsSecret(tmpl) {
			// The instance's one Secret holds its secretEnv values beside its
			// flag, and its components' and its secret files'.
			flagValues = flagValuesFor(identity.FlagSecret(c.Name), delivery)
		}
		if in != nil && delivery != nil {
			flagValues["value"] = in.Flag
		}
		for _, e := range tmpl.Spec.Egress {
			rule, _ := toMap(e)
			egress = append(egress, rule)
		}
		internetEgress = tmpl.Spec.Policy != nil && tmpl.Spec.Policy.InternetEgress
		components = tmpl.Spec.Components
	}
	exposePorts := []any{}
	if tmpl != nil {
		var err error
		if exposePorts, err = portExposureValues(&workloads[0], settings); err != nil {
			return nil, err
		}
	}
	hostVars := hostValues(c.Name, components)
	componentValues, err := componentsFor(c, tmpl, workloads[1:], hostVars, settings)
	if err != nil {
		return nil, err
	}
	sidecars, err := sidecarsFor(workloads[0].workloadName(), workloads[0].sidecars, hostVars, podSecurity.ExtendedResources, instanceSecret(c, tmpl))
	if err != nil {
		return nil, err
	}
	withBareNames(tmpl, componentValues)
	hosts, err := toMap(map[string]any{"hosts": hostVars})
	if err != nil {
		return nil, err
	}
	securityValues, err := toMap(securityValuesFor(podSecurity))
	if err != nil {
		return nil, err
	}
	shared, err := sharedServicesOf(in)
	if err != nil {
		return nil, err
	}
	participant := c.Spec.Participant
	if in != nil && in.Claimant != "" {
		// A claimed pooled instance is the team's: its objects say so; its
		// pods keep the label they started with.
		participant = in.Claimant
	}
	out, err := toMap(container)
	if err != nil {
		return nil, err
	}
	merge(out, map[string]any{
		"participant":    participant,
		"podParticipant": c.Spec.Participant,
		"challenge":      identity.Challenge(c, tmpl),
		"flag":           flagValues,
		"secretEnv":      secretEnvValuesOf(&workloads[0], in),
		"secretData":     secretDataOf(workloads, in), // the components' secretEnv values and the secret files
		"security":       securityValues,
		"components":     componentValues,
		"exposePorts":    exposePorts,
		"sidecars":       sidecars,
		"hosts":          hosts["hosts"],
		"bareNames":      bareNames(c, tmpl, settings),
		"networkPolicy": map[string]any{
			"internalCIDRs":         toAny(settings.EffectiveInternalCIDRs()),
			"egress":                egress,
			"allowInternetEgress":   internetEgress,
			"ingressFromNamespaces": toAny(settings.IngressFromNamespaces),
			"dnsNamespace":          settings.EffectiveDNSNamespace(),
			"sharedServices":        shared,
		},
		"expose": map[string]any{"host": identity.Host(c, settings.IngressDomain)},
		"namespacePerInstance": map[string]any{
			"enabled": settings.NamespacePerInstance, nameKey: identity.Namespace(c),
			"quota": map[string]any{}, "limitRange": namespaceLimitValues(), // quota: instanceQuota, once every workload's resources are known
			"profile": string(widestProfile(workloads)),
		},
	})
	if tmpl != nil && tmpl.Spec.IsShared() {
		// Set only here: every other instance's values stay as they were.
		out["networkPolicy"].(map[string]any)["fromInstances"] = true
	}
	return out, nil
}

// gateway sets the Gateway a route attaches to, for the route types: the
// one the values name if the operator's --gateways list it, else the first
// of them.
func (s Settings) gateway(expose map[string]any) error {
	typ, _ := expose["type"].(string)
	if typ != string(ctfv1alpha1.ExposeTLSRoute) && typ != string(ctfv1alpha1.ExposeHTTPRoute) {
		delete(expose, "gateway")
		return nil
	}
	if len(s.Gateways) == 0 {
		return lifecycle.Errorf(lifecycle.ReasonPolicyViolation, "gateway: expose.type %s needs a Gateway of the operator's --gateways, which lists none", typ)
	}
	want := s.Gateways[0]
	if named, ok := expose["gateway"].(map[string]any); ok {
		ns, _ := named["namespace"].(string)
		name, _ := named[nameKey].(string)
		want = ctfv1alpha1.GatewayRef{Namespace: ns, Name: name}
		if !slices.Contains(s.Gateways, want) {
			return lifecycle.Errorf(lifecycle.ReasonPolicyViolation, "gateway: Gateway %s/%s is not one of --gateways (%s)", ns, name, describeGateways(s.Gateways))
		}
	}
	expose["gateway"] = map[string]any{"namespace": want.Namespace, nameKey: want.Name}
	return nil
}

func describeGateways(gws []ctfv1alpha1.GatewayRef) string {
	names := make([]string, len(gws))
	for i, g := range gws {
		names[i] = g.Namespace + "/" + g.Name
	}
	return strings.Join(names, ", ")
}

// WantsTLS reports whether any layer of c's values asks its Ingress or
// HTTPRoute to serve HTTPS.
func WantsTLS(c *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate) bool {
	exposes := []*ctfv1alpha1.Expose{c.Spec.Expose}
	if c.Spec.Values != nil {
		exposes = append(exposes, c.Spec.Values.Expose)
	}
	if tmpl != nil {
		exposes = append(exposes, tmpl.Spec.Expose)
		if tmpl.Spec.Values != nil {
			exposes = append(exposes, tmpl.Spec.Values.Expose)
		}
	}
	return slices.ContainsFunc(exposes, func(e *ctfv1alpha1.Expose) bool { return e != nil && e.TLS != nil })
}

// containerValues are the template's command line for the container (empty
// keeps the image's own) and its writable directories.
type containerValues struct {
	Command    []ctfv1alpha1.Argument `json:"command"`
	Args       []ctfv1alpha1.Argument `json:"args"`
	WorkingDir string                 `json:"workingDir"`
	Scratch    []scratchValues        `json:"scratch"`
	MountTmp   bool                   `json:"mountTmp"`
	// MemoryTmp backs the /tmp emptyDir with memory.
	MemoryTmp bool         `json:"memoryTmp"`
	Probes    probeValues  `json:"probes"`
	Files     []fileValues `json:"files"`
	// SecretFiles are the organiser's Secrets' keys the container reads as
	// files, each copied into the instance's Secret under its key.
	SecretFiles []secretFileValues `json:"secretFiles"`
}

// containerValuesFor are ctr's values, its files keyed after filePrefix
// (filesFor) and probes as given.
func containerValuesFor(ctr *ctfv1alpha1.Container, filePrefix string, probes probeValues) containerValues {
	return containerValues{Command: orEmptyList(ctr.Command), Args: orEmptyList(ctr.Args), WorkingDir: ctr.WorkingDir,
		Scratch: scratchFor(ctr.Scratch), MountTmp: !ctr.KeepImageTmp, MemoryTmp: ctr.MemoryTmp && !ctr.KeepImageTmp, Probes: probes, Files: filesFor(filePrefix, ctr.Files),
		SecretFiles: secretFilesFor(filePrefix, ctr.SecretFiles)}
}

// secretFileValues are one secret file as the chart mounts it: the key of
// the instance's Secret holding it, its path and its mode.
type secretFileValues struct {
	Key  string `json:"key"`
	Path string `json:"path"`
	Mode int32  `json:"mode"`
}

// secretFileKey is the key of a container's i-th secret file in the
// instance's Secret: "file.<i>" after its prefix (a component's name and a
// dot; none for the primary's), never a secretEnv's key (env.<NAME>,
// <component>.env.<NAME>).
func secretFileKey(prefix string, i int) string {
	return fmt.Sprintf("%sfile.%d", prefix, i)
}

// secretFilesFor are a container's secret files, keyed after prefix.
func secretFilesFor(prefix string, files []ctfv1alpha1.SecretFile) []secretFileValues {
	out := make([]secretFileValues, 0, len(files))
	for i, f := range files {
		out = append(out, secretFileValues{Key: secretFileKey(prefix, i), Path: f.Path, Mode: ptr.Deref(f.Mode, DefaultFileMode)})
	}
	return out
}

// fileValues are one file the template carries, as the chart writes it into
// the instance's ConfigMap (under key) and mounts it.
type fileValues struct {
	Key     string `json:"key"`
	Path    string `json:"path"`
	Content string `json:"content"`
	Mode    int32  `json:"mode"`
}

// DefaultFileMode lets every user of the container read a template's file.
const DefaultFileMode int32 = 0o444

// filesFor keys each file by its index after prefix (a component's name and
// a dot; none for the primary component) in the instance's one ConfigMap.
func filesFor(prefix string, files []ctfv1alpha1.File) []fileValues {
	out := make([]fileValues, 0, len(files))
	for i, f := range files {
		out = append(out, fileValues{Key: fmt.Sprintf("%sf%d", prefix, i), Path: f.Path, Content: f.Content, Mode: ptr.Deref(f.Mode, DefaultFileMode)})
	}
	return out
}

// probeValues are the template's probes as the chart writes them.
type probeValues struct {
	Readiness *corev1.Probe `json:"readiness,omitempty"`
	Startup   *corev1.Probe `json:"startup,omitempty"`
	Liveness  *corev1.Probe `json:"liveness,omitempty"`
}

func probesFor(p *ctfv1alpha1.Probes) probeValues {
	if p == nil {
		return probeValues{}
	}
	return probeValues{Readiness: probeFor(p.Readiness), Startup: probeFor(p.Startup), Liveness: probeFor(p.Liveness)}
}

// probeFor writes a template's probe as Kubernetes does, never with a host:
// the kubelet probes the pod itself.
func probeFor(p *ctfv1alpha1.Probe) *corev1.Probe {
	if p == nil {
		return nil
	}
	out := &corev1.Probe{PeriodSeconds: ptr.Deref(p.PeriodSeconds, 0), InitialDelaySeconds: ptr.Deref(p.InitialDelaySeconds, 0),
		TimeoutSeconds: ptr.Deref(p.TimeoutSeconds, 0), FailureThreshold: ptr.Deref(p.FailureThreshold, 0)}
	switch {
	case p.HTTP != nil:
		out.HTTPGet = &corev1.HTTPGetAction{Path: p.HTTP.Path, Port: intstr.FromString(p.HTTP.Port)}
	case p.TCP != nil:
		out.TCPSocket = &corev1.TCPSocketAction{Port: intstr.FromString(p.TCP.Port)}
	case p.Exec != nil:
		cmd := make([]string, len(p.Exec.Command))
		for i, a := range p.Exec.Command {
			cmd[i] = string(a)
		}
		out.Exec = &corev1.ExecAction{Command: cmd}
	}
	return out
}

// scratchValues are one writable directory as the chart mounts it.
type scratchValues struct {
	Path      string `json:"path"`
	SizeLimit string `json:"sizeLimit"`
	Medium    string `json:"medium"`
}

// DefaultFlagFileMode lets every user of the container read the flag file.
const DefaultFlagFileMode int32 = 0o444

// flagValuesFor are a container's flag values: the instance's Secret
// (secretName, "" when it has none) and how the flag reaches the container,
// f (nil: it does not).
func flagValuesFor(secretName string, f *ctfv1alpha1.FlagDelivery) map[string]any {
	enabled := f != nil
	if f == nil {
		f = &ctfv1alpha1.FlagDelivery{}
	}
	return map[string]any{"enabled": enabled, "secretName": secretName, "mount": string(cmp.Or(f.Mount, ctfv1alpha1.FlagMountFile)),
		"path": cmp.Or(f.Path, DefaultFlagPath), "envName": f.EnvName, "fileMode": ptr.Deref(f.FileMode, DefaultFlagFileMode)}
}

// DefaultFlagPath is where a container finds the flag file when its
// delivery names no path.
const DefaultFlagPath = "/flag/flag.txt"

// needsSecret reports whether an instance of tmpl has a Secret of its own:
// for its flag, or a value read from the organiser's Secrets (a secretEnv of
// any workload, a secret file of any container).
func needsSecret(tmpl *ctfv1alpha1.ChallengeTemplate) bool {
	if tmpl == nil {
		return false
	}
	s := &tmpl.Spec
	if s.Flag != nil || len(s.Flags) > 0 || len(s.SecretEnv) > 0 || len(s.SecretFiles) > 0 || slices.ContainsFunc(s.Sidecars, sidecarReadsSecrets) {
		return true
	}
	return slices.ContainsFunc(s.Components, func(c ctfv1alpha1.Component) bool {
		return len(c.SecretEnv) > 0 || len(c.SecretFiles) > 0 || slices.ContainsFunc(c.Sidecars, sidecarReadsSecrets)
	})
}

// sidecarReadsSecrets reports whether a sidecar reads a value of the
// organiser's Secrets.
func sidecarReadsSecrets(sc ctfv1alpha1.Sidecar) bool {
	return len(sc.SecretEnv) > 0 || len(sc.SecretFiles) > 0
}

// DefaultScratchSize bounds a scratch directory whose template names no size.
const DefaultScratchSize = "64Mi"

func scratchFor(mounts []ctfv1alpha1.ScratchMount) []scratchValues {
	out := make([]scratchValues, 0, len(mounts))
	for _, m := range mounts {
		v := scratchValues{Path: m.Path, SizeLimit: DefaultScratchSize}
		if m.SizeLimit != nil {
			v.SizeLimit = string(*m.SizeLimit)
		}
		if m.Memory {
			v.Medium = string(corev1.StorageMediumMemory)
		}
		out = append(out, v)
	}
	return out
}

// lowPortSysctl lets a non-root process bind the lowest of ports when it is
// below 1024, through the pod's own network namespace's
// net.ipv4.ip_unprivileged_port_start (a safe sysctl, allowed in restricted):
// a capability added to a non-root container never reaches its process.
func lowPortSysctl(vals map[string]any) {
	ports := podPorts(vals)
	lowest := int64(1024)
	for _, p := range ports {
		m, _ := p.(map[string]any)
		// Values went through JSON: numbers are float64.
		if n, ok := m["port"].(float64); ok && int64(n) < lowest {
			lowest = int64(n)
		}
	}
	sec, _ := vals["security"].(map[string]any)
	pod, _ := sec["pod"].(map[string]any)
	if lowest >= 1024 || pod == nil {
		return
	}
	pod["sysctls"] = []any{map[string]any{nameKey: policy.UnprivilegedPortSysctl, "value": strconv.FormatInt(lowest, 10)}}
}

// securityValues are a security.Context as the chart's security values.
type securityValues struct {
	Profile          ctfv1alpha1.SecurityProfile `json:"profile"`
	Pod              *corev1.PodSecurityContext  `json:"pod"`
	Container        *corev1.SecurityContext     `json:"container"`
	RuntimeClassName string                      `json:"runtimeClassName"`
	NodeSelector     map[string]string           `json:"nodeSelector"`
	Tolerations      []corev1.Toleration         `json:"tolerations"`
}

func securityValuesFor(ctx security.Context) securityValues {
	return securityValues{Profile: ctx.Profile, Pod: ctx.Pod, Container: ctx.Container, RuntimeClassName: ptr.Deref(ctx.RuntimeClassName, ""),
		NodeSelector: orEmptyMap(ctx.NodeSelector), Tolerations: orEmptyList(ctx.Tolerations)}
}

func orEmptyMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func orEmptyList[T any](l []T) []T {
	if l == nil {
		return []T{}
	}
	return l
}

// withExtendedResources adds a template's extended resources (a KVM
// device) to the container's limits and requests, which must be equal.
func withExtendedResources(res map[string]any, extended corev1.ResourceList) map[string]any {
	for name, q := range extended {
		for _, k := range []string{"limits", "requests"} {
			res[k].(map[string]any)[string(name)] = q.String()
		}
	}
	return res
}

// EffectiveInternalCIDRs are the internal ranges instances are held to:
// policy.DefaultInternalCIDRs and then InternalCIDRs, each once, as networks
// (the API server wants an except's address masked). A range that does not
// parse is left out: the flag was checked with the same parser.
func (s Settings) EffectiveInternalCIDRs() []string {
	out := make([]string, 0, len(policy.DefaultInternalCIDRs)+len(s.InternalCIDRs))
	for _, p := range policy.DefaultInternalCIDRs {
		out = append(out, p.Masked().String())
	}
	for _, c := range s.InternalCIDRs {
		p, err := netip.ParsePrefix(c)
		if err != nil || slices.Contains(out, p.Masked().String()) {
			continue
		}
		out = append(out, p.Masked().String())
	}
	return out
}

// NamespaceQuota is the ResourceQuota of an instance's namespace of its own,
// for each of its components (the primary one included).
var NamespaceQuota = map[string]string{
	"pods": "4", "services": "2",
	"requests.cpu": "1", "requests.memory": "1Gi",
	"limits.cpu": "2", "limits.memory": "2Gi",
}

// namespaceQuota is NamespaceQuota for an instance of n components.
func namespaceQuota(n int) map[string]string {
	out := make(map[string]string, len(NamespaceQuota))
	for k, v := range NamespaceQuota {
		q := resource.MustParse(v)
		q.Mul(int64(n))
		out[k] = q.String()
	}
	return out
}

// namespaceLimits are the default limits and requests of the containers in
// an instance's namespace of its own: the resource floor.
func namespaceLimits() (limits, requests map[string]string) {
	return map[string]string{"cpu": DefaultCPULimit, "memory": DefaultMemoryLimit},
		map[string]string{"cpu": DefaultCPURequest, "memory": DefaultMemoryRequest}
}

// namespaceLimitValues are namespaceLimits as the chart's limitRange values.
func namespaceLimitValues() map[string]any {
	limits, requests := namespaceLimits()
	return map[string]any{"default": toAnyMap(limits), "defaultRequest": toAnyMap(requests)}
}

// NamespaceBounds are the ResourceQuota hard limits and the LimitRange items
// the operator renders into an instance's namespace of its own, as the gate
// compares them, for an instance with that many components besides its
// primary one.
func NamespaceBounds(components int) (corev1.ResourceList, []corev1.LimitRangeItem, error) {
	quota, err := resourceList(namespaceQuota(1 + components))
	if err != nil {
		return nil, nil, fmt.Errorf("namespace quota: %w", err)
	}
	limits, requests := namespaceLimits()
	def, err := resourceList(limits)
	if err != nil {
		return nil, nil, fmt.Errorf("namespace limit range: %w", err)
	}
	req, err := resourceList(requests)
	if err != nil {
		return nil, nil, fmt.Errorf("namespace limit range: %w", err)
	}
	return quota, []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, Default: def, DefaultRequest: req}}, nil
}

// resourceList parses a map of resource names to quantities.
func resourceList(m map[string]string) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	for k, v := range m {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		out[corev1.ResourceName(k)] = q
	}
	return out, nil
}

func toAnyMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// EffectiveDNSNamespace is the namespace of the DNS peer instances may reach.
func (s Settings) EffectiveDNSNamespace() string {
	if s.DNSNamespace != "" {
		return s.DNSNamespace
	}
	return "kube-system"
}

// EffectiveClusterDomain is the cluster's DNS domain: cluster.local unless
// the operator is told otherwise.
func (s Settings) EffectiveClusterDomain() string {
	if s.ClusterDomain != "" {
		return s.ClusterDomain
	}
	return "cluster.local"
}

// checkFlagSecret refuses a template whose flag Secret lies outside the
// namespaces the operator may read flags from, reading nothing: a
// template's check judges it before any instance reads the Secret.
func (s Settings) checkFlagSecret(tmpl *ctfv1alpha1.ChallengeTemplate) error {
	ref := tmpl.Spec.Flag.Static
	if d := tmpl.Spec.Flag.Dynamic; d != nil {
		ref = &d.SecretKey
	}
	if ref == nil {
		return nil
	}
	return organisersecret.Namespaces(s.FlagSecretNamespaces).Allow(tmpl, "its flag", ref.Namespace)
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// toMap round-trips v through JSON so that the values hold only plain JSON types,
// as Helm's templates and schema validation expect.
func toMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding values: %w", err)
	}
	out := map[string]any{}
	if string(b) == "null" {
		return out, nil
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("decoding values: %w", err)
	}
	return out, nil
}

// merge writes src over dst: maps merge key by key, anything else (lists
// included) is replaced, matching how Helm coalesces values.
func merge(dst, src map[string]any) {
	for k, v := range src {
		if isNull(v) {
			continue
		}
		srcMap, srcIsMap := v.(map[string]any)
		dstMap, dstIsMap := dst[k].(map[string]any)
		if srcIsMap && dstIsMap {
			merge(dstMap, srcMap)
			continue
		}
		dst[k] = v
	}
}

func isNull(v any) bool {
	if v == nil {
		return true
	}
	m, ok := v.(map[string]any)
	return ok && len(m) == 0
}

// nameKey is the key of an entry's name in the chart's values (a
// container's, a variable's, a Gateway's).
const nameKey = "name"
