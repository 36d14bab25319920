package policy

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	psaapi "k8s.io/pod-security-admission/api"
	psapolicy "k8s.io/pod-security-admission/policy"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/identity"
	"github.com/challenge-operator/challenge-operator/internal/security"
)

// evaluator evaluates the Pod Security Standards; it is built once, as its package asks.
var evaluator = sync.OnceValues(func() (psapolicy.Evaluator, error) {
	return psapolicy.NewEvaluator(psapolicy.DefaultChecks(), nil)
})

// deployment checks the Deployment's scale and selector, then its pod template.
func (c *checker) deployment(o *object, d *appsv1.Deployment) error {
	replicas := int32(1)
	if d.Spec.Replicas != nil {
		replicas = *d.Spec.Replicas
	}
	if replicas > c.in.Limits.MaxReplicas {
		return o.violation(ruleReplicas, "%d replicas, at most %d", replicas, c.in.Limits.MaxReplicas)
	}
	if !exactSelector(d.Spec.Selector, c.part.selector) {
		return o.violation(ruleSelector, "the selector must be exactly matchLabels %v", c.part.selector)
	}
	if err := c.keys(o, &d.Spec.Template.ObjectMeta, podTemplate, false); err != nil {
		return err
	}
	return c.pod(o, &d.Spec.Template)
}

// exactSelector reports whether s is matchLabels want and nothing else.
func exactSelector(s *metav1.LabelSelector, want map[string]string) bool {
	return s != nil && len(s.MatchExpressions) == 0 && maps.Equal(s.MatchLabels, want)
}

// pod applies the pod rules: the gate's own first, for their precise names, then the restricted
// Pod Security Standard as the catch-all.
func (c *checker) pod(o *object, t *corev1.PodTemplateSpec) error {
	rules := []func(*object, *corev1.PodSpec) error{
		c.hostNamespaces, c.hostPorts, c.placement, c.serviceAccountUse, c.containers,
		c.volumes, c.secretRefs, c.resources, c.images, c.rootGroup, terminationGrace, schedulingGates, probeHosts,
		c.podNames,
	}
	for _, rule := range rules {
		if err := rule(o, &t.Spec); err != nil {
			return err
		}
	}
	if err := c.securityProfiles(o, t); err != nil {
		return err
	}
	if err := c.podSecurity(o, t); err != nil {
		return err
	}
	return c.securityContext(o, &t.Spec)
}

// UnprivilegedPortSysctl is the one sysctl a pod may set: the lowest port a non-root process may
// bind, in the pod's own network namespace, so that a non-root server can listen on port 80.
const UnprivilegedPortSysctl = "net.ipv4.ip_unprivileged_port_start"

// level is the Pod Security Standard level the pods of the object being judged meet.
func (c *checker) level() psaapi.Level { return c.part.level() }

// widestLevel is the level a namespace holding every pod of the instance must allow.
func (c *checker) widestLevel() psaapi.Level {
	profiles := make([]ctfv1alpha1.SecurityProfile, 0, len(c.workloads))
	for _, p := range c.workloads {
		profiles = append(profiles, p.profile())
	}
	return psaapi.Level(security.Widest(profiles...))
}

// securityContext requires the pod's and its container's security settings to be exactly
// the template's, as the operator computed them within its flags: at the privileged level,
// where the Pod Security Standards allow everything, this is what bounds the pod.
func (c *checker) securityContext(o *object, p *corev1.PodSpec) error {
	if sc := p.SecurityContext; sc != nil {
		for _, s := range sc.Sysctls {
			if n, err := strconv.Atoi(s.Value); s.Name != UnprivilegedPortSysctl || err != nil || n < 0 || n > 65535 {
				return o.violation(ruleSecContext, "sysctl %s: only %s, to a port number", s.Name, UnprivilegedPortSysctl)
			}
		}
	}
	want := c.part.security
	if want == nil {
		return nil
	}
	got := p.SecurityContext
	if got != nil {
		got = got.DeepCopy()
		got.Sysctls = nil // judged above: the ports decide it, not the template
	}
	if !apiequality.Semantic.DeepEqual(got, want.Pod) {
		return o.violation(ruleSecContext, "the pod's securityContext must be exactly its template's")
	}
	if !apiequality.Semantic.DeepEqual(p.RuntimeClassName, want.RuntimeClassName) {
		return o.violation(ruleSecContext, "the pod's runtimeClassName must be exactly its template's")
	}
	for _, ctr := range p.Containers {
		got := ctr.SecurityContext
		if got != nil {
			got = got.DeepCopy()
			got.ReadOnlyRootFilesystem = nil // a value of the chart's, not a grant
		}
		if !apiequality.Semantic.DeepEqual(got, want.Container) {
			return o.violation(ruleSecContext, "container %q: the securityContext must be exactly its template's", ctr.Name)
		}
	}
	return nil
}

// probeHosts refuses probes and lifecycle hooks that name a host: the kubelet would connect to it
// from the node's network, where the NetworkPolicy does not hold (the cloud's metadata, the API
// server, another instance), and a probe's outcome tells its result back to the instance.
func probeHosts(o *object, p *corev1.PodSpec) error {
	for _, ctr := range p.Containers {
		handlers := []*corev1.ProbeHandler{}
		for _, pr := range []*corev1.Probe{ctr.ReadinessProbe, ctr.LivenessProbe, ctr.StartupProbe} {
			if pr != nil {
				handlers = append(handlers, &pr.ProbeHandler)
			}
		}
		if lc := ctr.Lifecycle; lc != nil {
			for _, h := range []*corev1.LifecycleHandler{lc.PostStart, lc.PreStop} {
				if h != nil {
					handlers = append(handlers, &corev1.ProbeHandler{HTTPGet: h.HTTPGet, TCPSocket: h.TCPSocket})
				}
			}
		}
		for _, h := range handlers {
			if (h.HTTPGet != nil && (h.HTTPGet.Host != "" || hasHostHeader(h.HTTPGet.HTTPHeaders))) || (h.TCPSocket != nil && h.TCPSocket.Host != "") {
				return o.violation(ruleProbeHost, "container %q: a probe or hook names a host; the kubelet probes the pod itself only", ctr.Name)
			}
		}
	}
	return nil
}

func hasHostHeader(headers []corev1.HTTPHeader) bool {
	return slices.ContainsFunc(headers, func(h corev1.HTTPHeader) bool { return strings.EqualFold(h.Name, "Host") })
}

// MaxTerminationGracePeriod bounds how long a deleted instance's pod may keep running (and
// holding its node's resources and its team's quota) after its teardown.
const MaxTerminationGracePeriod = 30

// terminationGrace bounds the pod's termination grace period.
func terminationGrace(o *object, p *corev1.PodSpec) error {
	if g := p.TerminationGracePeriodSeconds; g != nil && *g > MaxTerminationGracePeriod {
		return o.violation(ruleGrace, "terminationGracePeriodSeconds %d, at most %d", *g, MaxTerminationGracePeriod)
	}
	return nil
}

// schedulingGates refuses gates: a gated pod is never scheduled, and no controller of the
// operator's would lift them, so the instance would wait forever while counting as active.
func schedulingGates(o *object, p *corev1.PodSpec) error {
	if len(p.SchedulingGates) > 0 {
		return o.violation(ruleSchedulingGate, "the pod may not carry scheduling gates")
	}
	return nil
}

// rootGroup requires a group other than root (0) for the processes, the volumes and every
// supplemental group: files of group root on the node's or image's side stay out of reach. The
// group must be set, since an image's default group is often root.
func (c *checker) rootGroup(o *object, p *corev1.PodSpec) error {
	if c.level() != psaapi.LevelRestricted {
		return nil // from baseline a template may run as root; securityContext holds it to its word
	}
	sc := p.SecurityContext
	if sc == nil {
		sc = &corev1.PodSecurityContext{}
	}
	if (sc.FSGroup != nil && *sc.FSGroup == 0) || slices.Contains(sc.SupplementalGroups, 0) {
		return o.violation(ruleRootGroup, "fsGroup and supplementalGroups may not be 0")
	}
	for _, ctr := range slices.Concat(p.InitContainers, p.Containers) {
		group := sc.RunAsGroup
		if ctr.SecurityContext != nil && ctr.SecurityContext.RunAsGroup != nil {
			group = ctr.SecurityContext.RunAsGroup
		}
		if group == nil || *group == 0 {
			return o.violation(ruleRootGroup, "container %q must run as a group other than 0", ctr.Name)
		}
	}
	return nil
}

// Annotation keys and value prefix of the older, annotation-based seccomp and AppArmor profiles.
const (
	seccompPodKey       = "seccomp.security.alpha.kubernetes.io/pod"
	seccompContainerKey = "container.seccomp.security.alpha.kubernetes.io/"
	apparmorKey         = "container.apparmor.security.beta.kubernetes.io/"
	localhostProfile    = "localhost/"
)

// securityProfiles refuses Localhost seccomp and AppArmor profiles, which the restricted
// standard allows: a profile file on the node is whatever the node holds, possibly none at all.
func (c *checker) securityProfiles(o *object, t *corev1.PodTemplateSpec) error {
	for k, v := range t.Annotations {
		profileKey := k == seccompPodKey || strings.HasPrefix(k, seccompContainerKey) || strings.HasPrefix(k, apparmorKey)
		if profileKey && strings.HasPrefix(v, localhostProfile) {
			return o.violation(ruleProfile, "pod template annotation %s names a Localhost profile", k)
		}
	}
	p := &t.Spec
	if want := c.part.security; want != nil && localProfile(want.Pod.SeccompProfile, want.Pod.AppArmorProfile) {
		// The template names a Localhost profile the operator's flags allow; securityContext
		// requires exactly it, on the pod and nowhere else.
		return nil
	}
	if sc := p.SecurityContext; sc != nil && localProfile(sc.SeccompProfile, sc.AppArmorProfile) {
		return o.violation(ruleProfile, "the pod names a Localhost seccomp or AppArmor profile")
	}
	for _, ctr := range slices.Concat(p.InitContainers, p.Containers) {
		if sc := ctr.SecurityContext; sc != nil && localProfile(sc.SeccompProfile, sc.AppArmorProfile) {
			return o.violation(ruleProfile, "container %q names a Localhost seccomp or AppArmor profile", ctr.Name)
		}
	}
	return nil
}

// localProfile reports whether either profile is of type Localhost.
func localProfile(seccomp *corev1.SeccompProfile, apparmor *corev1.AppArmorProfile) bool {
	return (seccomp != nil && seccomp.Type == corev1.SeccompProfileTypeLocalhost) ||
		(apparmor != nil && apparmor.Type == corev1.AppArmorProfileTypeLocalhost)
}

// hostNamespaces refuses sharing the node's network, process, IPC or user namespaces.
func (c *checker) hostNamespaces(o *object, p *corev1.PodSpec) error {
	if p.HostNetwork || p.HostPID || p.HostIPC || (p.HostUsers != nil && *p.HostUsers) {
		return o.violation(ruleHostNamespace, "the pod shares a namespace of the node")
	}
	return nil
}

// hostPorts refuses binding a port of the node.
func (c *checker) hostPorts(o *object, p *corev1.PodSpec) error {
	for _, ctr := range slices.Concat(p.InitContainers, p.Containers) {
		for _, port := range ctr.Ports {
			if port.HostPort != 0 {
				return o.violation(ruleHostPort, "container %q binds host port %d", ctr.Name, port.HostPort)
			}
		}
	}
	return nil
}

// placement refuses choosing a node, a priority, a runtime or a scheduler, and
// rewriting the pod's name resolution: an instance is placed like every other
// one, and cannot evict others, pick a weaker runtime or spoof hosts.
func (c *checker) placement(o *object, p *corev1.PodSpec) error {
	want := c.part.security
	if want == nil {
		want = &security.Context{}
	}
	// The runtime class, node labels and taints the template names within the operator's flags.
	runtimeChosen := p.RuntimeClassName != nil && !apiequality.Semantic.DeepEqual(p.RuntimeClassName, want.RuntimeClassName)
	nodeChosen := len(p.NodeSelector) > 0 && !maps.Equal(p.NodeSelector, want.NodeSelector)
	tolerated := len(p.Tolerations) > 0 && !apiequality.Semantic.DeepEqual(p.Tolerations, want.Tolerations)
	chosen := p.NodeName != "" || nodeChosen || p.Affinity != nil || tolerated ||
		p.PriorityClassName != "" || p.Priority != nil || runtimeChosen || p.SchedulerName != "" ||
		len(p.HostAliases) > 0 || (p.DNSPolicy != "" && p.DNSPolicy != corev1.DNSClusterFirst) ||
		p.ShareProcessNamespace != nil && *p.ShareProcessNamespace
	if chosen {
		return o.violation(rulePlacement, "the pod may not choose its node, priority, runtime, scheduler or name resolution")
	}
	return nil
}

// serviceAccountUse runs the pod as the instance's own identity, without an API token.
func (c *checker) serviceAccountUse(o *object, p *corev1.PodSpec) error {
	name := p.ServiceAccountName
	if name != c.in.Release || (p.DeprecatedServiceAccount != "" && p.DeprecatedServiceAccount != name) {
		return o.violation(ruleServiceAccount, "the pod must run as service account %q", c.in.Release)
	}
	if p.AutomountServiceAccountToken == nil || *p.AutomountServiceAccountToken {
		return o.violation(ruleServiceAccount, "the pod must set automountServiceAccountToken: false")
	}
	return nil
}

// containers allows exactly the workload's containers, by name and in order: its main one, then
// its sidecars (each held by the other rules to what its main one is), and nothing that runs
// before them or is added to the pod later.
func (c *checker) containers(o *object, p *corev1.PodSpec) error {
	if len(p.InitContainers) > 0 || len(p.EphemeralContainers) > 0 {
		return o.violation(ruleContainers, "no init or ephemeral containers")
	}
	names := make([]string, len(p.Containers))
	for i, ctr := range p.Containers {
		names[i] = ctr.Name
	}
	if !slices.Equal(names, c.part.containers) {
		return o.violation(ruleContainers, "containers %q: exactly %q, its main container and then its sidecars", names, c.part.containers)
	}
	return nil
}

// volumes allows scratch space and the instance's own flag, nothing from the node or the API.
func (c *checker) volumes(o *object, p *corev1.PodSpec) error {
	for _, v := range p.Volumes {
		rest := v.VolumeSource
		rest.EmptyDir, rest.Secret, rest.ConfigMap = nil, nil, nil
		flag := v.Secret != nil && c.in.FlagSecret != "" && v.Secret.SecretName == c.in.FlagSecret
		files := v.ConfigMap != nil && v.ConfigMap.Name == identity.FilesConfigMap(c.in.Release)
		sources := 0
		for _, set := range []bool{v.EmptyDir != nil, v.Secret != nil, v.ConfigMap != nil} {
			if set {
				sources++
			}
		}
		if rest != (corev1.VolumeSource{}) || sources != 1 || (v.Secret != nil && !flag) || (v.ConfigMap != nil && !files) {
			return o.violation(ruleVolume, "volume %q: only emptyDir, the flag Secret %q and the files ConfigMap %q", v.Name, c.in.FlagSecret, identity.FilesConfigMap(c.in.Release))
		}
		if v.Secret != nil {
			if err := c.secretItems(o, v.Name, v.Secret.Items); err != nil {
				return err
			}
		}
	}
	return nil
}

// secretItems allows a volume of the instance's Secret to list the workload's own secret files
// only, each at its key: another key would hand the pod a value meant for another workload.
func (c *checker) secretItems(o *object, volume string, items []corev1.KeyToPath) error {
	for _, it := range items {
		if !slices.Contains(c.part.secretFiles, it.Key) || it.Path != it.Key {
			return o.violation(ruleVolume, "volume %q: item %q at %q; only the workload's secret files (%s), each at its key",
				volume, it.Key, it.Path, listOrNone(c.part.secretFiles))
		}
	}
	return nil
}

// secretRefs allows the environment to read the flag Secret only, at the keys the workload's
// containers read (its flag, its secretEnv values), and nothing else by reference: another key
// would hand the pod a value meant for another workload.
func (c *checker) secretRefs(o *object, p *corev1.PodSpec) error {
	for _, ctr := range p.Containers {
		if len(ctr.EnvFrom) > 0 {
			return o.violation(ruleSecretRef, "container %q uses envFrom", ctr.Name)
		}
		for _, e := range ctr.Env {
			if e.ValueFrom == nil {
				continue
			}
			if !c.flagRef(e.ValueFrom) {
				return o.violation(ruleSecretRef, "container %q: env %s may only read the flag Secret %q",
					ctr.Name, e.Name, c.in.FlagSecret)
			}
			if key := e.ValueFrom.SecretKeyRef.Key; !slices.Contains(c.part.secretEnv, key) {
				return o.violation(ruleSecretRef, "container %q: env %s reads key %q of the flag Secret; the workload's are %s",
					ctr.Name, e.Name, key, listOrNone(c.part.secretEnv))
			}
		}
	}
	return nil
}

// flagRef reports whether an env source is a key of the flag Secret and nothing else.
func (c *checker) flagRef(src *corev1.EnvVarSource) bool {
	rest := *src
	rest.SecretKeyRef = nil
	ref := src.SecretKeyRef
	return rest == (corev1.EnvVarSource{}) && ref != nil && c.in.FlagSecret != "" && ref.Name == c.in.FlagSecret
}

// resources requires cpu and memory limits under the organiser's ceilings on every container, so
// one instance cannot starve a node; a zero limit means none. With an ephemeral-storage ceiling,
// the container's ephemeral-storage limit and every emptyDir's size are required under it too.
func (c *checker) resources(o *object, p *corev1.PodSpec) error {
	type ceiling struct {
		name corev1.ResourceName
		max  resource.Quantity
	}
	ceilings := []ceiling{{corev1.ResourceCPU, c.in.Limits.CPU}, {corev1.ResourceMemory, c.in.Limits.Memory}}
	if disk := c.in.Limits.EphemeralStorage; !disk.IsZero() {
		ceilings = append(ceilings, ceiling{corev1.ResourceEphemeralStorage, disk})
		if err := c.scratch(o, p, disk); err != nil {
			return err
		}
	}
	var extended corev1.ResourceList
	if c.part.security != nil {
		extended = c.part.security.ExtendedResources
	}
	for _, ctr := range p.Containers {
		for _, l := range []corev1.ResourceList{ctr.Resources.Limits, ctr.Resources.Requests} {
			for name, q := range l {
				if slices.Contains([]corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage}, name) {
					continue
				}
				if want, ok := extended[name]; !ok || q.Cmp(want) != 0 {
					return o.violation(ruleResources, "container %q: %s %s is not its template's", ctr.Name, name, q.String())
				}
			}
		}
		for _, ceiling := range ceilings {
			q, ok := ctr.Resources.Limits[ceiling.name]
			if !ok || q.Sign() <= 0 {
				return o.violation(ruleResources, "container %q sets no %s limit", ctr.Name, ceiling.name)
			}
			if q.Cmp(ceiling.max) > 0 {
				return o.violation(ruleResources, "container %q: %s limit %s is above the ceiling %s",
					ctr.Name, ceiling.name, q.String(), ceiling.max.String())
			}
		}
	}
	return nil
}

// scratch requires every emptyDir to have a size limit no larger than the ephemeral-storage
// ceiling: a memory-backed one counts against memory, a disk-backed one against the node's disk.
func (c *checker) scratch(o *object, p *corev1.PodSpec, ceiling resource.Quantity) error {
	for _, v := range p.Volumes {
		if v.EmptyDir == nil {
			continue
		}
		size := v.EmptyDir.SizeLimit
		if size == nil || size.Sign() <= 0 {
			return o.violation(ruleResources, "emptyDir %q sets no sizeLimit", v.Name)
		}
		if size.Cmp(ceiling) > 0 {
			return o.violation(ruleResources, "emptyDir %q: sizeLimit %s is above the ceiling %s", v.Name, size.String(), ceiling.String())
		}
	}
	return nil
}

// podSecurity evaluates the restricted Pod Security Standard, latest version, as the API server
// would in a namespace that enforces it.
func (c *checker) podSecurity(o *object, t *corev1.PodTemplateSpec) error {
	level := c.level()
	if level == psaapi.LevelPrivileged {
		return nil // allows everything; securityContext holds the pod to its template's word
	}
	ev, err := evaluator()
	if err != nil {
		return err
	}
	lv := psaapi.LevelVersion{Level: level, Version: psaapi.LatestVersion()}
	result := psapolicy.AggregateCheckResults(ev.EvaluatePod(lv, &t.ObjectMeta, &t.Spec))
	if !result.Allowed {
		return o.violation(rulePodSecurity, "%s: %s", level, result.ForbiddenDetail())
	}
	return nil
}
