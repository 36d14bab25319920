// Package values turns a Challenge into the Helm values of charts/challenge.
//
// Precedence, lowest to highest: the chart's defaults (applied later by the
// Helm reconciler), spec.values, the typed spec fields, and the values the
// operator enforces (the instance's identity).
package values

import (
	"context"
	"encoding/json"
	"fmt"

	"helm.sh/helm/v3/pkg/chartutil"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// Translator is the helm-operator value translator for Challenges.
type Translator struct{}

// Translate implements values.Translator of helm-operator-plugins.
func (Translator) Translate(_ context.Context, u *unstructured.Unstructured) (chartutil.Values, error) {
	var c ctfv1alpha1.Challenge
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &c); err != nil {
		return nil, fmt.Errorf("decoding Challenge %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return ForChallenge(&c)
}

// ForChallenge returns the chart values for c, without the chart defaults.
func ForChallenge(c *ctfv1alpha1.Challenge) (chartutil.Values, error) {
	vals, err := userValues(c.Spec.Values)
	if err != nil {
		return nil, err
	}
	typed, err := typedValues(&c.Spec)
	if err != nil {
		return nil, err
	}
	merge(vals, typed)
	merge(vals, enforcedValues(c))
	return vals, nil
}

// userValues decodes spec.values; a copy, so merging never touches the object.
func userValues(raw *apiextensionsv1.JSON) (map[string]any, error) {
	vals := map[string]any{}
	if raw == nil || len(raw.Raw) == 0 || string(raw.Raw) == "null" {
		return vals, nil
	}
	if err := json.Unmarshal(raw.Raw, &vals); err != nil {
		return nil, fmt.Errorf("spec.values must be an object: %w", err)
	}
	return vals, nil
}

// typedValues maps the typed spec fields to chart values; unset fields are left out
// so that spec.values and the chart defaults show through.
func typedValues(spec *ctfv1alpha1.ChallengeSpec) (map[string]any, error) {
	typed := struct {
		Image     string                      `json:"image,omitempty"`
		Ports     []ctfv1alpha1.ChallengePort `json:"ports,omitempty"`
		Env       []ctfv1alpha1.EnvVar        `json:"env,omitempty"`
		Resources any                         `json:"resources,omitempty"`
		Expose    *ctfv1alpha1.Expose         `json:"expose,omitempty"`
	}{Image: spec.Image, Ports: spec.Ports, Env: spec.Env, Expose: spec.Expose}
	if r := spec.Resources; r != nil && (len(r.Requests) > 0 || len(r.Limits) > 0) {
		typed.Resources = map[string]any{"requests": r.Requests, "limits": r.Limits}
	}
	return toMap(typed)
}

// enforcedValues are the instance's identity, which no override may change.
func enforcedValues(c *ctfv1alpha1.Challenge) map[string]any {
	return map[string]any{
		"participant": c.Spec.Participant,
		"challenge":   c.Name,
	}
}

// toMap round-trips v through JSON so that the values hold only plain JSON types,
// as Helm's templates and schema validation expect.
func toMap(v any) (map[string]any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding values: %w", err)
	}
	out := map[string]any{}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("decoding values: %w", err)
	}
	return out, nil
}

// merge writes src over dst: maps merge key by key, anything else (lists
// included) is replaced, matching how Helm coalesces values.
func merge(dst, src map[string]any) {
	for k, v := range src {
		if isNull(v) {
			continue
		}
		srcMap, srcIsMap := v.(map[string]any)
		dstMap, dstIsMap := dst[k].(map[string]any)
		if srcIsMap && dstIsMap {
			merge(dstMap, srcMap)
			continue
		}
		dst[k] = v
	}
}

func isNull(v any) bool {
	if v == nil {
		return true
	}
	m, ok := v.(map[string]any)
	return ok && len(m) == 0
}
