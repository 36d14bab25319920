package policy

import (
	"errors"
	"fmt"
	"maps"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/identity"
)

// workloadObjects are one workload's objects in a componentFixture, the primary's or the
// component's, so one change can be made to either.
type workloadObjects struct {
	name   string // the objects' name
	deploy **appsv1.Deployment
	svc    **corev1.Service
	np     **networkingv1.NetworkPolicy
	other  map[string]string // the other workload's selector
}

// workload is the primary workload's objects, or the component's.
func (cf *componentFixture) workload(primary bool) workloadObjects {
	if primary {
		return workloadObjects{name: release, deploy: &cf.fixture.deploy, svc: &cf.fixture.svc, np: &cf.fixture.np,
			other: maps.Clone(cf.in.Workloads[1].Selector)}
	}
	return workloadObjects{name: identity.ComponentObject(release, redis), deploy: &cf.deploy, svc: &cf.svc, np: &cf.np,
		other: maps.Clone(cf.in.Workloads[0].Selector)}
}

func (w workloadObjects) ctr() *corev1.Container {
	return &(*w.deploy).Spec.Template.Spec.Containers[0]
}

// TestWorkloadsJudgedAlike: the primary workload and a component are one model, held to the same
// rules: the same break in either's objects is refused by the same rule, on that workload's object.
func TestWorkloadsJudgedAlike(t *testing.T) {
	for _, tt := range []struct {
		name  string
		rule  string
		kind  string // of the object refused
		apply func(workloadObjects)
	}{
		{"a Deployment selecting the other workload's pods", ruleSelector, "Deployment", func(w workloadObjects) {
			(*w.deploy).Spec.Selector.MatchLabels = w.other
		}},
		{"a Service selecting the other workload's pods", ruleSelector, "Service", func(w workloadObjects) { (*w.svc).Spec.Selector = w.other }},
		{"a NetworkPolicy for the other workload's pods", ruleSelector, "NetworkPolicy", func(w workloadObjects) {
			(*w.np).Spec.PodSelector.MatchLabels = w.other
		}},
		{"a pod template of another participant", ruleLabels, "Deployment", func(w workloadObjects) {
			(*w.deploy).Spec.Template.Labels[ctfv1alpha1.ParticipantLabel] = "team2"
		}},
		{"a capability its Security did not grant", ruleSecContext, "Deployment", func(w workloadObjects) {
			w.ctr().SecurityContext.Capabilities.Add = []corev1.Capability{"NET_BIND_SERVICE"}
		}},
		{"a privileged container", rulePodSecurity, "Deployment", func(w workloadObjects) {
			w.ctr().SecurityContext.Privileged = ptr.To(true)
		}},
		{"replicas over the ceiling", ruleReplicas, "Deployment", func(w workloadObjects) { (*w.deploy).Spec.Replicas = ptr.To[int32](3) }},
		{"a memory limit over the ceiling", ruleResources, "Deployment", func(w workloadObjects) {
			w.ctr().Resources.Limits[corev1.ResourceMemory] = resource.MustParse("1Gi")
		}},
		{"its Deployment left out", ruleRequired, "Deployment", func(w workloadObjects) { *w.deploy = nil }},
		{"its NetworkPolicy left out", ruleRequired, "NetworkPolicy", func(w workloadObjects) { *w.np = nil }},
	} {
		for _, primary := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s, primary %v", tt.name, primary), func(t *testing.T) {
				g := NewWithT(t)
				cf := newComponentFixture(false)
				granted(nil)(cf.fixture) // both workloads with an exact Security
				g.Expect(Check(cf.render(), cf.in)).To(Succeed(), "the fixture before the change")

				cf = newComponentFixture(false)
				granted(nil)(cf.fixture)
				w := cf.workload(primary)
				tt.apply(w)
				err := Check(cf.render(), cf.in)
				var v *Violation
				g.Expect(errors.As(err, &v)).To(BeTrue(), "want a Violation, got %v", err)
				g.Expect(v.Rule).To(Equal(tt.rule), v.Error())
				g.Expect(v.Object).To(Equal(fmt.Sprintf("%s %s/%s", tt.kind, namespace, w.name)), v.Error())
			})
		}
	}
}
