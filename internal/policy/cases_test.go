package policy

import (
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// breaking is a change that breaks a rule of a valid release; the table test expects rule, and the
// fuzz target combines changes and expects a refusal.
type breaking struct {
	name         string
	rule         string
	own, ingress bool // the valid release it starts from
	apply        func(*fixture)
}

// harmless is a change a valid release may make: it must still pass. One that relaxes the
// instance (allows more) could mask a breaking change, so the fuzz target leaves it out.
type harmless struct {
	name         string
	own, ingress bool
	relaxes      bool
	apply        func(*fixture)
}

// withRoute adds a valid route of kind (TLSRoute, HTTPRoute) to the instance's own host on the
// allowed Gateway, after edit changes its spec.
func withRoute(kind string, edit func(spec map[string]any)) func(*fixture) {
	return func(fx *fixture) {
		spec := map[string]any{
			"parentRefs": []any{map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "namespace": "gateways", "name": "ctf"}},
			"hostnames":  []any{host},
			"rules":      []any{map[string]any{"backendRefs": []any{map[string]any{"name": release, "port": 1337}}}},
		}
		if edit != nil {
			edit(spec)
		}
		fx.extra = append(fx.extra, map[string]any{
			"apiVersion": "gateway.networking.k8s.io/v1", "kind": kind,
			"metadata": map[string]any{"name": release, "namespace": namespace, "labels": testLabels()},
			"spec":     spec,
		})
	}
}

func raw(doc string) func(*fixture) {
	return func(fx *fixture) { fx.extra = append(fx.extra, doc) }
}

func secretVolume(name string) corev1.Volume {
	return corev1.Volume{Name: "other", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: name}}}
}

func addVolume(v corev1.Volume) func(*fixture) {
	return func(fx *fixture) { fx.pod().Volumes = append(fx.pod().Volumes, v) }
}

func setHost(h string) func(*fixture) {
	return func(fx *fixture) { fx.withIngress = true; fx.ing.Spec.Rules[0].Host = h }
}

func egressTo(peers ...networkingv1.NetworkPolicyPeer) func(*fixture) {
	return func(fx *fixture) { fx.egress(peers...) }
}

func ingressFrom(peers ...networkingv1.NetworkPolicyPeer) func(*fixture) {
	return func(fx *fixture) { fx.ingressFrom(peers...) }
}

func nsPeer(labels map[string]string) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{MatchLabels: labels}}
}

// dnsPort adds a port to the DNS rule; its peer may use no port but 53.
func dnsPort(p networkingv1.NetworkPolicyPort) func(*fixture) {
	return func(fx *fixture) { fx.np.Spec.Egress[0].Ports = append(fx.np.Spec.Egress[0].Ports, p) }
}

func limit(name corev1.ResourceName, q string) func(*fixture) {
	return func(fx *fixture) {
		if fx.ctr().Resources.Limits == nil {
			fx.ctr().Resources.Limits = corev1.ResourceList{}
		}
		fx.ctr().Resources.Limits[name] = resource.MustParse(q)
	}
}

// diskCeiling sets an ephemeral-storage ceiling, the container's limit and the /tmp size; an
// empty one is left unset.
func diskCeiling(ceiling, limit, tmp string) func(*fixture) {
	return func(fx *fixture) {
		fx.in.Limits.EphemeralStorage = resource.MustParse(ceiling)
		if limit != "" {
			fx.ctr().Resources.Limits[corev1.ResourceEphemeralStorage] = resource.MustParse(limit)
		}
		fx.pod().Volumes[0].EmptyDir.SizeLimit = nil
		if tmp != "" {
			fx.pod().Volumes[0].EmptyDir.SizeLimit = ptr.To(resource.MustParse(tmp))
		}
	}
}

// allowKey lets organisers allow a key, as an Instance's Keys would.
func allowKey(fx *fixture, key string) {
	fx.in.Keys.Allowed = append(fx.in.Keys.Allowed, key)
}

var breakings = []breaking{
	// parse
	{name: "a document that is not YAML", rule: "parse", apply: raw("apiVersion: v1\nkind: [Service\n")},
	{name: "a scalar document", rule: "parse", apply: raw("just some text\n")},
	{name: "a document without metadata.name", rule: "parse", apply: raw("apiVersion: v1\nkind: Service\nmetadata: {}\n")},
	{name: "a document without kind", rule: "parse", apply: raw("apiVersion: v1\nmetadata:\n  name: x\n")},
	{name: "unknown field in a Deployment", rule: "parse", apply: func(fx *fixture) {
		fx.edit("Deployment", func(d string) string { return strings.Replace(d, "\nspec:\n", "\nspec:\n  bogusField: true\n", 1) })
	}},
	{name: "a field in the wrong case", rule: "parse", apply: func(fx *fixture) {
		fx.edit("Deployment", func(d string) string {
			return strings.Replace(d, "      automountServiceAccountToken: false\n", "      automountServiceAccountToken: false\n      HostNetwork: true\n", 1)
		})
	}},
	{name: "hostNetwork hidden behind a case-folded twin", rule: "parse", apply: func(fx *fixture) {
		// encoding/json folds case, so a case-insensitive decoder would read false here while the
		// API server reads true.
		fx.edit("Deployment", func(d string) string {
			return strings.Replace(d, "      automountServiceAccountToken: false\n",
				"      automountServiceAccountToken: false\n      hostNetwork: true\n      hostnetwork: false\n", 1)
		})
	}},
	{name: "a duplicate key", rule: "parse", apply: func(fx *fixture) {
		fx.edit("Service", func(d string) string { return d + "kind: Service\n" })
	}},
	{name: "a JSON stream", rule: "parse", apply: func(fx *fixture) {
		fx.post = append(fx.post, func(string) string { return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}` })
	}},
	{name: "a bad document separator", rule: "parse", apply: func(fx *fixture) {
		fx.post = append(fx.post, func(s string) string { return "--- !!map\n" + s })
	}},

	// kind
	{name: "a ClusterRole", rule: "kind", apply: raw("apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: web-team1\nrules:\n- apiGroups: ['*']\n  resources: ['*']\n  verbs: ['*']\n")},
	{name: "a ConfigMap of another name", rule: "name", apply: raw("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-team1\n  namespace: ctf-team1\n")},
	{name: "a Secret of another kind", rule: "kind", apply: raw("apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: web-team1\n  namespace: ctf-team1\n")},
	{name: "a Deployment of another version", rule: "kind", apply: func(fx *fixture) {
		fx.edit("Deployment", func(d string) string {
			return strings.Replace(d, "apiVersion: apps/v1\n", "apiVersion: apps/v1beta2\n", 1)
		})
	}},
	{name: "a Namespace without a namespace of its own", rule: "kind", apply: func(fx *fixture) {
		fx.in.OwnNamespace, fx.withNamespace = false, true
	}},
	{name: "a Namespace with a namespace", rule: "namespace", own: true, apply: func(fx *fixture) { fx.ns.Namespace = namespace }},

	// name and duplicate
	{name: "a second Deployment with another name", rule: "name", apply: func(fx *fixture) {
		d := deployment()
		d.Name = "other"
		fx.extra = append(fx.extra, d)
	}},
	{name: "a Service with another name", rule: "name", apply: func(fx *fixture) { fx.svc.Name = "web-team2" }},
	{name: "a ResourceQuota with another name", rule: "name", own: true, apply: func(fx *fixture) { fx.quota.Name = "other" }},
	{name: "two Services", rule: "duplicate", apply: func(fx *fixture) { fx.extra = append(fx.extra, service()) }},

	// namespace
	{name: "a Deployment in kube-system", rule: "namespace", apply: func(fx *fixture) { fx.deploy.Namespace = "kube-system" }},
	{name: "a Service without a namespace", rule: "namespace", apply: func(fx *fixture) { fx.svc.Namespace = "" }},
	{name: "a Namespace of another name", rule: "namespace", own: true, apply: func(fx *fixture) { fx.ns.Name = "ctf-team2" }},
	{name: "a Namespace without the restricted label", rule: "namespace", own: true, apply: func(fx *fixture) {
		delete(fx.ns.Labels, "pod-security.kubernetes.io/enforce")
	}},
	{name: "a Namespace enforcing privileged", rule: "namespace", own: true, apply: func(fx *fixture) {
		fx.ns.Labels["pod-security.kubernetes.io/enforce"] = "privileged"
	}},
	{name: "a Namespace enforcing an old version", rule: "namespace", own: true, apply: func(fx *fixture) {
		fx.ns.Labels["pod-security.kubernetes.io/enforce-version"] = "v1.22"
	}},

	// labels
	{name: "another participant's identity label", rule: "labels", apply: func(fx *fixture) {
		fx.deploy.Labels[ctfv1alpha1.ParticipantLabel] = "team2"
	}},
	{name: "a Secret without an identity label", rule: "labels", apply: func(fx *fixture) {
		delete(fx.secret.Labels, ctfv1alpha1.InstanceLabel)
	}},
	{name: "a pod template of another participant", rule: "labels", apply: func(fx *fixture) {
		fx.podMeta().Labels[ctfv1alpha1.ParticipantLabel] = "team2"
	}},
	{name: "an Ingress without identity labels", rule: "labels", ingress: true, apply: func(fx *fixture) { fx.ing.Labels = nil }},
	{name: "a claimed pooled instance's pods passing as the team's", rule: "labels", apply: func(fx *fixture) {
		fx.in.PodParticipant = "pool-x"
	}},
	{name: "a claimed pooled instance's Service still the pool's", rule: "labels", apply: func(fx *fixture) {
		fx.in.PodParticipant = "pool-x"
		fx.podMeta().Labels[ctfv1alpha1.ParticipantLabel] = "pool-x"
		fx.svc.Labels[ctfv1alpha1.ParticipantLabel] = "pool-x"
	}},

	// metadata-key
	{name: "pod label k8s-app: kube-dns", rule: "metadata-key", apply: func(fx *fixture) { fx.podMeta().Labels["k8s-app"] = "kube-dns" }},
	{name: "pod AppArmor annotation key", rule: "metadata-key", apply: func(fx *fixture) {
		fx.in.Keys.Allowed = slices.DeleteFunc(fx.in.Keys.Allowed, func(k string) bool { return strings.Contains(k, "apparmor") })
		annotate(fx.podMeta(), "container.apparmor.security.beta.kubernetes.io/challenge", "runtime/default")
	}},
	{name: "a reserved label on the Service", rule: "metadata-key", apply: func(fx *fixture) { fx.svc.Labels["app.kubernetes.io/part-of"] = "x" }},
	{name: "an operator annotation organisers tried to allow", rule: "metadata-key", apply: func(fx *fixture) {
		allowKey(fx, "ctf.challenge-operator.io/")
		annotate(&fx.svc.ObjectMeta, ctfv1alpha1.ParticipantLabel, "team2")
	}},
	{name: "a node label on the Namespace", rule: "metadata-key", own: true, apply: func(fx *fixture) {
		fx.ns.Labels["node-restriction.kubernetes.io/x"] = "y"
	}},

	// finalizers
	{name: "a finalizer on the Deployment", rule: "finalizers", apply: func(fx *fixture) {
		fx.deploy.Finalizers = []string{"example.com/keep"}
	}},
	{name: "a finalizer on the pod template", rule: "finalizers", apply: func(fx *fixture) {
		fx.podMeta().Finalizers = []string{"example.com/keep"}
	}},

	// helm-annotation
	{name: "helm.sh/resource-policy: keep on the Service", rule: "helm-annotation", apply: func(fx *fixture) {
		annotate(&fx.svc.ObjectMeta, "helm.sh/resource-policy", "keep")
	}},
	{name: "helm.sh/hook on the Deployment", rule: "helm-annotation", apply: func(fx *fixture) {
		annotate(&fx.deploy.ObjectMeta, "helm.sh/hook", "pre-install")
	}},
	{name: "meta.helm.sh on the Secret", rule: "helm-annotation", apply: func(fx *fixture) {
		annotate(&fx.secret.ObjectMeta, "meta.helm.sh/release-name", "other")
	}},
	{name: "helm.sh/hook on the pod template", rule: "helm-annotation", apply: func(fx *fixture) {
		annotate(fx.podMeta(), "helm.sh/hook", "test")
	}},

	// required
	{name: "no NetworkPolicy, hidden as a hook", rule: "required", apply: func(fx *fixture) { fx.omit["NetworkPolicy"] = true }},
	{name: "no Deployment", rule: "required", apply: func(fx *fixture) { fx.omit["Deployment"] = true }},
	{name: "no ServiceAccount", rule: "required", apply: func(fx *fixture) { fx.omit["ServiceAccount"] = true }},
	{name: "no Service", rule: "required", apply: func(fx *fixture) { fx.omit["Service"] = true }},
	{name: "no Namespace of its own", rule: "required", own: true, apply: func(fx *fixture) { fx.omit["Namespace"] = true }},
	{name: "no LimitRange", rule: "required", own: true, apply: func(fx *fixture) { fx.omit["LimitRange"] = true }},
	{name: "an empty manifest", rule: "required", apply: func(fx *fixture) {
		fx.post = append(fx.post, func(string) string { return "---\n# Source: challenge/templates/empty.yaml\n\n" })
	}},

	// host-namespace and host-port
	{name: "hostPID", rule: "host-namespace", apply: func(fx *fixture) { fx.pod().HostPID = true }},
	{name: "hostNetwork", rule: "host-namespace", apply: func(fx *fixture) { fx.pod().HostNetwork = true }},
	{name: "hostIPC", rule: "host-namespace", apply: func(fx *fixture) { fx.pod().HostIPC = true }},
	{name: "hostUsers", rule: "host-namespace", apply: func(fx *fixture) { fx.pod().HostUsers = ptr.To(true) }},
	// placement
	{name: "nodeName", rule: "placement", apply: func(fx *fixture) { fx.pod().NodeName = "control-plane" }},
	{name: "toleration of every taint", rule: "placement", apply: func(fx *fixture) {
		fx.pod().Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	}},
	{name: "system priority", rule: "placement", apply: func(fx *fixture) { fx.pod().PriorityClassName = "system-node-critical" }},
	{name: "another runtime", rule: "placement", apply: func(fx *fixture) { fx.pod().RuntimeClassName = ptr.To("runc-unconfined") }},
	{name: "spoofed hosts", rule: "placement", apply: func(fx *fixture) {
		fx.pod().HostAliases = []corev1.HostAlias{{IP: "10.0.0.1", Hostnames: []string{"ctfd.example"}}}
	}},
	{name: "shared process namespace", rule: "placement", apply: func(fx *fixture) { fx.pod().ShareProcessNamespace = ptr.To(true) }},
	{name: "a host port", rule: "host-port", apply: func(fx *fixture) { fx.ctr().Ports[0].HostPort = 8080 }},

	// pod-security
	{name: "AppArmor unconfined on the pod, key allowed", rule: "pod-security", apply: func(fx *fixture) {
		allowKey(fx, "container.apparmor.security.beta.kubernetes.io/")
		annotate(fx.podMeta(), "container.apparmor.security.beta.kubernetes.io/challenge", "unconfined")
	}},
	{name: "AppArmor unconfined in the pod's securityContext", rule: "pod-security", apply: func(fx *fixture) {
		fx.pod().SecurityContext.AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
	}},
	{name: "a privileged container", rule: "pod-security", apply: func(fx *fixture) { fx.ctr().SecurityContext.Privileged = ptr.To(true) }},
	{name: "privilege escalation", rule: "pod-security", apply: func(fx *fixture) {
		fx.ctr().SecurityContext.AllowPrivilegeEscalation = ptr.To(true)
	}},
	{name: "an added capability", rule: "pod-security", apply: func(fx *fixture) {
		fx.ctr().SecurityContext.Capabilities.Add = []corev1.Capability{"SYS_ADMIN"}
	}},
	{name: "running as root", rule: "pod-security", apply: func(fx *fixture) { fx.ctr().SecurityContext.RunAsUser = ptr.To[int64](0) }},
	{name: "seccomp unconfined", rule: "pod-security", apply: func(fx *fixture) {
		fx.ctr().SecurityContext.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
	}},

	// service-account
	{name: "the pod mounts an API token", rule: "service-account", apply: func(fx *fixture) { fx.pod().AutomountServiceAccountToken = nil }},
	{name: "the pod runs as default", rule: "service-account", apply: func(fx *fixture) { fx.pod().ServiceAccountName = "default" }},
	{name: "the pod names another deprecated serviceAccount", rule: "service-account", apply: func(fx *fixture) {
		fx.pod().DeprecatedServiceAccount = "default"
	}},
	{name: "the ServiceAccount mounts its token", rule: "service-account", apply: func(fx *fixture) {
		fx.sa.AutomountServiceAccountToken = ptr.To(true)
	}},
	{name: "the ServiceAccount lists secrets", rule: "service-account", apply: func(fx *fixture) {
		fx.sa.Secrets = []corev1.ObjectReference{{Name: "other-flag"}}
	}},

	// containers
	{name: "a privileged init container", rule: "containers", apply: func(fx *fixture) {
		c := container()
		c.Name, c.SecurityContext.Privileged = "init", ptr.To(true)
		fx.pod().InitContainers = append(fx.pod().InitContainers, c)
	}},
	{name: "a second container", rule: "containers", apply: func(fx *fixture) {
		c := container()
		c.Name = "sidecar"
		fx.pod().Containers = append(fx.pod().Containers, c)
	}},
	{name: "an ephemeral container", rule: "containers", apply: func(fx *fixture) {
		fx.pod().EphemeralContainers = append(fx.pod().EphemeralContainers, corev1.EphemeralContainer{
			EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}})
	}},

	// volume
	{name: "a hostPath volume", rule: "volume", apply: addVolume(corev1.Volume{Name: "host", VolumeSource: corev1.VolumeSource{
		HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})},
	{name: "a projected serviceAccountToken volume", rule: "volume", apply: addVolume(corev1.Volume{Name: "token", VolumeSource: corev1.VolumeSource{
		Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{
			ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}})},
	{name: "another instance's secret as a volume", rule: "volume", apply: addVolume(secretVolume("web-team2-flag"))},
	{name: "a configMap volume", rule: "volume", apply: addVolume(corev1.Volume{Name: "cm", VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}}}})},
	{name: "an emptyDir volume with a hostPath too", rule: "volume", apply: func(fx *fixture) {
		fx.pod().Volumes[0].HostPath = &corev1.HostPathVolumeSource{Path: "/var/run"}
	}},
	{name: "a volume with two sources", rule: "volume", apply: func(fx *fixture) {
		fx.pod().Volumes[0].Secret = &corev1.SecretVolumeSource{SecretName: flagSecret}
	}},

	// secret-ref
	{name: "another instance's secret through env", rule: "secret-ref", apply: func(fx *fixture) {
		fx.ctr().Env = append(fx.ctr().Env, corev1.EnvVar{Name: "OTHER", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "web-team2-flag"}, Key: "flag"}}})
	}},
	{name: "envFrom", rule: "secret-ref", apply: func(fx *fixture) {
		fx.ctr().EnvFrom = []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: flagSecret}}}}
	}},
	{name: "env from a ConfigMap", rule: "secret-ref", apply: func(fx *fixture) {
		fx.ctr().Env = append(fx.ctr().Env, corev1.EnvVar{Name: "CA", ValueFrom: &corev1.EnvVarSource{
			ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Key: "ca.crt"}}})
	}},

	{name: "an env source with a second reference", rule: "secret-ref", apply: func(fx *fixture) {
		fx.ctr().Env = append(fx.ctr().Env, corev1.EnvVar{Name: "POD", ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: flagSecret}, Key: "flag"},
			FieldRef:     &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}})
	}},

	// resources and replicas
	{name: "no limits", rule: "resources", apply: func(fx *fixture) { fx.ctr().Resources.Limits = nil }},
	{name: "cpu above the ceiling", rule: "resources", apply: limit(corev1.ResourceCPU, "2")},
	{name: "memory above the ceiling", rule: "resources", apply: limit(corev1.ResourceMemory, "1Gi")},
	{name: "a zero memory limit", rule: "resources", apply: limit(corev1.ResourceMemory, "0")},
	{name: "no ephemeral-storage limit under a disk ceiling", rule: "resources", apply: diskCeiling("1Gi", "", "64Mi")},
	{name: "ephemeral-storage above the ceiling", rule: "resources", apply: diskCeiling("1Gi", "2Gi", "64Mi")},
	{name: "scratch without a size under a disk ceiling", rule: "resources", apply: diskCeiling("1Gi", "256Mi", "")},
	{name: "scratch of 999999999999999E", rule: "resources", apply: diskCeiling("1Gi", "256Mi", "999999999999999E")},
	{name: "scratch above the ceiling", rule: "resources", apply: diskCeiling("1Gi", "256Mi", "2Gi")},
	{name: "10 replicas", rule: "replicas", apply: func(fx *fixture) { fx.deploy.Spec.Replicas = ptr.To[int32](10) }},

	// selector
	{name: "a Deployment selector with expressions", rule: "selector", apply: func(fx *fixture) {
		fx.deploy.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "x", Operator: metav1.LabelSelectorOpExists}}
	}},
	{name: "a Service selecting every challenge pod", rule: "selector", apply: func(fx *fixture) {
		delete(fx.svc.Spec.Selector, ctfv1alpha1.AppInstanceLabel)
	}},
	{name: "a NetworkPolicy for every pod", rule: "selector", apply: func(fx *fixture) { fx.np.Spec.PodSelector = metav1.LabelSelector{} }},

	// service
	{name: "LoadBalancer not allowed", rule: "service", apply: func(fx *fixture) {
		fx.in.Limits.AllowLoadBalancer, fx.svc.Spec.Type = false, corev1.ServiceTypeLoadBalancer
	}},
	{name: "ExternalName", rule: "service", apply: func(fx *fixture) {
		fx.svc.Spec.Type, fx.svc.Spec.ExternalName = corev1.ServiceTypeExternalName, "kubernetes.default.svc"
	}},
	{name: "externalIPs", rule: "service", apply: func(fx *fixture) { fx.svc.Spec.ExternalIPs = []string{"203.0.113.7"} }},
	{name: "a fixed nodePort", rule: "service", apply: func(fx *fixture) {
		fx.svc.Spec.Type, fx.svc.Spec.Ports[0].NodePort = corev1.ServiceTypeNodePort, 30080
	}},
	{name: "a loadBalancerIP", rule: "service", apply: func(fx *fixture) { fx.svc.Spec.LoadBalancerIP = "203.0.113.8" }},
	{name: "a fixed healthCheckNodePort", rule: "service", apply: func(fx *fixture) { fx.svc.Spec.HealthCheckNodePort = 30999 }},

	// ingress and ingress-host
	{name: "an Ingress when none is allowed", rule: "ingress", ingress: true, apply: func(fx *fixture) { fx.in.Limits.IngressDomain = "" }},
	{name: "an Ingress to another Service", rule: "ingress", ingress: true, apply: func(fx *fixture) {
		fx.ing.Spec.Rules[0].HTTP.Paths[0].Backend = networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
			Name: "web-team2", Port: networkingv1.ServiceBackendPort{Name: "main"}}}
	}},
	{name: "an Ingress to a resource", rule: "ingress", ingress: true, apply: func(fx *fixture) {
		fx.ing.Spec.Rules[0].HTTP.Paths[0].Backend = networkingv1.IngressBackend{Resource: &corev1.TypedLocalObjectReference{Kind: "Bucket", Name: "b"}}
	}},
	{name: "an Ingress backend naming a resource too", rule: "ingress", ingress: true, apply: func(fx *fixture) {
		fx.ing.Spec.Rules[0].HTTP.Paths[0].Backend.Resource = &corev1.TypedLocalObjectReference{Kind: "Bucket", Name: "b"}
	}},
	{name: "an Ingress defaultBackend", rule: "ingress", ingress: true, apply: func(fx *fixture) {
		fx.ing.Spec.DefaultBackend = &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
			Name: release, Port: networkingv1.ServiceBackendPort{Name: "main"}}}
	}},
	{name: "an Ingress host outside the domain", rule: "ingress-host", apply: setHost("web-team1.evil.example")},
	{name: "evilctf.example is not under ctf.example", rule: "ingress-host", apply: setHost("evilctf.example")},
	{name: "the domain itself", rule: "ingress-host", apply: setHost("ctf.example")},
	{name: "a wildcard host", rule: "ingress-host", apply: setHost("*.ctf.example")},
	{name: "an upper-case host", rule: "ingress-host", apply: setHost("Web-team1.ctf.example")},
	{name: "a rule without a host", rule: "ingress-host", apply: setHost("")},
	{name: "a host taken by another instance", rule: "ingress-host", apply: func(fx *fixture) {
		fx.withIngress = true
		fx.in.HostTaken = func(string) bool { return true }
	}},
	{name: "a TLS host outside the domain", rule: "ingress-host", ingress: true, apply: func(fx *fixture) {
		fx.ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{"www.bank.example"}, SecretName: "tls"}}
	}},
	{name: "a TLS entry without hosts", rule: "ingress-host", ingress: true, apply: func(fx *fixture) {
		fx.ing.Spec.TLS = []networkingv1.IngressTLS{{SecretName: "tls"}}
	}},
	{name: "another instance's host under the domain", rule: "ingress-host", apply: setHost("web-team2.ctf.example")},
	{name: "a TLS entry for another instance's host", rule: "ingress-host", ingress: true, apply: func(fx *fixture) {
		fx.ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{"web-team2.ctf.example"}}}
	}},
	{name: "an ingress class nobody allowed", rule: "ingress-class", ingress: true, apply: func(fx *fixture) {
		fx.ing.Spec.IngressClassName = ptr.To("internal-only")
	}},
	{name: "a certificate Secret nobody allowed", rule: "ingress-tls", ingress: true, apply: func(fx *fixture) {
		fx.ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{host}, SecretName: "bank-tls"}}
	}},

	// gateway-route
	{name: "a TLSRoute on a Gateway nobody allowed", rule: "gateway-route", apply: withRoute("TLSRoute", func(r map[string]any) {
		r["parentRefs"] = []any{map[string]any{"namespace": "kube-system", "name": "internal"}}
	})},
	{name: "a TLSRoute on two Gateways", rule: "gateway-route", apply: withRoute("TLSRoute", func(r map[string]any) {
		r["parentRefs"] = append(r["parentRefs"].([]any), map[string]any{"namespace": "kube-system", "name": "internal"})
	})},
	{name: "a TLSRoute on the cluster's default Gateways", rule: "gateway-route", apply: withRoute("TLSRoute", func(r map[string]any) {
		r["useDefaultGateways"] = "All"
	})},
	{name: "a TLSRoute to another instance's Service", rule: "gateway-route", apply: withRoute("TLSRoute", func(r map[string]any) {
		r["rules"] = []any{map[string]any{"backendRefs": []any{map[string]any{"name": "web-team2", "port": 1337}}}}
	})},
	{name: "a TLSRoute to a Service of another namespace", rule: "gateway-route", apply: withRoute("TLSRoute", func(r map[string]any) {
		r["rules"] = []any{map[string]any{"backendRefs": []any{map[string]any{"name": release, "namespace": "kube-system", "port": 443}}}}
	})},
	{name: "a TLSRoute for another instance's host", rule: "ingress-host", apply: withRoute("TLSRoute", func(r map[string]any) {
		r["hostnames"] = []any{"web-team2.ctf.example"}
	})},
	{name: "a TLSRoute for every host", rule: "ingress-host", apply: withRoute("TLSRoute", func(r map[string]any) { delete(r, "hostnames") })},
	{name: "an HTTPRoute mirroring requests elsewhere", rule: "gateway-route", apply: withRoute("HTTPRoute", func(r map[string]any) {
		r["rules"] = []any{map[string]any{"filters": []any{map[string]any{"type": "RequestMirror",
			"requestMirror": map[string]any{"backendRef": map[string]any{"name": "collector", "port": 80}}}},
			"backendRefs": []any{map[string]any{"name": release, "port": 8080}}}}
	})},

	// network-policy, network-egress, network-ingress
	{name: "a NetworkPolicy without Egress", rule: "network-policy", apply: func(fx *fixture) {
		fx.np.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
	}},
	{name: "egress to 0.0.0.0/0 without excepts", rule: "network-egress", apply: egressTo(ipBlock("0.0.0.0/0"))},
	{name: "egress to the metadata address", rule: "network-egress", apply: egressTo(ipBlock("169.254.169.254/32"))},
	{name: "egress to 10.1.2.0/24 inside 10.0.0.0/8", rule: "network-egress", apply: func(fx *fixture) {
		fx.in.Limits.AllowedCIDRs = nil
		fx.egress(ipBlock("10.1.2.0/24"))
	}},
	{name: "egress to ::/0 reaches the IPv6 metadata address", rule: "network-egress", apply: egressTo(ipBlock("::/0"))},
	{name: "egress excepting only half an internal range", rule: "network-egress", apply: func(fx *fixture) {
		fx.in.Limits.AllowedCIDRs = nil
		fx.egress(ipBlock("10.0.0.0/8", "10.0.0.0/9"))
	}},
	{name: "egress to an invalid CIDR", rule: "network-egress", apply: egressTo(ipBlock("10.0.0.0/33"))},
	{name: "egress to an IPv4-mapped range", rule: "network-egress", apply: egressTo(ipBlock("::ffff:8.8.8.0/120"))},
	{name: "egress with an invalid except", rule: "network-egress", apply: egressTo(ipBlock("0.0.0.0/0", "not-a-cidr"))},
	{name: "the DNS peer in every namespace", rule: "network-egress", apply: func(fx *fixture) {
		fx.np.Spec.Egress[0].To[0].NamespaceSelector = &metav1.LabelSelector{}
	}},
	{name: "the DNS peer on every port", rule: "network-egress", apply: func(fx *fixture) { fx.np.Spec.Egress[0].Ports = nil }},
	{name: "the DNS peer over SCTP", rule: "network-egress", apply: dnsPort(networkingv1.NetworkPolicyPort{
		Protocol: ptr.To(corev1.ProtocolSCTP), Port: ptr.To(intstr.FromInt32(53))})},
	{name: "the DNS peer on a port range", rule: "network-egress", apply: dnsPort(networkingv1.NetworkPolicyPort{
		Port: ptr.To(intstr.FromInt32(53)), EndPort: ptr.To[int32](1024)})},
	{name: "the DNS peer on a named port", rule: "network-egress", apply: dnsPort(networkingv1.NetworkPolicyPort{
		Port: ptr.To(intstr.FromString("dns"))})},
	{name: "the DNS peer on port 443", rule: "network-egress", apply: dnsPort(tcp(443))},
	{name: "an egress rule without peers", rule: "network-egress", apply: egressTo()},
	{name: "egress to pods by podSelector alone", rule: "network-egress", apply: egressTo(networkingv1.NetworkPolicyPeer{
		PodSelector: &metav1.LabelSelector{}})},
	{name: "egress to every namespace", rule: "network-egress", apply: egressTo(nsPeer(nil))},
	{name: "ingress from every namespace", rule: "network-ingress", apply: ingressFrom(nsPeer(nil))},
	{name: "ingress from a namespace not allowed", rule: "network-ingress", apply: ingressFrom(nsPeer(map[string]string{nameLabel: "kube-system"}))},
	{name: "ingress from a namespace by expressions", rule: "network-ingress", apply: ingressFrom(networkingv1.NetworkPolicyPeer{
		NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: nameLabel, Operator: metav1.LabelSelectorOpExists}}}})},
	{name: "an ingress rule without peers", rule: "network-ingress", apply: ingressFrom()},
	{name: "ingress from the pod network", rule: "network-ingress", apply: ingressFrom(ipBlock("10.0.0.0/8"))},

	{name: "egress to IPv6 unique-local fd00::/8", rule: "network-egress", apply: egressTo(ipBlock("fd00::/8"))},
	{name: "egress to IPv6 link-local fe80::/10", rule: "network-egress", apply: egressTo(ipBlock("fe80::/10"))},
	{name: "egress to ::/0 excepting only the AWS metadata address", rule: "network-egress", apply: egressTo(ipBlock("::/0", "fd00:ec2::254/128"))},
	{name: "egress to IPv6 loopback", rule: "network-egress", apply: egressTo(ipBlock("::1/128"))},
	{name: "egress to Azure's host endpoint", rule: "network-egress", apply: egressTo(ipBlock("168.63.129.16/32"))},
	{name: "egress to loopback", rule: "network-egress", apply: egressTo(ipBlock("127.0.0.1/32"))},
	{name: "egress to 0.0.0.0/8", rule: "network-egress", apply: egressTo(ipBlock("0.0.0.0/32"))},
	{name: "internet egress excepting only the operator's ranges", rule: "network-egress", apply: egressTo(ipBlock("0.0.0.0/0", internalCIDRs...))},
	{name: "ingress from the instance's own namespace", rule: "network-ingress", apply: func(fx *fixture) {
		fx.in.Limits.IngressFromNamespaces = append(fx.in.Limits.IngressFromNamespaces, namespace)
		fx.ingressFrom(nsPeer(map[string]string{nameLabel: namespace}))
	}},
	{name: "ingress from IPv6 unique-local", rule: "network-ingress", apply: ingressFrom(ipBlock("fd00::/8"))},

	// image-registry
	{name: "an image at the metadata address", rule: "image-registry", apply: func(fx *fixture) { fx.ctr().Image = "169.254.169.254/latest:1" }},
	{name: "an image at the API server's address", rule: "image-registry", apply: func(fx *fixture) { fx.ctr().Image = "10.96.0.1:443/x/y:1" }},
	{name: "an image at an IPv6 address", rule: "image-registry", apply: func(fx *fixture) { fx.ctr().Image = "[fd00:ec2::254]:80/x:1" }},
	{name: "an image from localhost", rule: "image-registry", apply: func(fx *fixture) { fx.ctr().Image = "localhost:5000/x:1" }},
	{name: "an image from a single-label host", rule: "image-registry", apply: func(fx *fixture) { fx.ctr().Image = "registry:5000/x:1" }},
	{name: "an image from a cluster-local name", rule: "image-registry", apply: func(fx *fixture) {
		fx.ctr().Image = "kubernetes.default.svc.cluster.local/x:1"
	}},
	{name: "an image from a .internal name", rule: "image-registry", apply: func(fx *fixture) { fx.ctr().Image = "metadata.google.internal/x:1" }},
	{name: "an image outside the allowed repositories", rule: "image-registry", apply: func(fx *fixture) {
		fx.in.Limits.AllowedRegistries = []string{"ghcr.io/org"}
		fx.ctr().Image = "ghcr.io/organiser/x:1"
	}},
	{name: "an image from Docker Hub when only ghcr.io is allowed", rule: "image-registry", apply: func(fx *fixture) {
		fx.in.Limits.AllowedRegistries = []string{"ghcr.io"}
		fx.ctr().Image = "nginx"
	}},
	{name: "an image reference that does not parse", rule: "image-registry", apply: func(fx *fixture) { fx.ctr().Image = "Registry.example/UPPER:1" }},

	// security-profile
	{name: "a Localhost seccomp profile on the pod", rule: "security-profile", apply: func(fx *fixture) {
		fx.pod().SecurityContext.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("profiles/none.json")}
	}},
	{name: "a Localhost seccomp profile on the container", rule: "security-profile", apply: func(fx *fixture) {
		fx.ctr().SecurityContext.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("profiles/none.json")}
	}},
	{name: "a Localhost AppArmor profile on the pod", rule: "security-profile", apply: func(fx *fixture) {
		fx.pod().SecurityContext.AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr.To("unconfined-ish")}
	}},
	{name: "a Localhost AppArmor profile on the container", rule: "security-profile", apply: func(fx *fixture) {
		fx.ctr().SecurityContext.AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeLocalhost, LocalhostProfile: ptr.To("x")}
	}},
	{name: "a Localhost AppArmor annotation, key allowed", rule: "security-profile", apply: func(fx *fixture) {
		allowKey(fx, "container.apparmor.security.beta.kubernetes.io/")
		annotate(fx.podMeta(), "container.apparmor.security.beta.kubernetes.io/challenge", "localhost/x")
	}},

	// root-group
	{name: "runAsGroup 0 on the pod", rule: "root-group", apply: func(fx *fixture) {
		fx.pod().SecurityContext.RunAsGroup, fx.ctr().SecurityContext.RunAsGroup = ptr.To[int64](0), nil
	}},
	{name: "runAsGroup 0 on the container", rule: "root-group", apply: func(fx *fixture) { fx.ctr().SecurityContext.RunAsGroup = ptr.To[int64](0) }},
	{name: "no runAsGroup: the image's group", rule: "root-group", apply: func(fx *fixture) {
		fx.pod().SecurityContext.RunAsGroup, fx.ctr().SecurityContext.RunAsGroup = nil, nil
	}},
	{name: "fsGroup 0", rule: "root-group", apply: func(fx *fixture) { fx.pod().SecurityContext.FSGroup = ptr.To[int64](0) }},
	{name: "supplemental group 0", rule: "root-group", apply: func(fx *fixture) { fx.pod().SecurityContext.SupplementalGroups = []int64{1000, 0} }},

	// termination-grace, scheduling-gates
	{name: "an hour of termination grace", rule: "termination-grace", apply: func(fx *fixture) {
		fx.pod().TerminationGracePeriodSeconds = ptr.To[int64](3600)
	}},
	{name: "a scheduling gate", rule: "scheduling-gates", apply: func(fx *fixture) {
		fx.pod().SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/never"}}
	}},

	// service-cluster-ip, service-source-ranges
	{name: "a fixed clusterIP", rule: "service-cluster-ip", apply: func(fx *fixture) { fx.svc.Spec.ClusterIP = "10.96.0.10" }},
	{name: "a headless Service", rule: "service-cluster-ip", apply: func(fx *fixture) { fx.svc.Spec.ClusterIP = corev1.ClusterIPNone }},
	{name: "fixed clusterIPs", rule: "service-cluster-ip", apply: func(fx *fixture) { fx.svc.Spec.ClusterIPs = []string{"fd00:10:96::a"} }},
	{name: "loadBalancerSourceRanges", rule: "service-source-ranges", apply: func(fx *fixture) {
		fx.in.Limits.AllowLoadBalancer, fx.svc.Spec.Type = true, corev1.ServiceTypeLoadBalancer
		fx.svc.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8"}
	}},

	// resource-quota, limit-range, namespace-metadata
	{name: "a quota raised", rule: "resource-quota", own: true, apply: func(fx *fixture) { fx.quota.Spec.Hard["pods"] = resource.MustParse("1000") }},
	{name: "a quota without a limit", rule: "resource-quota", own: true, apply: func(fx *fixture) { delete(fx.quota.Spec.Hard, "limits.cpu") }},
	{name: "a quota with scopes", rule: "resource-quota", own: true, apply: func(fx *fixture) {
		fx.quota.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}
	}},
	{name: "a default limit raised", rule: "limit-range", own: true, apply: func(fx *fixture) {
		fx.limitRange.Spec.Limits[0].Default[corev1.ResourceCPU] = resource.MustParse("64")
	}},
	{name: "a second limit item", rule: "limit-range", own: true, apply: func(fx *fixture) {
		fx.limitRange.Spec.Limits = append(fx.limitRange.Spec.Limits, corev1.LimitRangeItem{Type: corev1.LimitTypePod,
			Max: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")}})
	}},
	{name: "a mesh annotation on the Namespace", rule: "namespace-metadata", own: true, apply: func(fx *fixture) {
		annotate(&fx.ns.ObjectMeta, "linkerd.io/inject", "enabled")
	}},
	{name: "a node selector annotation on the Namespace, key allowed", rule: "namespace-metadata", own: true, apply: func(fx *fixture) {
		allowKey(fx, "scheduler.alpha.kubernetes.io/")
		annotate(&fx.ns.ObjectMeta, "scheduler.alpha.kubernetes.io/node-selector", "pool=privileged")
	}},
	{name: "a label of the organiser's on the Namespace", rule: "namespace-metadata", own: true, apply: func(fx *fixture) {
		fx.ns.Labels["istio-injection"] = "enabled"
	}},
	{name: "an owner annotation naming another Challenge", rule: "namespace-metadata", own: true, apply: func(fx *fixture) {
		fx.in.OwnerAnnotations = map[string]string{"operator-sdk/primary-resource": "ctf-team1/web"}
		annotate(&fx.ns.ObjectMeta, "operator-sdk/primary-resource", "ctf-team2/web")
	}},
	{name: "an owner annotation naming another Challenge on a Deployment", rule: "metadata-key", own: true, apply: func(fx *fixture) {
		fx.in.OwnerAnnotations = map[string]string{"operator-sdk/primary-resource": "ctf-team1/web"}
		annotate(&fx.deploy.ObjectMeta, "operator-sdk/primary-resource", "ctf-team2/web")
	}},
	{name: "an owner annotation on a pod template", rule: "metadata-key", own: true, apply: func(fx *fixture) {
		fx.in.OwnerAnnotations = map[string]string{"operator-sdk/primary-resource": "ctf-team1/web"}
		annotate(fx.podMeta(), "operator-sdk/primary-resource", "ctf-team1/web")
	}},
	{name: "a Pod Security warn label on the Namespace", rule: "namespace-metadata", own: true, apply: func(fx *fixture) {
		fx.ns.Labels["pod-security.kubernetes.io/warn"] = "privileged"
	}},

	// secret
	{name: "a Secret named other-flag", rule: "secret", apply: func(fx *fixture) { fx.secret.Name = "other-flag" }},
	{name: "a Secret when none is allowed", rule: "secret", apply: func(fx *fixture) { fx.in.FlagSecret = "" }},
	{name: "a Secret of another type", rule: "secret", apply: func(fx *fixture) { fx.secret.Type = corev1.SecretTypeDockerConfigJson }},
	{name: "a Secret with another key", rule: "secret", apply: func(fx *fixture) { fx.secret.StringData["token"] = "x" }},
	{name: "a Secret with another data key", rule: "secret", apply: func(fx *fixture) {
		fx.secret.Data = map[string][]byte{".dockerconfigjson": []byte("{}")}
	}},
	{name: "a secret file of another workload's by item", rule: "volume", apply: withSecretFile("db.file.0", "db.file.0")},
	{name: "the flag by item", rule: "volume", apply: withSecretFile("flag", "flag")},
	{name: "a secret file at another path", rule: "volume", apply: withSecretFile("file.0", "../file.0")},
	{name: "a Secret key of a component's variable with a dot in its name", rule: "secret", apply: func(fx *fixture) {
		fx.secret.StringData["db.env.A.B"] = "x"
	}},
	{name: "a Secret key of a component not a DNS label", rule: "secret", apply: func(fx *fixture) { fx.secret.StringData["Db.env.PW"] = "x" }},
	{name: "a Secret key of a secret file past the ninth", rule: "secret", apply: func(fx *fixture) { fx.secret.StringData["file.10"] = "x" }},

	// unjudged-field: fields the Go types know and no rule judges (issue 29)
	{name: "topologySpreadConstraints", rule: "unjudged-field", apply: func(fx *fixture) {
		fx.pod().TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "kubernetes.io/hostname",
			WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: testSelector()}}}
	}},
	{name: "a subdomain", rule: "bare-names", apply: func(fx *fixture) { fx.pod().Subdomain = "web-team2" }},
	{name: "a hostname", rule: "bare-names", apply: func(fx *fixture) { fx.pod().Hostname = "ctfd" }},
	{name: "readinessGates", rule: "unjudged-field", apply: func(fx *fixture) {
		fx.pod().ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/never"}}
	}},
	{name: "a preemptionPolicy", rule: "unjudged-field", apply: func(fx *fixture) { fx.pod().PreemptionPolicy = ptr.To(corev1.PreemptNever) }},
	{name: "an overhead", rule: "unjudged-field", apply: func(fx *fixture) {
		fx.pod().Overhead = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}
	}},
	{name: "resource claims of the pod", rule: "unjudged-field", apply: func(fx *fixture) {
		fx.pod().ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("other-gpu")}}
	}},
	{name: "pod-level resources", rule: "unjudged-field", apply: func(fx *fixture) {
		fx.pod().Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")}}
	}},
	{name: "a container's resizePolicy", rule: "unjudged-field", apply: func(fx *fixture) {
		fx.ctr().ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired}}
	}},
	{name: "a container's restartPolicy", rule: "unjudged-field", apply: func(fx *fixture) {
		fx.ctr().RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
	}},
	{name: "a preStop hook", rule: "unjudged-field", apply: func(fx *fixture) {
		fx.ctr().Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: []string{"sleep", "3600"}}}}
	}},
	{name: "volumeDevices", rule: "unjudged-field", apply: func(fx *fixture) {
		fx.ctr().VolumeDevices = []corev1.VolumeDevice{{Name: "tmp", DevicePath: "/dev/xvda"}}
	}},
	{name: "a container's resource claims", rule: "unjudged-field", apply: func(fx *fixture) {
		fx.ctr().Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
	}},
	{name: "a liveness probe's own termination grace", rule: "unjudged-field", apply: func(fx *fixture) {
		fx.ctr().LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("main")}},
			TerminationGracePeriodSeconds: ptr.To[int64](3600)}
	}},
	{name: "a probe's HTTP headers", rule: "unjudged-field", apply: func(fx *fixture) {
		fx.ctr().ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("main"),
			HTTPHeaders: []corev1.HTTPHeader{{Name: "X-Forwarded-For", Value: "127.0.0.1"}}}}}
	}},
	{name: "a mount's propagation", rule: "unjudged-field", apply: func(fx *fixture) {
		fx.ctr().VolumeMounts[0].MountPropagation = ptr.To(corev1.MountPropagationHostToContainer)
	}},
	{name: "the flag volume optional", rule: "unjudged-field", apply: func(fx *fixture) { fx.pod().Volumes[1].Secret.Optional = ptr.To(true) }},
	{name: "a Deployment's surge", rule: "unjudged-field", apply: func(fx *fixture) {
		surge := intstr.FromString("1000%")
		fx.deploy.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge}}
	}},
	{name: "a Service's ipFamilyPolicy", rule: "unjudged-field", apply: func(fx *fixture) {
		fx.svc.Spec.IPFamilyPolicy = ptr.To(corev1.IPFamilyPolicyRequireDualStack)
	}},
	{name: "a Service's loadBalancerClass", rule: "unjudged-field", apply: func(fx *fixture) {
		fx.in.Limits.AllowLoadBalancer, fx.svc.Spec.Type = true, corev1.ServiceTypeLoadBalancer
		fx.svc.Spec.LoadBalancerClass = ptr.To("internal.example/vip")
	}},
	{name: "a Service publishing pods not ready", rule: "service", apply: func(fx *fixture) { fx.svc.Spec.PublishNotReadyAddresses = true }},
	{name: "a Service's externalTrafficPolicy", rule: "unjudged-field", apply: func(fx *fixture) {
		fx.svc.Spec.Type, fx.svc.Spec.ExternalTrafficPolicy = corev1.ServiceTypeNodePort, corev1.ServiceExternalTrafficPolicyLocal
	}},
	{name: "a Service port's appProtocol", rule: "unjudged-field", apply: func(fx *fixture) { fx.svc.Spec.Ports[0].AppProtocol = ptr.To("kubernetes.io/h2c") }},
	{name: "a generateName", rule: "unjudged-field", apply: func(fx *fixture) { fx.svc.GenerateName = "web-" }},
	{name: "an immutable Secret", rule: "unjudged-field", apply: func(fx *fixture) { fx.secret.Immutable = ptr.To(true) }},
	{name: "a finalizer in the Namespace's spec", rule: "unjudged-field", own: true, apply: func(fx *fixture) {
		fx.ns.Spec.Finalizers = []corev1.FinalizerName{"example.com/keep"}
	}},
	{name: "a route's listener", rule: "unjudged-field", apply: withRoute("HTTPRoute", func(r map[string]any) {
		r["parentRefs"].([]any)[0].(map[string]any)["sectionName"] = "internal"
	})},
	{name: "a route's matches", rule: "unjudged-field", apply: withRoute("HTTPRoute", func(r map[string]any) {
		r["rules"].([]any)[0].(map[string]any)["matches"] = []any{map[string]any{"path": map[string]any{"value": "/admin"}}}
	})},
	{name: "a route backend's weight", rule: "unjudged-field", apply: withRoute("TLSRoute", func(r map[string]any) {
		r["rules"].([]any)[0].(map[string]any)["backendRefs"].([]any)[0].(map[string]any)["weight"] = 0
	})},

	// owner-reference
	{name: "an owner reference to another Challenge", rule: "owner-reference", apply: func(fx *fixture) {
		fx.svc.OwnerReferences = []metav1.OwnerReference{challengeOwner("web-team2")}
	}},
	{name: "a second owner reference", rule: "owner-reference", apply: func(fx *fixture) {
		fx.deploy.OwnerReferences = []metav1.OwnerReference{challengeOwner(release), {APIVersion: "v1", Kind: "Namespace", Name: "kube-system", UID: "1"}}
	}},
}

// challengeOwner is the owner reference helm-operator-plugins writes on a release's namespaced
// objects after the gate, which a stored release record then carries.
func challengeOwner(name string) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "ctf.challenge-operator.io/v1alpha1", Kind: "Challenge", Name: name, UID: "0b5e",
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

var harmlessChanges = []harmless{
	{name: "the valid release"},
	{name: "with a TLSRoute", apply: withRoute("TLSRoute", nil)},
	{name: "with an HTTPRoute", apply: withRoute("HTTPRoute", nil)},
	{name: "with a namespace of its own", own: true},
	{name: "with an Ingress", ingress: true},
	{name: "with both", own: true, ingress: true},
	{name: "a claimed pooled instance: the team's objects, the pool's pods", apply: func(fx *fixture) {
		fx.in.PodParticipant = "pool-x"
		fx.podMeta().Labels[ctfv1alpha1.ParticipantLabel] = "pool-x"
	}},
	{name: "the owner annotations a stored record's Namespace carries", own: true, apply: func(fx *fixture) {
		fx.in.OwnerAnnotations = map[string]string{"operator-sdk/primary-resource": "ctf-team1/web", "operator-sdk/primary-resource-type": "Challenge.ctf.challenge-operator.io"}
		for k, v := range fx.in.OwnerAnnotations {
			annotate(&fx.ns.ObjectMeta, k, v)
		}
	}},
	// Across namespaces the Helm reconciler owns objects by these annotations instead of an
	// ownerReference; the allowlist of keys once refused them on a stored record's objects.
	{name: "the owner annotations every object of a stored record carries in a namespace of its own", own: true, apply: func(fx *fixture) {
		fx.in.OwnerAnnotations = map[string]string{"operator-sdk/primary-resource": "ctf-team1/web", "operator-sdk/primary-resource-type": "Challenge.ctf.challenge-operator.io"}
		for _, m := range []*metav1.ObjectMeta{&fx.ns.ObjectMeta, &fx.deploy.ObjectMeta, &fx.svc.ObjectMeta, &fx.sa.ObjectMeta, &fx.np.ObjectMeta,
			&fx.secret.ObjectMeta, &fx.quota.ObjectMeta, &fx.limitRange.ObjectMeta} {
			for k, v := range fx.in.OwnerAnnotations {
				annotate(m, k, v)
			}
		}
	}},
	{name: "egress to an internal range the organiser allows", relaxes: true, apply: func(fx *fixture) {
		fx.in.Limits.AllowedCIDRs = prefixes("10.1.2.0/24")
		fx.egress(ipBlock("10.1.2.0/24"))
	}},
	{name: "egress whose excepts and allowed ranges together cover an internal range", relaxes: true, apply: func(fx *fixture) {
		fx.in.Limits.AllowedCIDRs = prefixes("10.128.0.0/9")
		fx.egress(ipBlock("10.0.0.0/8", "10.0.0.0/9"))
	}},
	{name: "IPv6 egress to the internet", apply: egressTo(ipBlock("::/0", defaultCIDRs(true)...))},
	{name: "a Docker Hub short name", apply: func(fx *fixture) { fx.ctr().Image = "nginx:1.27" }},
	{name: "an image by digest from a public registry", apply: func(fx *fixture) {
		fx.ctr().Image = "ghcr.io/org/web@sha256:" + strings.Repeat("a", 64)
	}},
	{name: "an image under an allowed repository prefix", relaxes: true, apply: func(fx *fixture) {
		fx.in.Limits.AllowedRegistries = []string{"ghcr.io/org"}
		fx.ctr().Image = "ghcr.io/org/web:1"
	}},
	{name: "Docker Hub allowed by name", relaxes: true, apply: func(fx *fixture) {
		fx.in.Limits.AllowedRegistries = []string{"docker.io/library"}
		fx.ctr().Image = "nginx"
	}},
	{name: "a registry at an address the operator allows", relaxes: true, apply: func(fx *fixture) {
		fx.in.Limits.AllowedRegistries = []string{"10.0.0.5:5000"}
		fx.ctr().Image = "10.0.0.5:5000/ctf/web:1"
	}},
	{name: "a secret file of its own by item", apply: withSecretFile("file.0", "file.0")},
	{name: "a Secret holding a component's secretEnv and secret files", apply: func(fx *fixture) {
		fx.secret.StringData["db.env.POSTGRES_PASSWORD"] = "x"
		fx.secret.StringData["db.file.0"] = "x"
		fx.secret.StringData["file.7"] = "x"
	}},
	{name: "a termination grace of 30 seconds", apply: func(fx *fixture) { fx.pod().TerminationGracePeriodSeconds = ptr.To[int64](30) }},
	{name: "the container's own non-root group", apply: func(fx *fixture) {
		fx.pod().SecurityContext.RunAsGroup = nil
		fx.ctr().SecurityContext.RunAsGroup = ptr.To[int64](2000)
	}},
	{name: "a RuntimeDefault AppArmor profile", apply: func(fx *fixture) {
		fx.pod().SecurityContext.AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeRuntimeDefault}
	}},
	{name: "an allowed load balancer annotation", apply: func(fx *fixture) {
		annotate(&fx.svc.ObjectMeta, "service.beta.kubernetes.io/aws-load-balancer-internal", "false")
	}},
	{name: "a LoadBalancer when allowed", relaxes: true, apply: func(fx *fixture) {
		fx.in.Limits.AllowLoadBalancer = true
		fx.svc.Spec.Type = corev1.ServiceTypeLoadBalancer
	}},
	{name: "a NodePort without a fixed port", apply: func(fx *fixture) { fx.svc.Spec.Type = corev1.ServiceTypeNodePort }},
	{name: "replicas unset", apply: func(fx *fixture) { fx.deploy.Spec.Replicas = nil }},
	{name: "replicas at the ceiling", apply: func(fx *fixture) { fx.deploy.Spec.Replicas = ptr.To[int32](2) }},
	{name: "limits at the ceiling", apply: func(fx *fixture) {
		fx.ctr().Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000m"), corev1.ResourceMemory: resource.MustParse("512Mi")}
	}},
	{name: "disk at its ceiling", apply: diskCeiling("1Gi", "1Gi", "1Gi")},
	{name: "no flag at all", relaxes: true, apply: func(fx *fixture) {
		fx.in.FlagSecret = ""
		fx.omit["Secret"] = true
		fx.ctr().Env = fx.ctr().Env[:1]
		fx.pod().Volumes = fx.pod().Volumes[:1]
		fx.ctr().VolumeMounts = fx.ctr().VolumeMounts[:1]
	}},
	{name: "pod labels and annotations of the challenge's own", apply: func(fx *fixture) {
		fx.podMeta().Labels["tier"] = "web"
		annotate(fx.podMeta(), "owner", "organisers")
	}},
	{name: "a DNS namespace of the organiser's", apply: func(fx *fixture) {
		fx.in.Limits.DNSNamespace = "dns"
		fx.np.Spec.Egress[0].To[0].NamespaceSelector.MatchLabels[nameLabel] = "dns"
	}},
	{name: "ingress from a namespace's chosen pods", apply: ingressFrom(networkingv1.NetworkPolicyPeer{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{nameLabel: "ingress-nginx"}},
		PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "controller"}},
	})},
	{name: "a TLS host under the domain", ingress: true, apply: func(fx *fixture) {
		fx.ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{host}, SecretName: "wildcard-tls"}}
	}},
	{name: "the cluster's default ingress class and certificate", ingress: true, apply: func(fx *fixture) {
		fx.ing.Spec.IngressClassName = nil
		fx.ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{host}}}
	}},
	{name: "a host another instance does not use", ingress: true, apply: func(fx *fixture) {
		fx.in.HostTaken = func(h string) bool { return h != host }
	}},
	{name: "imagePullSecrets", apply: func(fx *fixture) {
		fx.pod().ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry"}}
	}},
	{name: "the owner references a stored record carries", apply: func(fx *fixture) {
		for _, m := range []*metav1.ObjectMeta{&fx.deploy.ObjectMeta, &fx.svc.ObjectMeta, &fx.sa.ObjectMeta, &fx.np.ObjectMeta, &fx.secret.ObjectMeta} {
			m.OwnerReferences = []metav1.OwnerReference{challengeOwner(release)}
		}
	}},
	{name: "a probe and a scratch directory as the chart renders them", apply: func(fx *fixture) {
		fx.ctr().LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromString("main")}},
			PeriodSeconds: 5, InitialDelaySeconds: 1, TimeoutSeconds: 2, FailureThreshold: 3}
		fx.ctr().StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/check"}}}}
		fx.pod().Volumes = append(fx.pod().Volumes, corev1.Volume{Name: "scratch-0", VolumeSource: corev1.VolumeSource{
			EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(resource.MustParse("16Mi"))}}})
		fx.ctr().VolumeMounts = append(fx.ctr().VolumeMounts, corev1.VolumeMount{Name: "scratch-0", MountPath: "/run"})
		fx.ctr().Command, fx.ctr().Args, fx.ctr().WorkingDir = []string{"/app/run"}, []string{"--port=8080"}, "/app"
	}},
	{name: "empty documents and comments", apply: func(fx *fixture) {
		fx.post = append(fx.post, func(s string) string { return "---\n# nothing here\n---\n" + s + "---\n\n" })
	}},
}

// withSecretFile lets the primary workload mount its secret file file.0 and mounts the item key
// of the flag Secret at path.
func withSecretFile(key, path string) func(*fixture) {
	return func(fx *fixture) {
		fx.in.Workloads[0].SecretFiles = []string{"file.0"}
		fx.pod().Volumes = append(fx.pod().Volumes, corev1.Volume{Name: "secrets", VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: fx.in.FlagSecret, Items: []corev1.KeyToPath{{Key: key, Path: path, Mode: ptr.To[int32](0o400)}}}}})
		fx.ctr().VolumeMounts = append(fx.ctr().VolumeMounts, corev1.VolumeMount{Name: "secrets", MountPath: "/etc/key.pem", SubPath: path, ReadOnly: true})
	}
}
