package operator_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/test/builders"
	"github.com/challenge-operator/challenge-operator/test/harness"
)

// TestSharingIsFixedAtCreation: a template switched to Shared made a team's
// private instance the one every team was shown, opened its network to
// every instance and stopped its lifetime; the API server now refuses a
// change of spec.sharing either way, naming the field, while a template's
// other fields still change; a template of the other kind is a new one.
func TestSharingIsFixedAtCreation(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name, template string
		from, to       ctfv1alpha1.Sharing
	}{
		{"to Shared", "sharing-per-team", ctfv1alpha1.SharingPerTeam, ctfv1alpha1.SharingShared},
		{"to PerTeam", "sharing-shared", ctfv1alpha1.SharingShared, ctfv1alpha1.SharingPerTeam},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			tmpl := h.Template(t, tc.template, func(s *ctfv1alpha1.ChallengeTemplateSpec) { s.Sharing = tc.from })
			team := builders.FromTemplate(namespace(t), tc.template+"-team", "team-sharing", tmpl.Name)
			g.Expect(k8s.Create(ctx, team)).To(Succeed())
			eventuallyPhase(t, team, ctfv1alpha1.PhaseRunning)

			err := harness.EditTemplate(ctx, k8s, tmpl.DeepCopy(), func(s *ctfv1alpha1.ChallengeTemplateSpec) { s.Sharing = tc.to })
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "refused at admission: %v", err)
			g.Expect(err.Error()).To(ContainSubstring("spec.sharing"))
			g.Expect(err.Error()).To(ContainSubstring("create a new template"))

			g.Expect(harness.EditTemplate(ctx, k8s, tmpl.DeepCopy(), func(s *ctfv1alpha1.ChallengeTemplateSpec) {
				s.Image = "registry.example/ctf/sharing:2"
			})).To(Succeed(), "its other fields still change")
			got := &ctfv1alpha1.ChallengeTemplate{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(tmpl), got)).To(Succeed())
			g.Expect(got.Spec.Sharing).To(Equal(tc.from))
		})
	}
}
