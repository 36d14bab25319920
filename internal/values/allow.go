package values

import (
	"slices"
	"sort"
	"strings"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
)

// checkAllowed refuses any value path a Challenge sets, through spec.values
// or its typed fields, that its template does not list as overridable.
func checkAllowed(tmpl *ctfv1alpha1.ChallengeTemplate, user, typed map[string]any) error {
	var refused []string
	for _, p := range append(leafPaths("", user), leafPaths("", typed)...) {
		if !allowed(p, tmpl.Spec.OverridableValues) {
			refused = append(refused, p)
		}
	}
	if len(refused) == 0 {
		return nil
	}
	sort.Strings(refused)
	refused = slices.Compact(refused)
	return lifecycle.Errorf(lifecycle.ReasonValueNotAllowed,
		"ChallengeTemplate %s does not allow overriding %s (overridable: %s)",
		tmpl.Name, strings.Join(refused, ", "), describeAllowed(tmpl.Spec.OverridableValues))
}

// leafPaths lists the dotted paths of the values set in m; lists are leaves.
func leafPaths(prefix string, m map[string]any) []string {
	var out []string
	for k, v := range m {
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		if sub, ok := v.(map[string]any); ok && len(sub) > 0 {
			out = append(out, leafPaths(p, sub)...)
			continue
		}
		out = append(out, p)
	}
	return out
}

// allowed reports whether path is an allowlisted path or lies below one.
func allowed(path string, allow []ctfv1alpha1.ValuePath) bool {
	for _, v := range allow {
		a := string(v)
		if path == a || strings.HasPrefix(path, a+".") {
			return true
		}
	}
	return false
}

func describeAllowed[S ~string](allow []S) string {
	if len(allow) == 0 {
		return "none"
	}
	out := make([]string, len(allow))
	for i, a := range allow {
		out[i] = string(a)
	}
	return strings.Join(out, ", ")
}

// checkLifetime refuses to admit an instance asking a lifetime longer than
// the template's maximum. An installed one is not refused: a maximum lowered
// since caps its expiry instead (internal/lifecycle), and it keeps running.
func checkLifetime(c *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate) error {
	lt := tmpl.Spec.Lifetime
	if c.Spec.Lifetime == nil || lt == nil || lt.Max == nil || c.Spec.Lifetime.Duration <= lt.Max.Duration || lifecycle.Installed(&c.Status) {
		return nil
	}
	return lifecycle.Errorf(lifecycle.ReasonLifetimeTooLong, "spec.lifetime %s exceeds the maximum %s of ChallengeTemplate %s",
		c.Spec.Lifetime.Duration, lt.Max.Duration, tmpl.Name)
}
