package security

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

func caps(names ...ctfv1alpha1.Capability) *ctfv1alpha1.Capabilities {
	return &ctfv1alpha1.Capabilities{Add: names}
}

// TestBoundsNameTheFlagThatWouldAllowIt: what a template asks beyond the
// admin's flags is refused with the flag named, so an organiser knows whom
// to ask; within them it passes.
func TestBoundsNameTheFlagThatWouldAllowIt(t *testing.T) {
	sandboxed := Bounds{MaxProfile: ctfv1alpha1.ProfilePrivileged, SandboxRuntimeClasses: []string{"gvisor"},
		AllowedCapabilities: []string{"SYS_ADMIN"}, LocalhostProfiles: []string{"ctf/jail.json"}}
	privileged := func(s *ctfv1alpha1.Security) *ctfv1alpha1.Security {
		s.Profile = ctfv1alpha1.ProfilePrivileged
		return s
	}
	tests := []struct {
		name   string
		bounds Bounds
		sec    *ctfv1alpha1.Security
		want   string // "" passes
	}{
		{"no section is restricted", Bounds{}, nil, ""},
		{"baseline by default", Bounds{}, &ctfv1alpha1.Security{Profile: ctfv1alpha1.ProfileBaseline}, ""},
		{"privileged above the default ceiling", Bounds{}, privileged(&ctfv1alpha1.Security{}), "--max-pod-security=baseline"},
		{"baseline above a restricted ceiling", Bounds{MaxProfile: ctfv1alpha1.ProfileRestricted},
			&ctfv1alpha1.Security{Profile: ctfv1alpha1.ProfileBaseline}, "--max-pod-security=restricted"},
		{"baseline capabilities", Bounds{}, &ctfv1alpha1.Security{Profile: ctfv1alpha1.ProfileBaseline, Capabilities: caps("SETUID", "SYS_CHROOT")}, ""},
		{"SYS_ADMIN needs privileged", Bounds{}, &ctfv1alpha1.Security{Profile: ctfv1alpha1.ProfileBaseline, Capabilities: caps("SYS_ADMIN")}, "needs profile privileged"},
		{"a capability outside the allowlist", sandboxed, privileged(&ctfv1alpha1.Security{RuntimeClassName: "gvisor", Capabilities: caps("SYS_MODULE")}), "--allowed-capabilities (SYS_ADMIN)"},
		{"an allowed capability in a sandbox", sandboxed, privileged(&ctfv1alpha1.Security{RuntimeClassName: "gvisor", Capabilities: caps("SYS_ADMIN")}), ""},
		{"privileged without a sandbox", sandboxed, privileged(&ctfv1alpha1.Security{}), "--sandbox-runtime-classes (gvisor)"},
		{"privileged without a sandbox, allowed", Bounds{MaxProfile: ctfv1alpha1.ProfilePrivileged, AllowUnsandboxedPrivileged: true}, privileged(&ctfv1alpha1.Security{}), ""},
		{"a runtime class outside the list", sandboxed, &ctfv1alpha1.Security{RuntimeClassName: "runc"}, `runtime class "runc" is not in --sandbox-runtime-classes`},
		{"a restricted template in a sandbox", sandboxed, &ctfv1alpha1.Security{RuntimeClassName: "gvisor"}, ""},
		{"a Localhost profile outside the list", sandboxed, &ctfv1alpha1.Security{
			AppArmorProfile: &ctfv1alpha1.Confinement{Type: ctfv1alpha1.ConfinementLocalhost, LocalhostProfile: "other"}}, "--allowed-localhost-profiles"},
		{"a node label outside the list", Bounds{NodeSelectors: []string{"pool=pwn"}}, &ctfv1alpha1.Security{NodeSelector: map[string]ctfv1alpha1.LabelValue{"pool": "web"}},
			"node selector pool=web is not in --allowed-node-selectors (pool=pwn)"},
		{"a listed node label and taint", Bounds{NodeSelectors: []string{"pool=pwn"}, Tolerations: []string{"pool"}},
			&ctfv1alpha1.Security{NodeSelector: map[string]ctfv1alpha1.LabelValue{"pool": "pwn"}, Tolerations: []ctfv1alpha1.Toleration{{Key: "pool"}}}, ""},
		{"a taint outside the list", Bounds{}, &ctfv1alpha1.Security{Tolerations: []ctfv1alpha1.Toleration{{Key: "node-role.kubernetes.io/control-plane"}}},
			"toleration of node-role.kubernetes.io/control-plane is not in --allowed-tolerations (none)"},
		{"an extended resource outside the list", Bounds{ExtendedResources: []string{"devices.kubevirt.io/kvm"}},
			&ctfv1alpha1.Security{ExtendedResources: map[string]int32{"nvidia.com/gpu": 1}}, "extended resource nvidia.com/gpu is not in --allowed-extended-resources"},
		{"a listed Localhost profile", sandboxed, &ctfv1alpha1.Security{
			SeccompProfile: &ctfv1alpha1.Confinement{Type: ctfv1alpha1.ConfinementLocalhost, LocalhostProfile: "ctf/jail.json"}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := tt.bounds.Check(tt.sec)
			if tt.want == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tt.want)))
		})
	}
}

// TestContexts: the restricted defaults are today's pod exactly; baseline
// runs as the image says unless told; escalation stays off unless granted or
// forced on by privileged or SYS_ADMIN (the API server refuses it off then).
func TestContexts(t *testing.T) {
	g := NewWithT(t)
	def := For(nil, false)
	g.Expect(def.Level()).To(BeEquivalentTo("restricted"))
	g.Expect(def.Pod).To(Equal(&corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000),
		RunAsGroup: ptr.To[int64](1000), FSGroup: ptr.To[int64](1000), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}))
	g.Expect(def.Container).To(Equal(&corev1.SecurityContext{Privileged: ptr.To(false), AllowPrivilegeEscalation: ptr.To(false),
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}))
	g.Expect(def.RuntimeClassName).To(BeNil())

	image := For(&ctfv1alpha1.Security{Profile: ctfv1alpha1.ProfileBaseline}, false)
	g.Expect(image.Pod.RunAsUser).To(BeNil(), "the image's own user")
	g.Expect(image.Pod.RunAsNonRoot).To(BeNil())

	root := For(&ctfv1alpha1.Security{Profile: ctfv1alpha1.ProfileBaseline, RunAsUser: ptr.To[int64](0), RunAsGroup: ptr.To[int64](0)}, false)
	g.Expect(root.Pod.RunAsNonRoot).To(BeNil())
	g.Expect(root.Pod.FSGroup).To(BeNil(), "no fsGroup 0")

	jail := For(&ctfv1alpha1.Security{Profile: ctfv1alpha1.ProfilePrivileged, Capabilities: caps("SYS_ADMIN"), RuntimeClassName: "gvisor",
		AppArmorProfile: &ctfv1alpha1.Confinement{Type: ctfv1alpha1.ConfinementUnconfined}}, false)
	g.Expect(jail.Container.AllowPrivilegeEscalation).To(BeNil())
	g.Expect(jail.Container.Capabilities.Add).To(Equal([]corev1.Capability{"SYS_ADMIN"}))
	g.Expect(jail.Pod.AppArmorProfile).To(Equal(&corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}))
	g.Expect(*jail.RuntimeClassName).To(Equal("gvisor"))

	readflag := &ctfv1alpha1.Security{Profile: ctfv1alpha1.ProfileBaseline, RunAsGroup: ptr.To[int64](1000), AllowPrivilegeEscalation: ptr.To(true)}
	setuid := For(readflag, false)
	g.Expect(*setuid.Container.AllowPrivilegeEscalation).To(BeTrue())
	g.Expect(setuid.Pod.FSGroup).To(Equal(ptr.To[int64](1000)))
	private := For(readflag, true)
	g.Expect(private.Pod.FSGroup).To(BeNil(), "the kubelet would give a root-only flag to the container's group")
}

// TestPrivateFlag: only a file mode without the group's read bit keeps the
// flag root's alone.
func TestPrivateFlag(t *testing.T) {
	g := NewWithT(t)
	file := func(mode *int32) *ctfv1alpha1.FlagSpec {
		return &ctfv1alpha1.FlagSpec{FlagDelivery: ctfv1alpha1.FlagDelivery{Mount: ctfv1alpha1.FlagMountFile, FileMode: mode}}
	}
	g.Expect(PrivateFlag(nil)).To(BeFalse())
	g.Expect(PrivateFlag(file(nil))).To(BeFalse(), "0444 by default")
	g.Expect(PrivateFlag(file(ptr.To[int32](0o440)))).To(BeFalse())
	g.Expect(PrivateFlag(file(ptr.To[int32](0o400)))).To(BeTrue())
	g.Expect(PrivateFlag(&ctfv1alpha1.FlagSpec{FlagDelivery: ctfv1alpha1.FlagDelivery{Mount: ctfv1alpha1.FlagMountEnv, FileMode: ptr.To[int32](0o400)}})).To(BeFalse())
}

func TestParseProfile(t *testing.T) {
	g := NewWithT(t)
	p, err := ParseProfile("privileged")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p).To(Equal(ctfv1alpha1.ProfilePrivileged))
	_, err = ParseProfile("root")
	g.Expect(err).To(MatchError(ContainSubstring("restricted, baseline or privileged")))
}
