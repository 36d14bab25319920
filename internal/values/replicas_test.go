package values

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
	"github.com/challenge-operator/challenge-operator/internal/policy"
)

// TestComponentReplicas: a component runs its replicas (1 unset), within
// the template's policy.maxReplicas, else the operator's ceiling, 1 when
// unset; above it the instance is refused with a PolicyViolation that names
// the component, before anything renders.
func TestComponentReplicas(t *testing.T) {
	tmplWith := func(replicas, maxReplicas *int32) *ctfv1alpha1.ChallengeTemplate {
		tmpl := &ctfv1alpha1.ChallengeTemplate{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: ctfv1alpha1.ChallengeTemplateSpec{
			Image:      "ghcr.io/x/web:1",
			Components: []ctfv1alpha1.Component{{Name: "cache", Image: "redis:7"}, {Name: "worker", Image: "w:1", Replicas: replicas}},
		}}
		if maxReplicas != nil {
			tmpl.Spec.Policy = &ctfv1alpha1.InstancePolicy{MaxReplicas: maxReplicas}
		}
		return tmpl
	}
	c := challenge(func(s *ctfv1alpha1.ChallengeSpec) {
		*s = ctfv1alpha1.ChallengeSpec{Participant: "team-1", Template: "web"}
	})
	for _, tt := range []struct {
		name        string
		replicas    *int32
		maxReplicas *int32
		operator    int32 // the operator's ceiling (policy.Limits.MaxReplicas)
		want        int32 // 0: refused
	}{
		{name: "unset", want: 1},
		{name: "unset, no ceiling at all", operator: 0, want: 1},
		{name: "one", replicas: ptr.To[int32](1), want: 1},
		{name: "two within the template's policy", replicas: ptr.To[int32](2), maxReplicas: ptr.To[int32](2), operator: 1, want: 2},
		{name: "ten within the template's policy", replicas: ptr.To[int32](10), maxReplicas: ptr.To[int32](10), want: 10},
		{name: "two within the operator's ceiling", replicas: ptr.To[int32](2), operator: 3, want: 2},
		{name: "two above the default of one", replicas: ptr.To[int32](2), operator: 1},
		{name: "two with no ceiling, which is one", replicas: ptr.To[int32](2)},
		{name: "three above the template's policy", replicas: ptr.To[int32](3), maxReplicas: ptr.To[int32](2), operator: 10},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			tmpl := tmplWith(tt.replicas, tt.maxReplicas)
			vals, err := Compose(c, tmpl, Settings{})
			g.Expect(err).NotTo(HaveOccurred(), "the values carry the replicas; the ceiling is the expectation's")
			g.Expect(vals["components"].([]any)[0]).To(HaveKeyWithValue("replicas", BeEquivalentTo(1)))
			_, err = Expectation(c, tmpl, Settings{}, policy.Limits{MaxReplicas: tt.operator}, "", nil)
			if tt.want == 0 {
				g.Expect(lifecycle.IsReason(err, lifecycle.ReasonPolicyViolation)).To(BeTrue(), "%v", err)
				g.Expect(err).To(MatchError(ContainSubstring("component worker asks for %d replicas", *tt.replicas)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(vals["components"].([]any)[1]).To(HaveKeyWithValue("replicas", BeEquivalentTo(tt.want)))
		})
	}
}
