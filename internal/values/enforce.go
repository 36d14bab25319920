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

// TmpSizeLimit is the size of a container's /tmp emptyDir: the chart's
// tmpSizeLimit, which no value changes.
const TmpSizeLimit = "64Mi"

// diskNeed is what a container's disk-backed emptyDirs can hold: its /tmp
// (unless it keeps the image's own or backs it with memory) and its scratch
// directories not in memory; ctr is its values (the primary's top-level
// values, or a component's).
func diskNeed(ctr map[string]any) resource.Quantity {
	need := resource.Quantity{}
	if mount, _ := ctr["mountTmp"].(bool); mount {
		if memory, _ := ctr["memoryTmp"].(bool); !memory {
			need.Add(resource.MustParse(TmpSizeLimit))
		}
	}
	scratch, _ := ctr["scratch"].([]any)
	for _, s := range scratch {
		m, _ := s.(map[string]any)
		if medium, _ := m["medium"].(string); medium == "" {
			need.Add(quantityOr(m["sizeLimit"], DefaultScratchSize))
		}
	}
	return need
}

// diskFloor raises the container's default ephemeral-storage limit (when
// its values set none) to what its disk-backed emptyDirs can hold, so that
// a full scratch directory does not get its pod evicted; never below
// DefaultEphemeralStorageLimit, so that a container within it renders as it
// always did.
func diskFloor(ctr map[string]any) map[string]any {
	res := resourceFloor(ctr["resources"])
	in, _ := ctr["resources"].(map[string]any)
	limits, _ := in["limits"].(map[string]any)
	if _, set := limits[ephemeralStorage]; set {
		return res
	}
	if need := diskNeed(ctr); need.Cmp(resource.MustParse(DefaultEphemeralStorageLimit)) > 0 {
		res["limits"].(map[string]any)[ephemeralStorage] = need.String()
	}
	return res
}

// ephemeralStorage is the resource a container's disk use counts against.
const ephemeralStorage = "ephemeral-storage"

// checkDisk refuses an instance one of whose containers' disk-backed
// emptyDirs hold more than the ephemeral-storage ceiling (zero: none) while
// its values set no limit: the default limit that holds them is above what
// the gate allows, and a smaller one would evict the pod once they fill.
func checkDisk(vals map[string]any, ceiling resource.Quantity) error {
	if ceiling.IsZero() {
		return nil
	}
	var containers []map[string]any
	var names []string
	for i, w := range workloadsOf(vals) {
		name, of := "the primary container", "the primary workload"
		if i > 0 {
			name = fmt.Sprintf("component %v", w[nameKey])
			of = name
		}
		containers, names = append(containers, w), append(names, name)
		for _, sc := range sidecarsOf(w) {
			containers, names = append(containers, sc), append(names, fmt.Sprintf("sidecar %v of %s", sc[nameKey], of))
		}
	}
	for i, ctr := range containers {
		res, _ := ctr["resources"].(map[string]any)
		limits, _ := res["limits"].(map[string]any)
		limit := quantityOr(limits[ephemeralStorage], DefaultEphemeralStorageLimit)
		if need := diskNeed(ctr); need.Cmp(ceiling) > 0 && limit.Cmp(need) == 0 {
			return lifecycle.Errorf(lifecycle.ReasonPolicyViolation,
				"ephemeral-storage: the /tmp and scratch directories of %s hold %s, above the ephemeral-storage ceiling %s (--max-ephemeral-storage, or the template's policy.maxEphemeralStorage): make them smaller, back some with memory, or set resources.limits.ephemeral-storage",
				names[i], need.String(), ceiling.String())
		}
	}
	return nil
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
