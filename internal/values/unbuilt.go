package values

import (
	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
)

// checkBuilt refuses a template that uses a field of the API whose
// rendering has not landed yet (issue 31 lands in slices), rather than
// start an instance without it: a sidecar, a secret or a bare name left out
// silently would run a challenge other than the organiser's.
func checkBuilt(tmpl *ctfv1alpha1.ChallengeTemplate) error {
	unbuilt := func(field string) error {
		return lifecycle.Errorf(lifecycle.ReasonPolicyViolation, "ChallengeTemplate %s: %s is not rendered by this operator version yet", tmpl.Name, field)
	}
	s := &tmpl.Spec
	switch {
	case len(s.Sidecars) > 0:
		return unbuilt("spec.sidecars")
	case s.BareNames != nil:
		return unbuilt("spec.bareNames")
	}
	for _, c := range s.Components {
		switch {
		case len(c.Sidecars) > 0:
			return unbuilt("a component's sidecars")
		case c.Replicas != nil && *c.Replicas != 1:
			return unbuilt("a component's replicas")
		}
	}
	return nil
}
