package policy

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// LimitsFor overlays a template's policy on the operator's limits; its
// ephemeral storage only lowers them and its registries only narrow them.
func LimitsFor(base Limits, tmpl *ctfv1alpha1.ChallengeTemplate) (Limits, error) {
	out := base
	if tmpl == nil || tmpl.Spec.Policy == nil {
		return out, nil
	}
	p := tmpl.Spec.Policy
	for _, q := range []struct {
		from *ctfv1alpha1.Quantity
		to   *resource.Quantity
	}{{p.MaxCPU, &out.CPU}, {p.MaxMemory, &out.Memory}} {
		if q.from == nil {
			continue
		}
		v, err := q.from.Parse()
		if err != nil {
			return out, fmt.Errorf("ChallengeTemplate %s: policy: %w", tmpl.Name, err)
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
