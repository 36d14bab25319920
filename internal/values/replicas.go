package values

import (
	"k8s.io/utils/ptr"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
	"github.com/challenge-operator/challenge-operator/internal/policy"
)

// componentReplicas is how many pods a component runs: its replicas, 1
// when unset.
func componentReplicas(comp *ctfv1alpha1.Component) int32 { return ptr.Deref(comp.Replicas, 1) }

// checkComponentReplicas refuses a template one of whose components asks
// for more replicas than limits allow (the template's policy.maxReplicas,
// else the operator's ceiling, 1 when unset) with a PolicyViolation naming
// it, rather than a render the gate would refuse with a less telling one.
func checkComponentReplicas(tmpl *ctfv1alpha1.ChallengeTemplate, limits policy.Limits) error {
	if tmpl == nil {
		return nil
	}
	ceiling := max(limits.MaxReplicas, 1)
	for i := range tmpl.Spec.Components {
		comp := &tmpl.Spec.Components[i]
		if n := componentReplicas(comp); n > ceiling {
			return lifecycle.Errorf(lifecycle.ReasonPolicyViolation, "ChallengeTemplate %s: component %s asks for %d replicas, above the %d its policy.maxReplicas allows",
				tmpl.Name, comp.Name, n, ceiling)
		}
	}
	return nil
}
