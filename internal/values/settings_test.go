package values

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
	"github.com/challenge-operator/challenge-operator/internal/security"
)

func TestEffectiveDNSNamespace(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Settings{}.EffectiveDNSNamespace()).To(Equal("kube-system"))
	g.Expect(Settings{DNSNamespace: "dns"}.EffectiveDNSNamespace()).To(Equal("dns"))
}

// TestEffectiveInternalCIDRsSkipsWhatDoesNotParse: a range the flag's parser
// would have refused is left out, never rendered.
func TestEffectiveInternalCIDRsSkipsWhatDoesNotParse(t *testing.T) {
	g := NewWithT(t)
	got := Settings{InternalCIDRs: []string{"not-a-cidr", "10.244.0.0/16", "10.244.0.0/33"}}.EffectiveInternalCIDRs()
	g.Expect(got).To(Equal(append(defaultCIDRs(), "10.244.0.0/16")))
}

func TestNamespaceQuota(t *testing.T) {
	tests := []struct {
		components int
		want       map[string]string
	}{
		{1, NamespaceQuota},
		{3, map[string]string{"pods": "12", "services": "6", "requests.cpu": "3", "requests.memory": "3Gi", "limits.cpu": "6", "limits.memory": "6Gi"}},
	}
	for _, tt := range tests {
		NewWithT(t).Expect(namespaceQuota(tt.components)).To(Equal(tt.want), "%d components", tt.components)
	}
}

func TestNamespaceBounds(t *testing.T) {
	for _, tt := range []struct {
		components         int
		pods, limitsMemory string
	}{{0, "4", "2Gi"}, {2, "12", "6Gi"}} {
		g := NewWithT(t)
		quota, limits, err := NamespaceBounds(tt.components)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(quota).To(HaveLen(len(NamespaceQuota)))
		g.Expect(quota.Pods().String()).To(Equal(tt.pods), "a quota for the primary and each of %d components", tt.components)
		g.Expect(quota[corev1.ResourceLimitsMemory]).To(Equal(resource.MustParse(tt.limitsMemory)))
		g.Expect(limits).To(Equal([]corev1.LimitRangeItem{{
			Type: corev1.LimitTypeContainer,
			Default: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse(DefaultCPULimit), corev1.ResourceMemory: resource.MustParse(DefaultMemoryLimit),
			},
			DefaultRequest: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse(DefaultCPURequest), corev1.ResourceMemory: resource.MustParse(DefaultMemoryRequest),
			},
		}}), "the resource floor, whatever the components")
	}
	_, err := resourceList(map[string]string{"cpu": "lots"})
	NewWithT(t).Expect(err).To(MatchError(ContainSubstring("cpu: ")))
}

func TestWidestProfile(t *testing.T) {
	component := func(p ctfv1alpha1.SecurityProfile) ctfv1alpha1.Component {
		return ctfv1alpha1.Component{Name: "c", Security: &ctfv1alpha1.Security{Profile: p}}
	}
	tests := []struct {
		name       string
		primary    ctfv1alpha1.SecurityProfile
		components []ctfv1alpha1.Component
		want       ctfv1alpha1.SecurityProfile
	}{
		{"the primary alone", ctfv1alpha1.ProfileBaseline, nil, ctfv1alpha1.ProfileBaseline},
		{"a component without security is restricted", ctfv1alpha1.ProfileRestricted, []ctfv1alpha1.Component{{Name: "c"}}, ctfv1alpha1.ProfileRestricted},
		{"a component wider than the primary", ctfv1alpha1.ProfileRestricted,
			[]ctfv1alpha1.Component{component(ctfv1alpha1.ProfileBaseline), component(ctfv1alpha1.ProfilePrivileged)}, ctfv1alpha1.ProfilePrivileged},
		{"the primary wider than its components", ctfv1alpha1.ProfilePrivileged,
			[]ctfv1alpha1.Component{component(ctfv1alpha1.ProfileBaseline)}, ctfv1alpha1.ProfilePrivileged},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			workloads := []workload{{security: security.Context{Profile: tt.primary}}}
			for i := range tt.components {
				workloads = append(workloads, workload{component: &tt.components[i], security: security.ForComponent(&tt.components[i], nil)})
			}
			NewWithT(t).Expect(widestProfile(workloads)).To(Equal(tt.want))
		})
	}
}

func TestCheckFlagSecret(t *testing.T) {
	ref := func(ns string) ctfv1alpha1.SecretKeyRef {
		return ctfv1alpha1.SecretKeyRef{Namespace: ns, Name: "flag", Key: "k"}
	}
	tests := []struct {
		name    string
		flag    ctfv1alpha1.FlagSpec
		refused bool
	}{
		{"static, allowed", ctfv1alpha1.FlagSpec{Static: ptr.To(ref("ctf-organiser"))}, false},
		{"static, elsewhere", ctfv1alpha1.FlagSpec{Static: ptr.To(ref("kube-system"))}, true},
		{"dynamic, allowed", ctfv1alpha1.FlagSpec{Dynamic: &ctfv1alpha1.DynamicFlag{SecretKey: ref("ctf-organiser")}}, false},
		{"dynamic, elsewhere", ctfv1alpha1.FlagSpec{Dynamic: &ctfv1alpha1.DynamicFlag{SecretKey: ref("kube-system")}}, true},
		// Admission refuses both at once; the dynamic key is the one read.
		{"the dynamic key is judged over a static one", ctfv1alpha1.FlagSpec{
			Static: ptr.To(ref("ctf-organiser")), Dynamic: &ctfv1alpha1.DynamicFlag{SecretKey: ref("kube-system")}}, true},
		{"no Secret named", ctfv1alpha1.FlagSpec{}, false},
	}
	s := Settings{FlagSecretNamespaces: []string{"ctf-organiser"}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := s.checkFlagSecret(template(func(s *ctfv1alpha1.ChallengeTemplateSpec) { s.Flag = &tt.flag }))
			if !tt.refused {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(lifecycle.IsReason(err, lifecycle.ReasonPolicyViolation)).To(BeTrue(), "got %v", err)
			g.Expect(err.Error()).To(ContainSubstring(`ChallengeTemplate web-intro reads its flag from namespace "kube-system"; allowed: ctf-organiser`))
		})
	}
}
