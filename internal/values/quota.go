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
// from its composed values (each workload's containers, sidecars included,
// resources floored, and replicas): for each workload, the larger of
// NamespaceQuota and what its pods ask (every container's, times the pods
// quotaPods counts: a rolling update's, and an interrupted one's still
// terminating), so
// that a template with larger resources runs there too and an instance
// within NamespaceQuota keeps the quota it always had.
func instanceQuota(vals map[string]any) map[string]string {
	total := map[string]resource.Quantity{}
	for _, w := range workloadsOf(vals) {
		for k, q := range workloadQuota(w) {
			sum := total[k]
			sum.Add(q)
			total[k] = sum
		}
	}
	out := make(map[string]string, len(total))
	for k, q := range total {
		out[k] = q.String()
	}
	return out
}

// workloadQuota is one workload's share of the quota: NamespaceQuota, or
// what its pods ask where that is more. w is its values: its main
// container's resources, its sidecars', its replicas.
func workloadQuota(w map[string]any) map[string]resource.Quantity {
	containers := containerResources(w)
	replicas := replicasOf(w)
	pods := quotaPods(replicas)
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

// quotaPods is how many of a workload's pods of replicas the quota counts
// at once, at most: a rolling update's (its replicas and the quarter more,
// rounded up, it starts before it stops the old ones), twice. The quota
// counts a terminating pod until its kubelet removes it, or for twice its
// grace period (terminationGracePeriodSeconds, 30 s by default) after its
// deletion when no kubelet does, and an upgrade interrupted mid-rollout (an
// operator killed, a rollback, a change on top of a change) leaves every
// pod of that rollout terminating while the next one starts its own:
// without the room for them, the quota refused the next upgrade's pods. A
// third rollout within the grace period is not provided for.
// For one replica of the default resources this is NamespaceQuota's own
// four pods, so such an instance's quota stays what it was.
func quotaPods(replicas int64) int64 {
	return 2 * (replicas + (replicas+3)/4)
}

// containerResources are the resources values of a workload's pod's
// containers: its main container's, then its sidecars'.
func containerResources(w map[string]any) []any {
	sidecars := sidecarsOf(w)
	out := make([]any, 0, 1+len(sidecars))
	out = append(out, w["resources"])
	for _, sc := range sidecars {
		out = append(out, sc["resources"])
	}
	return out
}

// replicasOf is how many pods a workload runs: its replicas, at least one.
func replicasOf(w map[string]any) int64 {
	if n, ok := w["replicas"].(float64); ok && n > 1 {
		return int64(n)
	}
	return 1
}

// budgetResources are the requests a team's budget counts.
var budgetResources = []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}

// InstanceRequests is what an instance's pods request of the nodes, from
// its composed values: the cpu and memory requests of every container of
// every workload (sidecars included, as floored for rendering, so the
// operator's default requests where the template names none) times the
// workload's replicas. A team's budget counts it: unlike the instance's
// quota, without a rolling update's surge or NamespaceQuota's floor, for a
// team pays for what runs.
func InstanceRequests(vals map[string]any) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, r := range budgetResources {
		total := resource.Quantity{}
		for _, w := range workloadsOf(vals) {
			need := resource.Quantity{}
			for _, c := range containerResources(w) {
				res, _ := c.(map[string]any)
				requests, _ := res["requests"].(map[string]any)
				need.Add(quantityOr(requests[string(r)], "0"))
			}
			need.Mul(replicasOf(w))
			total.Add(need)
		}
		out[r] = total
	}
	return out
}

// RequestsOf is what c's instance, of tmpl (nil without one), requests
// (InstanceRequests), from its values as the operator composes them; an
// error when they do not compose, and the instance would not be installed.
func (s Settings) RequestsOf(c *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate) (corev1.ResourceList, error) {
	vals, err := Compose(c, tmpl, s)
	if err != nil {
		return nil, err
	}
	return InstanceRequests(vals), nil
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
