package values

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
	"github.com/challenge-operator/challenge-operator/internal/policy"
)

// metadataValues are the value paths whose keys become label or annotation keys.
var metadataValues = [][]string{{"podLabels"}, {"podAnnotations"}, {"expose", "annotations"}}

// checkKeys refuses label and annotation keys the operator does not allow
// (policy.Keys): every prefixed key but the admin's exceptions, whose
// controllers (Kubernetes', Helm's, the operator's, an ingress controller's,
// a runtime's) would read them to give the instance another's identity,
// weaken its confinement, reconfigure shared infrastructure or make Helm keep
// or skip objects.
func checkKeys(vals map[string]any, keys policy.Keys) error {
	var refused []string
	for _, path := range metadataValues {
		m, _ := lookup(vals, path).(map[string]any)
		for k := range m {
			if keys.Refused(k) {
				refused = append(refused, fmt.Sprintf("%s %q", strings.Join(path, "."), k))
			}
		}
	}
	if len(refused) == 0 {
		return nil
	}
	sort.Strings(refused)
	return lifecycle.Errorf(lifecycle.ReasonPolicyViolation,
		"metadata-key: keys may not be set: %v (only keys without a prefix, and those the operator's --allow-metadata-keys lists)", refused)
}

func lookup(vals map[string]any, path []string) any {
	var cur any = vals
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}

// resourceFloor returns the container resources with cpu, memory and
// ephemeral-storage limits always set, and requests no larger than the
// limits, whatever the values left out: an instance without limits could
// starve its node, or fill its disk.
func resourceFloor(v any) map[string]any {
	res, _ := v.(map[string]any)
	requests, _ := res["requests"].(map[string]any)
	limits, _ := res["limits"].(map[string]any)
	outRequests, outLimits := copyMap(requests), copyMap(limits)
	for _, r := range []struct{ name, limit, request string }{
		{"cpu", DefaultCPULimit, DefaultCPURequest},
		{"memory", DefaultMemoryLimit, DefaultMemoryRequest},
		{"ephemeral-storage", DefaultEphemeralStorageLimit, DefaultEphemeralStorageRequest},
	} {
		limit := quantityOr(limits[r.name], r.limit)
		request := quantityOr(requests[r.name], r.request)
		if request.Cmp(limit) > 0 {
			request = limit
		}
		outLimits[r.name], outRequests[r.name] = limit.String(), request.String()
	}
	return map[string]any{"requests": outRequests, "limits": outLimits}
}

// quantityOr parses v, or def when v is unset or unparsable (admission
// refuses those; the chart's schema would refuse them again).
func quantityOr(v any, def string) resource.Quantity {
	if s, ok := v.(string); ok {
		if q, err := resource.ParseQuantity(s); err == nil {
			return q
		}
	}
	return resource.MustParse(def)
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
