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

	"strings"

	"helm.sh/helm/v3/pkg/chartutil"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/flag"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
)

// Settings are operator-wide values every instance is rendered with.
type Settings struct {
	// InternalCIDRs are the cluster's internal ranges (pods, services,
	// metadata): instances may neither reach them nor count as "outside".
	InternalCIDRs []string
	// NamespacePerInstance, when set, renders each instance into a namespace of its own.
	NamespacePerInstance bool
}

// Translator is the helm-operator value translator for Challenges.
type Translator struct {
	// Reader reads ChallengeTemplates and Challenges, usually the manager's cache.
	Reader client.Reader
	// SecretReader reads the Secrets flags come from, uncached.
	SecretReader client.Reader
	// Quota decides whether a Challenge may be installed.
	Quota *Quota
	// Settings are enforced on every instance.
	Settings Settings
}

// Translate implements values.Translator of helm-operator-plugins.
func (t Translator) Translate(ctx context.Context, u *unstructured.Unstructured) (chartutil.Values, error) {
	var c ctfv1alpha1.Challenge
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &c); err != nil {
		return nil, fmt.Errorf("decoding Challenge %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	var tmpl *ctfv1alpha1.ChallengeTemplate
	if c.Spec.Template != "" {
		tmpl = &ctfv1alpha1.ChallengeTemplate{}
		err := t.Reader.Get(ctx, client.ObjectKey{Name: c.Spec.Template}, tmpl)
		if apierrors.IsNotFound(err) {
			return nil, lifecycle.Errorf(lifecycle.ReasonTemplateNotFound, "ChallengeTemplate %q does not exist", c.Spec.Template)
		}
		if err != nil {
			return nil, fmt.Errorf("reading ChallengeTemplate %q: %w", c.Spec.Template, err)
		}
	}
	if t.Quota != nil && !lifecycle.Installed(&c.Status) {
		if err := t.Quota.Check(ctx, &c, tmpl); err != nil {
			return nil, err
		}
	}
	vals, err := Compose(&c, tmpl, t.Settings)
	if err != nil || tmpl == nil || tmpl.Spec.Flag == nil {
		return vals, err
	}
	value, err := flag.Resolve(ctx, t.SecretReader, tmpl, c.Spec.Participant)
	if err != nil {
		return nil, err
	}
	vals["flag"].(map[string]any)["value"] = value
	return vals, nil
}

// ForChallenge returns the chart values for a Challenge without a template.
func ForChallenge(c *ctfv1alpha1.Challenge) (chartutil.Values, error) {
	return Compose(c, nil, Settings{})
}

// Compose returns the chart values for c, an instance of tmpl (nil when c has
// no template), without the chart defaults. Precedence, lowest first: the
// template's values, c's spec.values, the typed fields (c's over tmpl's),
// the values the operator enforces.
func Compose(c *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate, settings Settings) (chartutil.Values, error) {
	user, err := userValues(c.Spec.Values)
	if err != nil {
		return nil, err
	}
	typed, err := typedValues(&c.Spec)
	if err != nil {
		return nil, err
	}
	vals := map[string]any{}
	if tmpl != nil {
		if err := checkAllowed(tmpl, user, typed); err != nil {
			return nil, err
		}
		if err := checkLifetime(c, tmpl); err != nil {
			return nil, err
		}
		if vals, err = userValues(tmpl.Spec.Values); err != nil {
			return nil, fmt.Errorf("ChallengeTemplate %s: %w", tmpl.Name, err)
		}
		tmplTyped, err := typedValues(templateAsSpec(tmpl))
		if err != nil {
			return nil, err
		}
		merge(tmplTyped, typed)
		typed = tmplTyped
	}
	merge(vals, user)
	merge(vals, typed)
	merge(vals, enforcedValues(c, tmpl, settings))
	return vals, nil
}

// templateAsSpec views a template's typed fields as a Challenge's.
func templateAsSpec(tmpl *ctfv1alpha1.ChallengeTemplate) *ctfv1alpha1.ChallengeSpec {
	t := &tmpl.Spec
	return &ctfv1alpha1.ChallengeSpec{Image: t.Image, Ports: t.Ports, Env: t.Env, Resources: t.Resources, Expose: t.Expose}
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

// enforcedValues are what no override may change: the instance's identity,
// its flag and its network boundaries.
func enforcedValues(c *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate, settings Settings) map[string]any {
	out := map[string]any{
		"participant": c.Spec.Participant,
		"challenge":   c.Name,
	}
	netpol := map[string]any{}
	if len(settings.InternalCIDRs) > 0 {
		netpol["internalCIDRs"] = toAny(settings.InternalCIDRs)
	}
	if tmpl != nil {
		out["challenge"] = tmpl.Name
		if f := tmpl.Spec.Flag; f != nil {
			out["flag"] = map[string]any{
				"enabled": true, "secretName": FlagSecretName(c.Name), "mount": string(f.Mount), "path": f.Path, "envName": f.EnvName,
			}
		}
		if len(tmpl.Spec.Egress) > 0 {
			rules, _ := toMap(struct {
				R []ctfv1alpha1.EgressRule `json:"r"`
			}{tmpl.Spec.Egress})
			netpol["egress"] = rules["r"]
		}
	}
	if len(netpol) > 0 {
		out["networkPolicy"] = netpol
	}
	if settings.NamespacePerInstance {
		out["namespacePerInstance"] = map[string]any{"enabled": true, "name": InstanceNamespace(c)}
	}
	return out
}

// FlagSecretName is the Secret holding an instance's flag, in the Challenge's namespace.
func FlagSecretName(challenge string) string { return challenge + "-flag" }

// InstanceNamespace is the namespace an instance runs in when each has its own.
func InstanceNamespace(c *ctfv1alpha1.Challenge) string {
	name := c.Namespace + "-" + c.Name
	if len(name) > 63 {
		name = strings.TrimRight(name[:63], "-")
	}
	return name
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
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
