package values

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/identity"
	"github.com/challenge-operator/challenge-operator/internal/policy"
)

// TestExpectation: what the gate lets a release contain follows the same
// inputs as its values: a claimed pooled instance's objects name the team
// and its pods the participant they started with; the flag Secret only
// with a flag or secretEnv; a namespace of its own with its exact bounds;
// the shared Services read for the values, as the only foreign peers; the
// template's policy over the operator's ceilings.
func TestExpectation(t *testing.T) {
	pooled := &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Name: "web-pool-1", Namespace: "ctf-pool"},
		Spec: ctfv1alpha1.ChallengeSpec{Participant: "web-pool-1", Template: "web"}}
	web := &ctfv1alpha1.ChallengeTemplate{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: ctfv1alpha1.ChallengeTemplateSpec{
		Image:      "registry.example/web:1",
		Components: []ctfv1alpha1.Component{{Name: "db", Image: "registry.example/db:1"}},
		Policy:     &ctfv1alpha1.InstancePolicy{MaxCPU: quantity("2")},
	}}
	// The admin lets templates raise the CPU ceiling to 2.
	base := policy.Limits{CPU: resource.MustParse("1"), TemplateCPU: resource.MustParse("2"), IngressDomain: "ctf.example"}
	shared := []SharedService{{Namespace: "ctf-shared", Selector: map[string]string{"app": "bot"}}}

	t.Run("a claimed pooled instance", func(t *testing.T) {
		g := NewWithT(t)
		in, err := Expectation(pooled, web, Settings{}, base, "team-7", shared)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(in.Labels).To(HaveKeyWithValue(ctfv1alpha1.ParticipantLabel, "team-7"))
		g.Expect(in.PodParticipant).To(Equal("web-pool-1"), "its pods keep the label they started with")
		g.Expect(in.Workloads).To(HaveLen(2), "the primary workload, then its component")
		g.Expect(in.Primary().Name).To(BeEmpty())
		g.Expect(in.Primary().Labels).To(HaveKeyWithValue(ctfv1alpha1.ParticipantLabel, "team-7"))
		g.Expect(in.Workloads[1].Name).To(Equal("db"))
		g.Expect(in.Workloads[1].Labels).To(HaveKeyWithValue(ctfv1alpha1.ParticipantLabel, "team-7"))
		g.Expect(in.Workloads[1].Selector).To(Equal(identity.ComponentSelector(pooled, "db")))
		g.Expect(in.InstancePods).To(Equal(identity.InstancePods(pooled)), "components reach each other")
		g.Expect(in.SharedServices).To(Equal([]policy.SharedPeer{{Namespace: "ctf-shared", Selector: map[string]string{"app": "bot"}}}))
		g.Expect(in.FlagSecret).To(BeEmpty(), "no flag, no secretEnv: no Secret")
		g.Expect(in.Limits.CPU.String()).To(Equal("2"), "the template's policy over the operator's ceiling")
		g.Expect(in.Primary().Host).To(Equal(identity.Host(pooled, "ctf.example")))
		g.Expect(in.Primary().Exposed).To(BeTrue(), "the primary workload is always exposed")
		g.Expect(in.Namespace).To(Equal("ctf-pool"))
		g.Expect(in.Quota).To(BeNil())
	})
	t.Run("unclaimed, with a flag, a namespace of its own", func(t *testing.T) {
		g := NewWithT(t)
		flagged := web.DeepCopy()
		flagged.Spec.Flag = &ctfv1alpha1.FlagSpec{Static: &ctfv1alpha1.SecretKeyRef{Namespace: "ctf", Name: "flags", Key: "web"}}
		in, err := Expectation(pooled, flagged, Settings{NamespacePerInstance: true}, base, "", nil)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(in.Labels).To(HaveKeyWithValue(ctfv1alpha1.ParticipantLabel, "web-pool-1"))
		g.Expect(in.PodParticipant).To(BeEmpty())
		g.Expect(in.FlagSecret).To(Equal(identity.FlagSecret(pooled.Name)))
		g.Expect(in.Namespace).To(Equal(identity.Namespace(pooled)))
		quota, limitRange, err := NamespaceBounds(1)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(in.Quota).To(Equal(quota))
		g.Expect(in.LimitRange).To(Equal(limitRange))
		g.Expect(in.Quota).To(HaveKey(corev1.ResourceLimitsCPU))
	})
	t.Run("without a template", func(t *testing.T) {
		g := NewWithT(t)
		c := challenge(nil)
		in, err := Expectation(c, nil, Settings{}, base, "team-7", shared)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(in.Workloads).To(HaveLen(1), "the primary workload alone")
		g.Expect(in.Primary().Selector).To(Equal(identity.Selector(c)))
		g.Expect(in.Primary().Labels).To(Equal(in.Labels))
		g.Expect(in.SharedServices).To(BeEmpty(), "only a template lets an instance reach a shared Service")
		g.Expect(in.PodParticipant).To(BeEmpty(), "only a template's pooled instance is claimed")
		g.Expect(in.Limits.CPU.String()).To(Equal("1"))
		g.Expect(in.OwnerAnnotations).To(HaveLen(2))
	})
}
