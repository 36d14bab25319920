// Package challengeshapes_test runs real challenges' shapes on the real
// control plane, with the operator's flags opened as far as an organiser of
// pwn challenges would ask an admin to: privileged templates allowed, in the
// gvisor or kata runtime class, SYS_ADMIN on top of the baseline
// capabilities. Each shape's namespace enforces its profile's Pod Security
// Standard, so the API server judges every pod again.
package challengeshapes_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/operator"
	"github.com/challenge-operator/challenge-operator/internal/security"
	"github.com/challenge-operator/challenge-operator/internal/values"
	"github.com/challenge-operator/challenge-operator/test/builders"
	"github.com/challenge-operator/challenge-operator/test/harness"
)

var h *harness.Harness

// sandboxes are the runtime classes the admin allows; the API server refuses a
// pod whose RuntimeClass does not exist, so the tests create them.
var sandboxes = []string{"gvisor", "kata"}

func TestMain(m *testing.M) {
	os.Exit(harness.Run(m, harness.Options{AsServiceAccount: true, Operator: operator.Options{
		MaxConcurrentReconciles: 4,
		Values: values.Settings{Security: security.Bounds{
			MaxProfile:            ctfv1alpha1.ProfilePrivileged,
			SandboxRuntimeClasses: sandboxes,
			AllowedCapabilities:   []string{"SYS_ADMIN"},
			LocalhostProfiles:     []string{"chrome.json"},
			NodeSelectors:         []string{kvmLabel + "=true"},
			Tolerations:           []string{kvmLabel},
			ExtendedResources:     []string{kvmDevice},
		}},
	}}, &h, func() {
		key := harness.OrganiserSecret("flag-key", map[string][]byte{"key": []byte("hmac-key-for-the-shapes-0123456789")})
		if err := h.Client.Create(context.Background(), key); err != nil {
			panic(err)
		}
		bot := harness.OrganiserSecret("bot", map[string][]byte{"password": []byte(botPassword), "echoed": []byte("never-shown-either\n")})
		if err := h.Client.Create(context.Background(), bot); err != nil {
			panic(err)
		}
		if err := h.Client.Create(context.Background(), kvmNode()); err != nil {
			panic(err)
		}
		for i, name := range sandboxes {
			rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Handler: []string{"runsc", "kata"}[i]}
			if err := h.Client.Create(context.Background(), rc); err != nil {
				panic(err)
			}
		}
	}))
}

// A node set aside for kernel challenges: labelled, tainted, with KVM devices.
const (
	kvmLabel   = "ctf.example/kvm"
	kvmDevice  = "devices.kubevirt.io/kvm"
	kvmNodeNme = "kwok-kvm-0"
)

func kvmNode() *corev1.Node {
	res := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourceEphemeralStorage: resource.MustParse("1Ti"), corev1.ResourcePods: resource.MustParse("100"),
		kvmDevice: resource.MustParse("8"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        kvmNodeNme,
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
			Labels:      map[string]string{"kubernetes.io/hostname": kvmNodeNme, "kubernetes.io/os": "linux", "type": "kwok", kvmLabel: "true"},
		},
		Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: kvmLabel, Value: "true", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Allocatable: res, Capacity: res},
	}
}

// nginxConf is a config file as organisers write them: quotes, braces, a
// template-looking string and a YAML-looking line, carried as it is.
const nginxConf = `server {
    listen 80;
    # {{ .Release.Name }} is not a template here
    location / { return 200 "ok: yes\n"; }
}
`

// shape is one kind of real challenge ported onto a template.
type shape struct {
	name     string
	template func(*ctfv1alpha1.ChallengeTemplateSpec)
	// check asserts the rendered pod field by field.
	check func(g Gomega, pod *corev1.PodSpec)
}

func caps(names ...ctfv1alpha1.Capability) *ctfv1alpha1.Capabilities {
	return &ctfv1alpha1.Capabilities{Add: names}
}

func port(name string, n int32) []ctfv1alpha1.ChallengePort {
	return []ctfv1alpha1.ChallengePort{{Name: name, Port: n, Protocol: ctfv1alpha1.ProtocolTCP}}
}

var shapes = []shape{
	{
		name: "a kCTF image in restricted, its server started without the jail",
		template: func(s *ctfv1alpha1.ChallengeTemplateSpec) {
			s.Ports = port("nc", 1337)
			s.Command = []ctfv1alpha1.Argument{"/home/user/chal"}
			s.Args = []ctfv1alpha1.Argument{"--port", "1337"}
			s.WorkingDir = "/home/user"
		},
		check: func(g Gomega, pod *corev1.PodSpec) {
			ctr := pod.Containers[0]
			g.Expect(ctr.Command).To(Equal([]string{"/home/user/chal"}))
			g.Expect(ctr.Args).To(Equal([]string{"--port", "1337"}))
			g.Expect(ctr.WorkingDir).To(Equal("/home/user"))
			g.Expect(pod.SecurityContext.RunAsNonRoot).To(Equal(ptr.To(true)))
			g.Expect(pod.SecurityContext.RunAsUser).To(Equal(ptr.To[int64](1000)))
			g.Expect(ctr.SecurityContext.AllowPrivilegeEscalation).To(Equal(ptr.To(false)))
			g.Expect(ctr.SecurityContext.Capabilities).To(Equal(&corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}))
		},
	},
	{
		name: "nginx on port 80 in restricted, with its config file, a writable cache and /run in memory",
		template: func(s *ctfv1alpha1.ChallengeTemplateSpec) {
			s.Ports = port("http", 80)
			s.Files = []ctfv1alpha1.File{{Path: "/etc/nginx/conf.d/default.conf", Content: nginxConf}}
			s.Scratch = []ctfv1alpha1.ScratchMount{{Path: "/var/cache/nginx", SizeLimit: ptr.To(ctfv1alpha1.Quantity("32Mi"))}, {Path: "/run", Memory: true}}
		},
		check: func(g Gomega, pod *corev1.PodSpec) {
			g.Expect(pod.Containers[0].VolumeMounts).To(ContainElement(corev1.VolumeMount{Name: "files", MountPath: "/etc/nginx/conf.d/default.conf", SubPath: "f0", ReadOnly: true}))
			g.Expect(pod.Volumes).To(ContainElement(HaveField("ConfigMap.Items", Equal([]corev1.KeyToPath{{Key: "f0", Path: "f0", Mode: ptr.To[int32](0o444)}}))))
			g.Expect(pod.SecurityContext.Sysctls).To(Equal([]corev1.Sysctl{{Name: "net.ipv4.ip_unprivileged_port_start", Value: "80"}}),
				"a non-root process binds port 80 through its own network namespace's sysctl")
			g.Expect(pod.SecurityContext.RunAsNonRoot).To(Equal(ptr.To(true)))
			g.Expect(pod.Containers[0].VolumeMounts).To(ContainElements(
				corev1.VolumeMount{Name: "tmp", MountPath: "/tmp"},
				corev1.VolumeMount{Name: "scratch-0", MountPath: "/var/cache/nginx"},
				corev1.VolumeMount{Name: "scratch-1", MountPath: "/run"}))
			g.Expect(pod.Volumes).To(ContainElement(corev1.Volume{Name: "scratch-1", VolumeSource: corev1.VolumeSource{
				EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: ptr.To(resource.MustParse("64Mi"))}}}))
		},
	},
	{
		name: "a web app with HTTP readiness, TCP startup and exec liveness probes",
		template: func(s *ctfv1alpha1.ChallengeTemplateSpec) {
			s.Ports = port("http", 8080)
			s.Probes = &ctfv1alpha1.Probes{
				Readiness: &ctfv1alpha1.Probe{HTTP: &ctfv1alpha1.HTTPProbe{Path: "/healthz", Port: "http"}, PeriodSeconds: ptr.To[int32](2)},
				Startup:   &ctfv1alpha1.Probe{TCP: &ctfv1alpha1.TCPProbe{Port: "http"}, FailureThreshold: ptr.To[int32](30)},
				Liveness:  &ctfv1alpha1.Probe{Exec: &ctfv1alpha1.ExecProbe{Command: []ctfv1alpha1.Argument{"/app/alive"}}},
			}
		},
		check: func(g Gomega, pod *corev1.PodSpec) {
			ctr := pod.Containers[0]
			g.Expect(ctr.ReadinessProbe.HTTPGet.Path).To(Equal("/healthz"))
			g.Expect(ctr.ReadinessProbe.HTTPGet.Port.StrVal).To(Equal("http"))
			g.Expect(ctr.ReadinessProbe.HTTPGet.Host).To(BeEmpty())
			g.Expect(ctr.ReadinessProbe.PeriodSeconds).To(BeEquivalentTo(2))
			g.Expect(ctr.StartupProbe.TCPSocket.Port.StrVal).To(Equal("http"))
			g.Expect(ctr.StartupProbe.FailureThreshold).To(BeEquivalentTo(30))
			g.Expect(ctr.LivenessProbe.Exec.Command).To(Equal([]string{"/app/alive"}))
		},
	},
	{
		name: "a service that keeps its image's /tmp",
		template: func(s *ctfv1alpha1.ChallengeTemplateSpec) {
			s.KeepImageTmp = true
		},
		check: func(g Gomega, pod *corev1.PodSpec) {
			g.Expect(pod.Containers[0].VolumeMounts).To(BeEmpty())
			g.Expect(pod.Volumes).To(BeEmpty())
		},
	},
	{
		name: "a headless Chrome admin bot with its sandbox and internet egress",
		template: func(s *ctfv1alpha1.ChallengeTemplateSpec) {
			s.Ports = port("http", 3000)
			// Chrome's sandbox makes user namespaces, which the runtime's default seccomp
			// filter forbids: the organiser's chrome.json allows them, nothing more.
			s.Security = &ctfv1alpha1.Security{Profile: ctfv1alpha1.ProfileBaseline,
				SeccompProfile: &ctfv1alpha1.Confinement{Type: ctfv1alpha1.ConfinementLocalhost, LocalhostProfile: "chrome.json"}}
			s.Policy = &ctfv1alpha1.InstancePolicy{InternetEgress: true}
			s.Scratch = []ctfv1alpha1.ScratchMount{{Path: "/dev/shm", Memory: true, SizeLimit: ptr.To(ctfv1alpha1.Quantity("128Mi"))}}
		},
		check: func(g Gomega, pod *corev1.PodSpec) {
			g.Expect(pod.SecurityContext.SeccompProfile).To(Equal(&corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: ptr.To("chrome.json")}))
			g.Expect(pod.SecurityContext.RunAsUser).To(BeNil(), "the image's own user")
			g.Expect(pod.Containers[0].SecurityContext.Capabilities).To(Equal(&corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}),
				"the sandbox needs no capability, only user namespaces")
			g.Expect(pod.Containers[0].VolumeMounts).To(ContainElement(corev1.VolumeMount{Name: "scratch-0", MountPath: "/dev/shm"}))
		},
	},
	{
		name: "a kernel challenge with a KVM device on the node set aside for it",
		template: func(s *ctfv1alpha1.ChallengeTemplateSpec) {
			s.Ports = port("nc", 1337)
			s.Security = &ctfv1alpha1.Security{
				NodeSelector:      map[string]ctfv1alpha1.LabelValue{kvmLabel: "true"},
				Tolerations:       []ctfv1alpha1.Toleration{{Key: kvmLabel, Effect: "NoSchedule"}},
				ExtendedResources: map[string]int32{kvmDevice: 1},
			}
		},
		check: func(g Gomega, pod *corev1.PodSpec) {
			g.Expect(pod.NodeSelector).To(Equal(map[string]string{kvmLabel: "true"}))
			g.Expect(pod.Tolerations).To(Equal([]corev1.Toleration{{Key: kvmLabel, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}))
			ctr := pod.Containers[0]
			g.Expect(ctr.Resources.Limits).To(HaveKeyWithValue(corev1.ResourceName(kvmDevice), resource.MustParse("1")))
			g.Expect(ctr.Resources.Requests).To(HaveKeyWithValue(corev1.ResourceName(kvmDevice), resource.MustParse("1")))
			g.Expect(pod.SecurityContext.RunAsNonRoot).To(Equal(ptr.To(true)), "the device needs no privilege")
		},
	},
	{
		name: "a root web app writing to /app on port 80",
		template: func(s *ctfv1alpha1.ChallengeTemplateSpec) {
			s.Ports = port("http", 80)
			s.Security = &ctfv1alpha1.Security{Profile: ctfv1alpha1.ProfileBaseline, RunAsUser: ptr.To[int64](0), RunAsGroup: ptr.To[int64](0),
				Capabilities: caps("NET_BIND_SERVICE", "CHOWN", "DAC_OVERRIDE", "FOWNER")}
			s.Values = harness.Values(`{"readOnlyRootFilesystem": false}`)
		},
		check: func(g Gomega, pod *corev1.PodSpec) {
			ctr := pod.Containers[0]
			g.Expect(pod.SecurityContext.RunAsUser).To(Equal(ptr.To[int64](0)))
			g.Expect(pod.SecurityContext.RunAsGroup).To(Equal(ptr.To[int64](0)))
			g.Expect(pod.SecurityContext.RunAsNonRoot).To(BeNil())
			g.Expect(pod.SecurityContext.FSGroup).To(BeNil())
			g.Expect(ctr.SecurityContext.ReadOnlyRootFilesystem).To(Equal(ptr.To(false)), "it writes to /app")
			g.Expect(ctr.SecurityContext.Capabilities.Add).To(Equal([]corev1.Capability{"NET_BIND_SERVICE", "CHOWN", "DAC_OVERRIDE", "FOWNER"}))
			g.Expect(ctr.SecurityContext.Capabilities.Drop).To(Equal([]corev1.Capability{"ALL"}))
			g.Expect(ctr.Ports[0].ContainerPort).To(BeEquivalentTo(80))
		},
	},
	{
		name: "a setuid /readflag beside a non-root service, the flag root's alone",
		template: func(s *ctfv1alpha1.ChallengeTemplateSpec) {
			s.Ports = port("nc", 1337)
			s.Security = &ctfv1alpha1.Security{Profile: ctfv1alpha1.ProfileBaseline, RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](1000),
				AllowPrivilegeEscalation: ptr.To(true)}
			s.Flag = &ctfv1alpha1.FlagSpec{
				Dynamic: &ctfv1alpha1.DynamicFlag{SecretKey: ctfv1alpha1.SecretKeyRef{Namespace: harness.OrganiserNamespace, Name: "flag-key", Key: "key"},
					Format: "CTF{%s}", Length: 24},
				FlagDelivery: ctfv1alpha1.FlagDelivery{Path: "/root/flag.txt", FileMode: ptr.To[int32](0o400)},
			}
		},
		check: func(g Gomega, pod *corev1.PodSpec) {
			g.Expect(pod.SecurityContext.RunAsUser).To(Equal(ptr.To[int64](1000)))
			g.Expect(pod.SecurityContext.RunAsNonRoot).To(Equal(ptr.To(true)))
			g.Expect(pod.SecurityContext.FSGroup).To(BeNil(), "an fsGroup would make the flag the container's group's")
			var flag *corev1.Volume
			for i := range pod.Volumes {
				if pod.Volumes[i].Secret != nil {
					flag = &pod.Volumes[i]
				}
			}
			g.Expect(flag).NotTo(BeNil())
			g.Expect(flag.Secret.DefaultMode).To(Equal(ptr.To[int32](0o400)), "root's alone: only the setuid helper reads it")
			g.Expect(pod.Containers[0].VolumeMounts).To(ContainElement(HaveField("MountPath", "/root/flag.txt")))
			g.Expect(pod.Containers[0].SecurityContext.AllowPrivilegeEscalation).To(Equal(ptr.To(true)), "setuid works")
			g.Expect(pod.Containers[0].SecurityContext.Privileged).To(Equal(ptr.To(false)))
		},
	},
	{
		name: "sshd on port 22",
		template: func(s *ctfv1alpha1.ChallengeTemplateSpec) {
			s.Ports = port("ssh", 22)
			s.Command = []ctfv1alpha1.Argument{"/usr/sbin/sshd", "-D", "-e"}
			s.Security = &ctfv1alpha1.Security{Profile: ctfv1alpha1.ProfileBaseline, RunAsUser: ptr.To[int64](0),
				AllowPrivilegeEscalation: ptr.To(true),
				Capabilities:             caps("NET_BIND_SERVICE", "SETUID", "SETGID", "SYS_CHROOT", "CHOWN", "AUDIT_WRITE", "KILL")}
			s.Values = harness.Values(`{"readOnlyRootFilesystem": false}`)
		},
		check: func(g Gomega, pod *corev1.PodSpec) {
			ctr := pod.Containers[0]
			g.Expect(ctr.Command).To(Equal([]string{"/usr/sbin/sshd", "-D", "-e"}))
			g.Expect(pod.SecurityContext.RunAsUser).To(Equal(ptr.To[int64](0)))
			g.Expect(pod.SecurityContext.RunAsGroup).To(BeNil(), "the image's own group")
			g.Expect(ctr.SecurityContext.Capabilities.Add).To(ContainElements(corev1.Capability("SYS_CHROOT"), corev1.Capability("SETUID"), corev1.Capability("SETGID")))
		},
	},
	{
		name: "a kCTF nsjail pwn service in a sandbox runtime",
		template: func(s *ctfv1alpha1.ChallengeTemplateSpec) {
			s.Ports = port("nc", 1337)
			s.Security = &ctfv1alpha1.Security{Profile: ctfv1alpha1.ProfilePrivileged, RunAsUser: ptr.To[int64](0), RuntimeClassName: "gvisor",
				Capabilities:    caps("SYS_ADMIN"),
				AppArmorProfile: &ctfv1alpha1.Confinement{Type: ctfv1alpha1.ConfinementUnconfined},
				SeccompProfile:  &ctfv1alpha1.Confinement{Type: ctfv1alpha1.ConfinementUnconfined}}
		},
		check: func(g Gomega, pod *corev1.PodSpec) {
			ctr := pod.Containers[0]
			g.Expect(pod.RuntimeClassName).To(Equal(ptr.To("gvisor")))
			g.Expect(pod.SecurityContext.AppArmorProfile).To(Equal(&corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}))
			g.Expect(pod.SecurityContext.SeccompProfile).To(Equal(&corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}))
			g.Expect(ctr.SecurityContext.Capabilities.Add).To(Equal([]corev1.Capability{"SYS_ADMIN"}))
			g.Expect(ctr.SecurityContext.Privileged).To(Equal(ptr.To(false)), "nsjail needs SYS_ADMIN, not privileged")
			g.Expect(ctr.SecurityContext.AllowPrivilegeEscalation).To(BeNil())
			g.Expect(pod.HostPID || pod.HostNetwork || pod.HostIPC).To(BeFalse(), "no host namespaces, ever")
			g.Expect(pod.AutomountServiceAccountToken).To(Equal(ptr.To(false)))
		},
	},
	{
		name: "a pwn.red/jail service, privileged in a sandbox runtime",
		template: func(s *ctfv1alpha1.ChallengeTemplateSpec) {
			s.Ports = port("nc", 5000)
			s.Security = &ctfv1alpha1.Security{Profile: ctfv1alpha1.ProfilePrivileged, Privileged: ptr.To(true), RuntimeClassName: "kata"}
		},
		check: func(g Gomega, pod *corev1.PodSpec) {
			g.Expect(pod.RuntimeClassName).To(Equal(ptr.To("kata")))
			g.Expect(pod.Containers[0].SecurityContext.Privileged).To(Equal(ptr.To(true)))
			for _, v := range pod.Volumes {
				g.Expect(v.HostPath).To(BeNil())
			}
		},
	},
}

// TestChallengeShapesRun: each shape reaches Running in a namespace that
// enforces its profile, with its pod exactly as the template says.
func TestChallengeShapesRun(t *testing.T) {
	for i, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			ctx := context.Background()
			name := fmt.Sprintf("shape-%d", i)
			tmpl := h.Template(t, name, sh.template)
			profile := security.ProfileOf(tmpl.Spec.Security)
			ns := h.Namespace(t, map[string]string{"pod-security.kubernetes.io/enforce": string(profile)})
			ch := builders.FromTemplate(ns, name, "team-a", name)
			g.Expect(h.Client.Create(ctx, ch)).To(Succeed())
			h.EventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)

			dep := &appsv1.Deployment{}
			g.Expect(h.Client.Get(ctx, client.ObjectKeyFromObject(ch), dep)).To(Succeed())
			sh.check(g, &dep.Spec.Template.Spec)
			if len(tmpl.Spec.Files) > 0 {
				cm := &corev1.ConfigMap{}
				g.Expect(h.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-files"}, cm)).To(Succeed())
				g.Expect(cm.Data).To(HaveKeyWithValue("f0", tmpl.Spec.Files[0].Content), "carried byte for byte")
			}
			var pods corev1.PodList
			g.Expect(h.Client.List(ctx, &pods, client.InNamespace(ns))).To(Succeed())
			g.Expect(pods.Items).To(HaveLen(1), "the API server admitted the pod under %s", profile)
			if len(dep.Spec.Template.Spec.NodeSelector) > 0 {
				g.Eventually(func(g Gomega) {
					pod := &corev1.Pod{}
					g.Expect(h.Client.Get(ctx, client.ObjectKeyFromObject(&pods.Items[0]), pod)).To(Succeed())
					g.Expect(pod.Spec.NodeName).To(Equal(kvmNodeNme), "scheduled on the node set aside")
				}, harness.Timeout, harness.Interval).Should(Succeed())
			}
		})
	}
}

// TestPrivilegedNeedsASandbox: what the admin's flags do not allow ends in
// Error/PolicyViolation naming the flag, with nothing applied.
func TestPrivilegedNeedsASandbox(t *testing.T) {
	for i, tc := range []struct {
		name string
		sec  *ctfv1alpha1.Security
		want string
	}{
		{"privileged without a runtime class", &ctfv1alpha1.Security{Profile: ctfv1alpha1.ProfilePrivileged, Privileged: ptr.To(true)},
			"must name a runtime class of --sandbox-runtime-classes (gvisor, kata)"},
		{"a capability outside the allowlist", &ctfv1alpha1.Security{Profile: ctfv1alpha1.ProfilePrivileged, RuntimeClassName: "gvisor",
			Capabilities: caps("SYS_MODULE")}, "capability SYS_MODULE is not in --allowed-capabilities (SYS_ADMIN)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			name := fmt.Sprintf("refused-%d", i)
			h.Template(t, name, func(s *ctfv1alpha1.ChallengeTemplateSpec) { s.Security = tc.sec })
			ns := h.Namespace(t, map[string]string{"pod-security.kubernetes.io/enforce": "privileged"})
			ch := builders.FromTemplate(ns, name, "team-b", name)
			g.Expect(h.Client.Create(ctx, ch)).To(Succeed())
			got := h.EventuallyPhase(t, ch, ctfv1alpha1.PhaseError)
			g.Expect(got.Status.Reason).To(Equal("PolicyViolation"))
			g.Expect(got.Status.Message).To(ContainSubstring(tc.want))
			var deps appsv1.DeploymentList
			g.Expect(h.Client.List(ctx, &deps, client.InNamespace(ns))).To(Succeed())
			g.Expect(deps.Items).To(BeEmpty(), "nothing applied")
		})
	}
}

// botPassword is an organiser's secret: it must reach the instance's
// container and nothing a team or a platform reads.
const botPassword = "hunter2-never-shown"

// TestSecretEnvIsCopiedNeverShown: an admin bot's password comes from the
// organiser's Secret into the instance's own Secret and its environment, and
// appears in no status; one the chart would refuse ends in an Error that
// names the Secret and key only, and one from a namespace flags may not come
// from is refused.
func TestSecretEnvIsCopiedNeverShown(t *testing.T) {
	ctx := context.Background()
	for i, tc := range []struct {
		name   string
		ref    ctfv1alpha1.SecretKeyRef
		reason string // "" runs
		want   string
	}{
		{"copied", ctfv1alpha1.SecretKeyRef{Namespace: harness.OrganiserNamespace, Name: "bot", Key: "password"}, "", ""},
		{"a trailing newline", ctfv1alpha1.SecretKeyRef{Namespace: harness.OrganiserNamespace, Name: "bot", Key: "echoed"},
			"SecretEnvInvalid", `secretEnv ADMIN_PASSWORD: Secret ctf-organiser/bot key "echoed" has a line break`},
		{"another namespace", ctfv1alpha1.SecretKeyRef{Namespace: "kube-system", Name: "bootstrap-token-abcdef", Key: "token-secret"},
			"PolicyViolation", `reads secretEnv ADMIN_PASSWORD from namespace "kube-system"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			name := fmt.Sprintf("secret-env-%d", i)
			h.Template(t, name, func(s *ctfv1alpha1.ChallengeTemplateSpec) {
				s.SecretEnv = []ctfv1alpha1.SecretEnvVar{{Name: "ADMIN_PASSWORD", Secret: tc.ref}}
			})
			ns := h.Namespace(t, nil)
			ch := builders.FromTemplate(ns, name, "team-c", name)
			g.Expect(h.Client.Create(ctx, ch)).To(Succeed())
			if tc.reason != "" {
				got := h.EventuallyPhase(t, ch, ctfv1alpha1.PhaseError)
				g.Expect(got.Status.Reason).To(Equal(tc.reason))
				g.Expect(got.Status.Message).To(ContainSubstring(tc.want))
				g.Expect(got.Status.Message).NotTo(ContainSubstring("never-shown"))
				return
			}
			got := h.EventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
			status, err := client.MergeFrom(&ctfv1alpha1.Challenge{}).Data(got)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(string(status)).NotTo(ContainSubstring(botPassword), "not in the Challenge")

			dep := &appsv1.Deployment{}
			g.Expect(h.Client.Get(ctx, client.ObjectKeyFromObject(ch), dep)).To(Succeed())
			g.Expect(dep.Spec.Template.Spec.Containers[0].Env).To(ContainElement(corev1.EnvVar{Name: "ADMIN_PASSWORD", ValueFrom: &corev1.EnvVarSource{
				SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name + "-flag"}, Key: "env.ADMIN_PASSWORD"}}}))
			secret := &corev1.Secret{}
			g.Expect(h.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-flag"}, secret)).To(Succeed())
			g.Expect(secret.Data).To(Equal(map[string][]byte{"env.ADMIN_PASSWORD": []byte(botPassword)}), "the instance's own copy, and nothing else")
		})
	}
	logs, err := os.ReadFile(h.LogFile)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	NewWithT(t).Expect(string(logs)).NotTo(Or(ContainSubstring(botPassword), ContainSubstring("never-shown-either")), "the operator's log")
}
