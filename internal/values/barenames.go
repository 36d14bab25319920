package values

import (
	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/identity"
	"github.com/challenge-operator/challenge-operator/internal/policy"
)

// bareNames are the chart's bareNames values of c, an instance of tmpl (nil
// without a template): with the template's bareNames, the headless Service
// that gives the instance's pods their names, the search domain that makes a
// bare name resolve in them, and the primary workload's bare name; empty
// strings without, so that nothing of it renders. Enforced on every render:
// no value of a Challenge reaches a pod's name resolution.
func bareNames(c *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate, settings Settings) map[string]any {
	if tmpl == nil || tmpl.Spec.BareNames == nil {
		return map[string]any{"service": "", "search": "", "primary": ""}
	}
	return map[string]any{
		"service": identity.BareNamesService(c.Name),
		"search":  identity.BareNamesSearch(c.Name, InstanceNamespace(c, settings), settings.EffectiveClusterDomain()),
		"primary": tmpl.Spec.BareNames.Primary,
	}
}

// withBareNames gives each component's values its bare name, its own name,
// when tmpl has bareNames; components is componentsFor's result.
func withBareNames(tmpl *ctfv1alpha1.ChallengeTemplate, components []any) {
	if tmpl == nil || tmpl.Spec.BareNames == nil {
		return
	}
	for _, v := range components {
		m := v.(map[string]any)
		m["bareName"] = m[nameKey]
	}
}

// InstanceNamespace is the namespace c's objects run in: its own with one
// namespace per instance, else the Challenge's.
func InstanceNamespace(c *ctfv1alpha1.Challenge, settings Settings) string {
	if settings.NamespacePerInstance {
		return identity.Namespace(c)
	}
	return c.Namespace
}

// expectBareNames writes into in, the expectation of c (an instance of tmpl),
// what its bare names let it render, from the same computation as its values
// (bareNames, withBareNames): the headless Service, the search domain in the
// namespace in holds, and each workload's bare name. Nothing without them.
func expectBareNames(in *policy.Instance, c *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate, settings Settings) {
	if tmpl == nil || tmpl.Spec.BareNames == nil {
		return
	}
	in.BareNames = &policy.BareNames{
		Service:  identity.BareNamesService(c.Name),
		Search:   identity.BareNamesSearch(c.Name, in.Namespace, settings.EffectiveClusterDomain()),
		Selector: identity.InstancePods(c),
	}
	in.Workloads[0].BareName = tmpl.Spec.BareNames.Primary
	for i := 1; i < len(in.Workloads); i++ {
		in.Workloads[i].BareName = in.Workloads[i].Name
	}
}
