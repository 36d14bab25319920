package policy

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// TestTemplateMayOnlyLowerTheDiskCeiling: a template's
// policy.maxEphemeralStorage lowers the operator's ceiling, never raises it;
// without the template's word the operator's ceiling holds.
func TestTemplateMayOnlyLowerTheDiskCeiling(t *testing.T) {
	tests := []struct {
		name           string
		base, template string // empty: unset
		want           string
	}{
		{"the operator's ceiling", "1Gi", "", "1Gi"},
		{"lowered by the template", "1Gi", "256Mi", "256Mi"},
		{"not raised by the template", "1Gi", "10Gi", "1Gi"},
		{"the template's without an operator ceiling", "", "256Mi", "256Mi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var base Limits
			if tt.base != "" {
				base.EphemeralStorage = resource.MustParse(tt.base)
			}
			tmpl := &ctfv1alpha1.ChallengeTemplate{ObjectMeta: metav1.ObjectMeta{Name: "t"}, Spec: ctfv1alpha1.ChallengeTemplateSpec{Policy: &ctfv1alpha1.InstancePolicy{}}}
			if tt.template != "" {
				q := ctfv1alpha1.Quantity(tt.template)
				tmpl.Spec.Policy.MaxEphemeralStorage = &q
			}
			got, err := LimitsFor(base, tmpl)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.EphemeralStorage.Cmp(resource.MustParse(tt.want))).To(BeZero(), "got %s", got.EphemeralStorage.String())
		})
	}
}
