package policy

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// LimitsFor overlays a template's policy on the operator's limits; its
// ephemeral storage only lowers them and its registries only narrow them;
// its CPU and memory go no higher than the admin's bound for templates (a
// Violation naming the flags otherwise).
func LimitsFor(base Limits, tmpl *ctfv1alpha1.ChallengeTemplate) (Limits, error) {
	out := base
	if tmpl == nil || tmpl.Spec.Policy == nil {
		return out, nil
	}
	p := tmpl.Spec.Policy
	for _, q := range []struct {
		field      string
		from       *ctfv1alpha1.Quantity
		to         *resource.Quantity
		bound      resource.Quantity
		boundFlags string
	}{
		{"policy.maxCPU", p.MaxCPU, &out.CPU, ceiling(base.CPU, base.TemplateCPU), "--max-cpu, --template-max-cpu"},
		{"policy.maxMemory", p.MaxMemory, &out.Memory, ceiling(base.Memory, base.TemplateMemory), "--max-memory, --template-max-memory"},
	} {
		if q.from == nil {
			continue
		}
		v, err := q.from.Parse()
		if err != nil {
			return out, fmt.Errorf("ChallengeTemplate %s: policy: %w", tmpl.Name, err)
		}
		if v.Cmp(q.bound) > 0 {
			return out, &Violation{Rule: ruleResources, Object: "ChallengeTemplate " + tmpl.Name,
				Detail: fmt.Sprintf("%s %s is above the operator's bound of %s (%s)", q.field, v.String(), q.bound.String(), q.boundFlags)}
		}
		*q.to = v
	}
	if p.MaxEphemeralStorage != nil {
		v, err := p.MaxEphemeralStorage.Parse()
		if err != nil {
			return out, fmt.Errorf("ChallengeTemplate %s: policy: %w", tmpl.Name, err)
		}
		// Only lower: the operator's ceiling (zero: none) bounds the node's disk.
		if out.EphemeralStorage.IsZero() || v.Cmp(out.EphemeralStorage) < 0 {
			out.EphemeralStorage = v
		}
	}
	if p.MaxReplicas != nil {
		out.MaxReplicas = *p.MaxReplicas
	}
	out.AllowLoadBalancer = out.AllowLoadBalancer || p.LoadBalancer
	registries := make([]string, len(p.AllowedRegistries))
	for i, r := range p.AllowedRegistries {
		registries[i] = string(r)
	}
	var err error
	out.AllowedRegistries, err = NarrowRegistries(tmpl.Name, base.AllowedRegistries, registries)
	return out, err
}

// ceiling is the highest a template may set a limit to: the operator's
// own, or the admin's wider bound for templates when one is given.
func ceiling(operator, templates resource.Quantity) resource.Quantity {
	if templates.Cmp(operator) > 0 {
		return templates
	}
	return operator
}
