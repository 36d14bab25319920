package values

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
)

func TestLeafPaths(t *testing.T) {
	tests := []struct {
		name string
		in   map[string]any
		want []string
	}{
		{"nothing set", map[string]any{}, nil},
		{"top-level scalars", map[string]any{"replicas": 2.0, "image": "x"}, []string{"replicas", "image"}},
		{"nested maps give dotted paths", map[string]any{"resources": map[string]any{"limits": map[string]any{"cpu": "1"}}}, []string{"resources.limits.cpu"}},
		{"a list is a leaf", map[string]any{"env": []any{map[string]any{"name": "X"}}}, []string{"env"}},
		{"an empty map is a leaf", map[string]any{"podAnnotations": map[string]any{}}, []string{"podAnnotations"}},
		{"a nil value is a leaf", map[string]any{"tls": nil}, []string{"tls"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(leafPaths("", tt.in)).To(ConsistOf(tt.want))
		})
	}
	g := NewWithT(t)
	g.Expect(leafPaths("expose", map[string]any{"type": "Ingress"})).To(Equal([]string{"expose.type"}), "under the prefix given")
}

func TestAllowed(t *testing.T) {
	allow := []ctfv1alpha1.ValuePath{"resources.limits", "env"}
	tests := []struct {
		path string
		want bool
	}{
		{"env", true},
		{"resources.limits", true},
		{"resources.limits.cpu", true},
		{"resources", false},          // above an allowed path: would set its siblings too
		{"resources.requests", false}, // a sibling
		{"environment", false},        // a prefix of the name is not a path
		{"resources.limitsx", false},
		{"image", false},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			NewWithT(t).Expect(allowed(tt.path, allow)).To(Equal(tt.want))
		})
	}
	NewWithT(t).Expect(allowed("env", nil)).To(BeFalse(), "nothing is allowed without a list")
}

func TestCheckAllowed(t *testing.T) {
	tmpl := template(func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.OverridableValues = []ctfv1alpha1.ValuePath{"env", "resources.limits"}
	})
	tests := []struct {
		name        string
		user, typed map[string]any
		refused     string // "" for allowed
	}{
		{"nothing set", nil, nil, ""},
		{"allowed in values and typed", map[string]any{"resources": map[string]any{"limits": map[string]any{"cpu": "1"}}},
			map[string]any{"env": []any{}}, ""},
		{"refused in values", map[string]any{"replicas": 3.0}, nil, "overriding replicas (overridable: env, resources.limits)"},
		{"refused in the typed fields", nil, map[string]any{"image": "evil:1"}, "overriding image "},
		{"sorted and once each", map[string]any{"replicas": 3.0, "image": "a"}, map[string]any{"image": "b"}, "overriding image, replicas "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			err := checkAllowed(tmpl, tt.user, tt.typed)
			if tt.refused == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(lifecycle.IsReason(err, lifecycle.ReasonValueNotAllowed)).To(BeTrue(), "got %v", err)
			g.Expect(err.Error()).To(ContainSubstring(tt.refused))
		})
	}
	g := NewWithT(t)
	err := checkAllowed(template(nil), map[string]any{"replicas": 3.0}, nil)
	g.Expect(err).To(MatchError(ContainSubstring("(overridable: none)")))
}

func TestCheckLifetime(t *testing.T) {
	hour := &metav1.Duration{Duration: time.Hour}
	twoHours := &metav1.Duration{Duration: 2 * time.Hour}
	tests := []struct {
		name      string
		asked     *metav1.Duration
		policy    *ctfv1alpha1.LifetimePolicy
		installed bool
		refused   bool
	}{
		{"no lifetime asked", nil, &ctfv1alpha1.LifetimePolicy{Max: hour}, false, false},
		{"no lifetime policy", twoHours, nil, false, false},
		{"a policy without a maximum", twoHours, &ctfv1alpha1.LifetimePolicy{Default: hour}, false, false},
		{"the maximum itself", hour, &ctfv1alpha1.LifetimePolicy{Max: hour}, false, false},
		{"over the maximum", twoHours, &ctfv1alpha1.LifetimePolicy{Max: hour}, false, true},
		{"over a maximum lowered since install", twoHours, &ctfv1alpha1.LifetimePolicy{Max: hour}, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := instance(func(s *ctfv1alpha1.ChallengeSpec) { s.Lifetime = tt.asked })
			if tt.installed {
				c.Status.StartedAt = &metav1.Time{Time: time.Unix(0, 0)}
			}
			tmpl := template(func(s *ctfv1alpha1.ChallengeTemplateSpec) { s.Lifetime = tt.policy })
			err := checkLifetime(c, tmpl)
			if !tt.refused {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(lifecycle.IsReason(err, lifecycle.ReasonLifetimeTooLong)).To(BeTrue(), "got %v", err)
			g.Expect(err.Error()).To(ContainSubstring("2h0m0s exceeds the maximum 1h0m0s"))
		})
	}
}
