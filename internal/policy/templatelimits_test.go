package policy

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/test/builders"
)

// withPolicy gives a template an empty policy, for a test to fill in.
func withPolicy(s *ctfv1alpha1.ChallengeTemplateSpec) { s.Policy = &ctfv1alpha1.InstancePolicy{} }

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
			tmpl := builders.BareTemplate("t", withPolicy)
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

// TestTemplateStaysWithinTheAdminsCPUAndMemory: a template's policy.maxCPU
// and maxMemory lower the operator's ceilings freely, but raise them only
// within --template-max-cpu and --template-max-memory; beyond, the template
// is refused naming the flags (an Accepted template once ran 16 CPU and 64Gi
// under the defaults of 2 and 2Gi).
func TestTemplateStaysWithinTheAdminsCPUAndMemory(t *testing.T) {
	tests := []struct {
		name                string
		templateBound       string // --template-max-cpu; empty: unset
		maxCPU, maxMemory   string // the template's policy; empty: unset
		wantCPU, wantMemory string // empty: refused
	}{
		{"the operator's ceilings", "", "", "", "2", "2Gi"},
		{"lowered by the template", "", "500m", "256Mi", "500m", "256Mi"},
		{"equal to the operator's", "", "2", "2Gi", "2", "2Gi"},
		{"CPU not raised without the admin's word", "", "16", "", "", ""},
		{"memory not raised without the admin's word", "", "", "64Gi", "", ""},
		{"raised within the admin's bound for templates", "4", "4", "4Gi", "4", "4Gi"},
		{"not past the admin's bound for templates", "4", "16", "", "", ""},
		{"a bound below the operator's ceiling widens nothing", "1", "2", "", "2", "2Gi"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			base := Limits{CPU: resource.MustParse("2"), Memory: resource.MustParse("2Gi")}
			if tt.templateBound != "" {
				base.TemplateCPU = resource.MustParse(tt.templateBound)
				base.TemplateMemory = resource.MustParse(tt.templateBound + "Gi")
			}
			tmpl := builders.BareTemplate("big", withPolicy)
			if tt.maxCPU != "" {
				q := ctfv1alpha1.Quantity(tt.maxCPU)
				tmpl.Spec.Policy.MaxCPU = &q
			}
			if tt.maxMemory != "" {
				q := ctfv1alpha1.Quantity(tt.maxMemory)
				tmpl.Spec.Policy.MaxMemory = &q
			}
			got, err := LimitsFor(base, tmpl)
			if tt.wantCPU == "" {
				var v *Violation
				g.Expect(errors.As(err, &v)).To(BeTrue(), "refused with a Violation, got %v", err)
				g.Expect(v.Rule).To(Equal(ruleResources))
				g.Expect(v.Object).To(Equal("ChallengeTemplate big"))
				g.Expect(v.Detail).To(ContainSubstring("--template-max-"))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.CPU.Cmp(resource.MustParse(tt.wantCPU))).To(BeZero(), "cpu %s", got.CPU.String())
			g.Expect(got.Memory.Cmp(resource.MustParse(tt.wantMemory))).To(BeZero(), "memory %s", got.Memory.String())
		})
	}
}
