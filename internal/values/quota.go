package values

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// quotaResources are the ResourceQuota's keys a workload's containers
// count against, and the resource and side ("limits", "requests") each
// sums.
var quotaResources = []struct {
	key, side string
	resource  corev1.ResourceName
}{
	{"requests.cpu", "requests", corev1.ResourceCPU}, {"requests.memory", "requests", corev1.ResourceMemory},
	{"limits.cpu", "limits", corev1.ResourceCPU}, {"limits.memory", "limits", corev1.ResourceMemory},
}

// instanceQuota is the ResourceQuota of an instance's namespace of its own,
// from its composed values (each workload's resources and replicas) and its
// template's sidecars: for each workload, the larger of NamespaceQuota and
// what its pods ask (every container's, sidecars included, times its
// replicas and the one more pod a rolling update starts beside them), so
// that a template with larger resources runs there too and an instance
// within NamespaceQuota keeps the quota it always had.
func instanceQuota(vals map[string]any, tmpl *ctfv1alpha1.ChallengeTemplate) map[string]string {
	total := map[string]resource.Quantity{}
	add := func(ctr map[string]any, sidecars []ctfv1alpha1.Sidecar) {
		for k, q := range workloadQuota(ctr, sidecars) {
			sum := total[k]
			sum.Add(q)
			total[k] = sum
		}
	}
	var primarySidecars []ctfv1alpha1.Sidecar
	var components []ctfv1alpha1.Component
	if tmpl != nil {
		primarySidecars, components = tmpl.Spec.Sidecars, tmpl.Spec.Components
	}
	add(vals, primarySidecars)
	comps, _ := vals["components"].([]any)
	for i, c := range comps {
		m, _ := c.(map[string]any)
		var sidecars []ctfv1alpha1.Sidecar
		if i < len(components) {
			sidecars = components[i].Sidecars
		}
		add(m, sidecars)
	}
	out := make(map[string]string, len(total))
	for k, q := range total {
		out[k] = q.String()
	}
	return out
}

// workloadQuota is one workload's share of the quota: NamespaceQuota, or
// what its pods ask where that is more. ctr is its main container's values
// (resources floored, replicas), sidecars its template's.
func workloadQuota(ctr map[string]any, sidecars []ctfv1alpha1.Sidecar) map[string]resource.Quantity {
	containers := make([]any, 0, 1+len(sidecars))
	containers = append(containers, ctr["resources"])
	for _, s := range sidecars {
		res, _ := toMap(s.Resources)
		containers = append(containers, resourceFloor(res))
	}
	replicas := int64(1)
	if n, ok := ctr["replicas"].(float64); ok && n > 1 {
		replicas = int64(n)
	}
	// A rolling update starts a quarter of the replicas (rounded up) more
	// before it stops the old ones.
	pods := replicas + (replicas+3)/4
	out := map[string]resource.Quantity{}
	for k, v := range NamespaceQuota {
		out[k] = resource.MustParse(v)
	}
	if q := *resource.NewQuantity(pods, resource.DecimalSI); q.Cmp(out["pods"]) > 0 {
		out["pods"] = q
	}
	for _, r := range quotaResources {
		need := resource.Quantity{}
		for _, c := range containers {
			res, _ := c.(map[string]any)
			side, _ := res[r.side].(map[string]any)
			need.Add(quantityOr(side[string(r.resource)], "0"))
		}
		need.Mul(pods)
		if need.Cmp(out[r.key]) > 0 {
			out[r.key] = need
		}
	}
	return out
}

// NamespaceBoundsOf are the ResourceQuota hard limits and the LimitRange
// items of an instance's namespace of its own, as the gate compares them,
// read from its composed values: the quota instanceQuota computed for them.
func NamespaceBoundsOf(vals map[string]any) (corev1.ResourceList, []corev1.LimitRangeItem, error) {
	ns, _ := vals["namespacePerInstance"].(map[string]any)
	quota, _ := ns["quota"].(map[string]any)
	hard := make(map[string]string, len(quota))
	for k, v := range quota {
		hard[k] = fmt.Sprint(v)
	}
	_, limitRange, err := NamespaceBounds(0)
	if err != nil {
		return nil, nil, err
	}
	list, err := resourceList(hard)
	if err != nil {
		return nil, nil, fmt.Errorf("namespace quota: %w", err)
	}
	return list, limitRange, nil
}
