package policy

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/identity"
	"github.com/challenge-operator/challenge-operator/internal/security"
)

// granted makes the release one of a template whose security section is sec: the Instance
// names exactly what it grants, and the pod runs with exactly that, as the chart renders it.
func granted(sec *ctfv1alpha1.Security) func(*fixture) {
	return func(fx *fixture) {
		ctx := security.For(sec, false)
		fx.in.Workloads[0].Security = &ctx
		fx.pod().SecurityContext = ctx.Pod.DeepCopy()
		fx.pod().RuntimeClassName = ctx.RuntimeClassName
		fx.pod().NodeSelector, fx.pod().Tolerations = ctx.NodeSelector, ctx.Tolerations
		ctr := ctx.Container.DeepCopy()
		ctr.ReadOnlyRootFilesystem = ptr.To(true)
		fx.ctr().SecurityContext = ctr
		fx.ns.Labels["pod-security.kubernetes.io/enforce"] = string(ctx.Profile)
	}
}

// then applies changes in order.
func then(changes ...func(*fixture)) func(*fixture) {
	return func(fx *fixture) {
		for _, change := range changes {
			change(fx)
		}
	}
}

var (
	rootWebApp = &ctfv1alpha1.Security{Profile: ctfv1alpha1.ProfileBaseline, RunAsUser: ptr.To[int64](0), RunAsGroup: ptr.To[int64](0),
		AllowPrivilegeEscalation: ptr.To(true),
		Capabilities:             &ctfv1alpha1.Capabilities{Add: []ctfv1alpha1.Capability{"NET_BIND_SERVICE", "SETUID", "SETGID", "CHOWN"}}}
	sandboxedJail = &ctfv1alpha1.Security{Profile: ctfv1alpha1.ProfilePrivileged, Privileged: ptr.To(true), RuntimeClassName: "gvisor",
		SeccompProfile:  &ctfv1alpha1.Confinement{Type: ctfv1alpha1.ConfinementUnconfined},
		AppArmorProfile: &ctfv1alpha1.Confinement{Type: ctfv1alpha1.ConfinementUnconfined},
		Capabilities:    &ctfv1alpha1.Capabilities{Add: []ctfv1alpha1.Capability{"SYS_ADMIN"}}}
	kvm = &ctfv1alpha1.Security{NodeSelector: map[string]ctfv1alpha1.LabelValue{"ctf.example/kvm": "true"},
		Tolerations:       []ctfv1alpha1.Toleration{{Key: "ctf.example/kvm", Effect: "NoSchedule"}},
		ExtendedResources: map[string]int32{"devices.kubevirt.io/kvm": 1}}
	localSeccomp = &ctfv1alpha1.Security{SeccompProfile: &ctfv1alpha1.Confinement{Type: ctfv1alpha1.ConfinementLocalhost, LocalhostProfile: "ctf/jail.json"}}
)

// securityBreakings are what a release may not do whatever its template grants: more than
// the template's exact word, or what its profile's Pod Security Standard forbids.
var securityBreakings = []breaking{
	{name: "a capability the template did not grant", rule: "security-context", apply: then(granted(nil), func(fx *fixture) {
		fx.ctr().SecurityContext.Capabilities.Add = []corev1.Capability{"NET_BIND_SERVICE"}
	})},
	{name: "a user other than the template's", rule: "security-context", apply: then(granted(nil), func(fx *fixture) {
		fx.pod().SecurityContext.RunAsUser = ptr.To[int64](2000)
	})},
	{name: "privileged beyond a privileged template's word", rule: "security-context", apply: then(granted(sandboxedJail), func(fx *fixture) {
		fx.ctr().SecurityContext.Capabilities.Add = append(fx.ctr().SecurityContext.Capabilities.Add, "SYS_PTRACE")
	})},
	{name: "a runtime class the template did not name", rule: "placement", apply: then(granted(sandboxedJail), func(fx *fixture) {
		fx.pod().RuntimeClassName = ptr.To("runc")
	})},
	{name: "privileged in a baseline template", rule: "pod-security", apply: then(granted(rootWebApp), func(fx *fixture) {
		fx.ctr().SecurityContext.Privileged = ptr.To(true)
	})},
	{name: "a host path in a privileged template", rule: "volume", apply: then(granted(sandboxedJail), func(fx *fixture) {
		fx.pod().Volumes = append(fx.pod().Volumes, corev1.Volume{Name: "host", VolumeSource: corev1.VolumeSource{
			HostPath: &corev1.HostPathVolumeSource{Path: "/"}}})
	})},
	{name: "the node's process namespace in a privileged template", rule: "host-namespace", apply: then(granted(sandboxedJail), func(fx *fixture) {
		fx.pod().HostPID = true
	})},
	{name: "a namespace of its own enforcing less than the template's profile", rule: "namespace", own: true, apply: then(granted(nil), func(fx *fixture) {
		fx.ns.Labels["pod-security.kubernetes.io/enforce"] = "privileged"
	})},
	{name: "a readiness probe of the cloud's metadata", rule: "probe-host", apply: func(fx *fixture) {
		fx.ctr().ReadinessProbe.TCPSocket.Host = "169.254.169.254"
	}},
	{name: "a liveness probe of the API server", rule: "probe-host", apply: func(fx *fixture) {
		fx.ctr().LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Host: "kubernetes.default.svc", Path: "/", Port: intstr.FromInt32(443)}}}
	}},
	{name: "a startup probe with a Host header", rule: "probe-host", apply: func(fx *fixture) {
		fx.ctr().StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: "/", Port: intstr.FromString("main"), HTTPHeaders: []corev1.HTTPHeader{{Name: "host", Value: "internal"}}}}}
	}},
	{name: "a postStart hook to another host", rule: "probe-host", apply: func(fx *fixture) {
		fx.ctr().Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{TCPSocket: &corev1.TCPSocketAction{Host: "10.0.0.1", Port: intstr.FromInt32(22)}}}
	}},
	{name: "a node the template did not select", rule: "placement", apply: then(granted(kvm), func(fx *fixture) {
		fx.pod().NodeSelector = map[string]string{"kubernetes.io/hostname": "control-plane"}
	})},
	{name: "a taint the template did not tolerate", rule: "placement", apply: then(granted(kvm), func(fx *fixture) {
		fx.pod().Tolerations = append(fx.pod().Tolerations, corev1.Toleration{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists})
	})},
	{name: "more devices than the template asked for", rule: "resources", apply: then(granted(kvm), func(fx *fixture) {
		fx.ctr().Resources.Limits["devices.kubevirt.io/kvm"] = resource.MustParse("2")
	})},
	{name: "a GPU nobody granted", rule: "resources", apply: func(fx *fixture) {
		fx.ctr().Resources.Limits["nvidia.com/gpu"] = resource.MustParse("1")
	}},
	{name: "another ConfigMap mounted", rule: "volume", apply: func(fx *fixture) {
		fx.pod().Volumes = append(fx.pod().Volumes, corev1.Volume{Name: "cm", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}}}})
	}},
	{name: "binary data in the files ConfigMap", rule: "volume", apply: func(fx *fixture) {
		fx.extra = append(fx.extra, &corev1.ConfigMap{TypeMeta: typeMeta("v1", "ConfigMap"), ObjectMeta: meta(identity.FilesConfigMap(release)),
			BinaryData: map[string][]byte{"f0": {0, 1}}})
	}},
	{name: "a sysctl other than the unprivileged port start", rule: "security-context", apply: func(fx *fixture) {
		fx.pod().SecurityContext.Sysctls = []corev1.Sysctl{{Name: "kernel.shm_rmid_forced", Value: "1"}}
	}},
	{name: "the unprivileged port start set to a word", rule: "security-context", apply: func(fx *fixture) {
		fx.pod().SecurityContext.Sysctls = []corev1.Sysctl{{Name: UnprivilegedPortSysctl, Value: "0 # x"}}
	}},
	{name: "a Localhost profile on the container beside the template's", rule: "security-context", apply: then(granted(localSeccomp), func(fx *fixture) {
		fx.ctr().SecurityContext.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("other.json")}
	})},
}

// securityHarmless are releases of templates that grant more, exactly as granted.
var securityHarmless = []harmless{
	{name: "a root web app on port 80 with the baseline capabilities", relaxes: true, apply: granted(rootWebApp)},
	{name: "a privileged jail in its sandbox runtime", relaxes: true, apply: granted(sandboxedJail)},
	{name: "a namespace of its own enforcing baseline", own: true, relaxes: true, apply: granted(rootWebApp)},
	{name: "a Localhost seccomp profile the template names", relaxes: true, apply: granted(localSeccomp)},
	{name: "the restricted defaults named exactly", apply: granted(nil)},
	{name: "the template's files, mounted read-only", apply: func(fx *fixture) {
		fx.extra = append(fx.extra, &corev1.ConfigMap{TypeMeta: typeMeta("v1", "ConfigMap"), ObjectMeta: meta(identity.FilesConfigMap(release)),
			Data: map[string]string{"f0": "server { listen 80; }\n"}})
		fx.pod().Volumes = append(fx.pod().Volumes, corev1.Volume{Name: "files", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: identity.FilesConfigMap(release)}}}})
		fx.ctr().VolumeMounts = append(fx.ctr().VolumeMounts, corev1.VolumeMount{Name: "files", MountPath: "/etc/nginx/nginx.conf", SubPath: "f0", ReadOnly: true})
	}},
	{name: "a KVM device on the node set aside", relaxes: true, apply: then(granted(kvm), func(fx *fixture) {
		fx.ctr().Resources.Limits["devices.kubevirt.io/kvm"] = resource.MustParse("1")
		fx.ctr().Resources.Requests["devices.kubevirt.io/kvm"] = resource.MustParse("1")
	})},
	{name: "HTTP, TCP and exec probes of the pod itself", apply: func(fx *fixture) {
		fx.ctr().ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("main")}}}
		fx.ctr().StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("main")}}}
		fx.ctr().LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"/bin/check"}}}}
	}},
	{name: "a non-root server on port 80", apply: then(granted(nil), func(fx *fixture) {
		fx.pod().SecurityContext.Sysctls = []corev1.Sysctl{{Name: UnprivilegedPortSysctl, Value: "80"}}
	})},
}

func init() {
	breakings = append(breakings, securityBreakings...)
	harmlessChanges = append(harmlessChanges, securityHarmless...)
}
