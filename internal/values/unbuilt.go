package values

import (
	"fmt"

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
	case len(s.SecretFiles) > 0:
		return unbuilt("spec.secretFiles")
	case s.MemoryTmp:
		return unbuilt("spec.memoryTmp")
	}
	for _, c := range s.Components {
		switch {
		case c.Flag != nil:
			return unbuilt("a component's flag")
		case len(c.SecretEnv) > 0:
			return unbuilt("a component's secretEnv")
		case len(c.SecretFiles) > 0:
			return unbuilt("a component's secretFiles")
		case c.MemoryTmp:
			return unbuilt("a component's memoryTmp")
		}
	}
	if err := sidecarsBuilt(s.Sidecars, "spec.sidecars", unbuilt); err != nil {
		return err
	}
	for _, c := range s.Components {
		if err := sidecarsBuilt(c.Sidecars, fmt.Sprintf("component %s's sidecars", c.Name), unbuilt); err != nil {
			return err
		}
	}
	return nil
}

// sidecarsBuilt refuses, through unbuilt, the fields of sidecars (of the
// workload where says) that are not rendered yet: their secrets, and a
// memory-backed /tmp.
func sidecarsBuilt(sidecars []ctfv1alpha1.Sidecar, where string, unbuilt func(string) error) error {
	for _, sc := range sidecars {
		field := func(name string) error { return unbuilt(fmt.Sprintf("%s: sidecar %s's %s", where, sc.Name, name)) }
		switch {
		case sc.Flag != nil:
			return field("flag")
		case len(sc.SecretEnv) > 0:
			return field("secretEnv")
		case len(sc.SecretFiles) > 0:
			return field("secretFiles")
		case sc.MemoryTmp:
			return field("memoryTmp")
		}
	}
	return nil
}
