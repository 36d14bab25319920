package values

import (
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/policy"
)

func challenge(mutate func(*ctfv1alpha1.ChallengeSpec)) *ctfv1alpha1.Challenge {
	c := &ctfv1alpha1.Challenge{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ctf"},
		Spec: ctfv1alpha1.ChallengeSpec{
			Participant: "team-1",
			Image:       "registry.example/web:1",
			Ports:       []ctfv1alpha1.ChallengePort{{Name: "http", Port: 8080, Protocol: ctfv1alpha1.ProtocolTCP}},
		},
	}
	if mutate != nil {
		mutate(&c.Spec)
	}
	return c
}

// raw decodes chart values written as JSON, as the API server would.
func raw(s string) *ctfv1alpha1.Values {
	v, err := decodeValues(s)
	if err != nil {
		panic(err)
	}
	return v
}

func quantity(s string) *ctfv1alpha1.Quantity {
	q := ctfv1alpha1.Quantity(s)
	return &q
}

func decodeValues(s string) (*ctfv1alpha1.Values, error) {
	v := &ctfv1alpha1.Values{}
	return v, json.Unmarshal([]byte(s), v)
}

func TestForChallenge(t *testing.T) {
	tests := []struct {
		name string
		spec func(*ctfv1alpha1.ChallengeSpec)
		want map[string]any
	}{
		{
			name: "typed fields only",
			want: map[string]any{
				"participant": "team-1", "challenge": "web", "image": "registry.example/web:1",
				"ports": []any{map[string]any{"name": "http", "port": float64(8080), "protocol": "TCP"}},
			},
		},
		{
			name: "spec.values pass through where no typed field is set",
			spec: func(s *ctfv1alpha1.ChallengeSpec) {
				s.Values = raw(`{"replicas": 2, "podAnnotations": {"a": "b"}}`)
			},
			want: map[string]any{"replicas": float64(2), "podAnnotations": map[string]any{"a": "b"}},
		},
		{
			name: "typed fields win over spec.values",
			spec: func(s *ctfv1alpha1.ChallengeSpec) {
				s.Values = raw(`{"image": "other:2", "ports": [{"name": "x", "port": 1}]}`)
			},
			want: map[string]any{
				"image": "registry.example/web:1",
				"ports": []any{map[string]any{"name": "http", "port": float64(8080), "protocol": "TCP"}},
			},
		},
		{
			name: "the operator's identity values win over everything",
			spec: func(s *ctfv1alpha1.ChallengeSpec) {
				s.Values = raw(`{"participant": "someone-else", "challenge": "other"}`)
			},
			want: map[string]any{"participant": "team-1", "challenge": "web"},
		},
		{
			name: "expose merges key by key with spec.values",
			spec: func(s *ctfv1alpha1.ChallengeSpec) {
				s.Values = raw(`{"expose": {"annotations": {"lb": "internal"}, "type": "NodePort"}}`)
				s.Expose = &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeIngress, IngressClassName: "nginx"}
			},
			want: map[string]any{"expose": map[string]any{
				"annotations": map[string]any{"lb": "internal"}, "type": "Ingress", "ingressClassName": "nginx", "host": "", "https": false,
			}},
		},
		{
			name: "an empty tls section serves HTTPS with the controller's default certificate",
			spec: func(s *ctfv1alpha1.ChallengeSpec) {
				s.Expose = &ctfv1alpha1.Expose{Type: ctfv1alpha1.ExposeIngress, TLS: &ctfv1alpha1.IngressTLS{}}
			},
			want: map[string]any{"expose": map[string]any{"type": "Ingress", "tls": map[string]any{}, "host": "", "https": true}},
		},
		{
			name: "typed resources override only what they set",
			spec: func(s *ctfv1alpha1.ChallengeSpec) {
				s.Values = raw(`{"resources": {"requests": {"cpu": "10m"}, "limits": {"cpu": "1"}}}`)
				s.Resources = &ctfv1alpha1.Resources{Limits: &ctfv1alpha1.ResourceAmounts{Memory: quantity("1Gi")}}
			},
			want: map[string]any{"resources": map[string]any{
				"requests": map[string]any{"cpu": "10m", "memory": "64Mi", "ephemeral-storage": "64Mi"},
				"limits":   map[string]any{"cpu": "1", "memory": "1Gi", "ephemeral-storage": "256Mi"},
			}},
		},
		{
			name: "env from the typed spec",
			spec: func(s *ctfv1alpha1.ChallengeSpec) { s.Env = []ctfv1alpha1.EnvVar{{Name: "A", Value: "1"}} },
			want: map[string]any{"env": []any{map[string]any{"name": "A", "value": "1"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := ForChallenge(challenge(tt.spec))
			g.Expect(err).NotTo(HaveOccurred())
			for k, v := range tt.want {
				g.Expect(got).To(HaveKeyWithValue(k, v))
			}
		})
	}
}

func TestForChallengeDoesNotModifyTheChallenge(t *testing.T) {
	g := NewWithT(t)
	c := challenge(func(s *ctfv1alpha1.ChallengeSpec) { s.Values = raw(`{"expose": {"type": "NodePort"}}`) })
	before := c.DeepCopy()
	_, err := ForChallenge(c)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c).To(Equal(before))
}

func FuzzForChallenge(f *testing.F) {
	f.Add(`{"replicas": 2}`)
	f.Add(`{"expose": {"type": "NodePort", "annotations": {"a": "b"}}}`)
	f.Add(`null`)
	f.Fuzz(func(t *testing.T, values string) {
		v, err := decodeValues(values)
		if err != nil {
			return
		}
		got, err := ForChallenge(challenge(func(s *ctfv1alpha1.ChallengeSpec) { s.Values = v }))
		if err != nil {
			return
		}
		if got["participant"] != "team-1" || got["image"] != "registry.example/web:1" {
			t.Fatalf("enforced or typed value lost for spec.values %q: %v", values, got)
		}
	})
}

// The status writer tells a renewal from a spec to roll out by leaving
// spec.renewedAt and spec.lifetime out of what it compares
// (controller.renderedSpec): neither may reach the values.
func TestRenewalAndLifetimeReachNoValue(t *testing.T) {
	g := NewWithT(t)
	base := challenge(func(s *ctfv1alpha1.ChallengeSpec) { s.Lifetime = &metav1.Duration{Duration: time.Hour} })
	renewed := base.DeepCopy()
	renewed.Spec.RenewedAt = &metav1.Time{Time: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)}
	renewed.Spec.Lifetime = &metav1.Duration{Duration: 30 * time.Minute}
	want, err := ForChallenge(base)
	g.Expect(err).NotTo(HaveOccurred())
	got, err := ForChallenge(renewed)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(want))
	for _, c := range []*ctfv1alpha1.Challenge{base, renewed} {
		r, err := Rules{}.Render(c, nil, policy.Limits{}, Inputs{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(r.Values).To(Equal(want))
	}
}

func TestMerge(t *testing.T) {
	tests := []struct {
		name     string
		dst, src map[string]any
		want     map[string]any
	}{
		{"a new key is added", map[string]any{"a": 1.0}, map[string]any{"b": 2.0}, map[string]any{"a": 1.0, "b": 2.0}},
		{"a scalar is replaced", map[string]any{"a": 1.0}, map[string]any{"a": 2.0}, map[string]any{"a": 2.0}},
		{"maps merge key by key", map[string]any{"m": map[string]any{"a": 1.0, "b": 1.0}}, map[string]any{"m": map[string]any{"b": 2.0}},
			map[string]any{"m": map[string]any{"a": 1.0, "b": 2.0}}},
		{"lists are replaced whole", map[string]any{"l": []any{1.0, 2.0}}, map[string]any{"l": []any{3.0}}, map[string]any{"l": []any{3.0}}},
		{"an empty list replaces too", map[string]any{"l": []any{1.0}}, map[string]any{"l": []any{}}, map[string]any{"l": []any{}}},
		{"a map replaces a scalar", map[string]any{"a": "x"}, map[string]any{"a": map[string]any{"b": 1.0}}, map[string]any{"a": map[string]any{"b": 1.0}}},
		{"a scalar replaces a map", map[string]any{"a": map[string]any{"b": 1.0}}, map[string]any{"a": "x"}, map[string]any{"a": "x"}},
		// null and {} are what toMap leaves of unset fields: they change nothing.
		{"null keeps what is there", map[string]any{"a": 1.0}, map[string]any{"a": nil}, map[string]any{"a": 1.0}},
		{"null adds nothing", map[string]any{}, map[string]any{"a": nil}, map[string]any{}},
		{"an empty map keeps what is there", map[string]any{"tls": map[string]any{"secretName": "s"}}, map[string]any{"tls": map[string]any{}},
			map[string]any{"tls": map[string]any{"secretName": "s"}}},
		{"an empty map adds nothing", map[string]any{}, map[string]any{"tls": map[string]any{}}, map[string]any{}},
		{"nested null keeps what is there", map[string]any{"m": map[string]any{"a": 1.0}}, map[string]any{"m": map[string]any{"a": nil}},
			map[string]any{"m": map[string]any{"a": 1.0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			merge(tt.dst, tt.src)
			NewWithT(t).Expect(tt.dst).To(Equal(tt.want))
		})
	}
}

func TestIsNull(t *testing.T) {
	g := NewWithT(t)
	g.Expect(isNull(nil)).To(BeTrue())
	g.Expect(isNull(map[string]any{})).To(BeTrue())
	g.Expect(isNull(map[string]any{"a": nil})).To(BeFalse())
	g.Expect(isNull([]any{})).To(BeFalse(), "an empty list says something: none")
	g.Expect(isNull("")).To(BeFalse())
	g.Expect(isNull(false)).To(BeFalse())
	g.Expect(isNull(0.0)).To(BeFalse())
}

func TestToMap(t *testing.T) {
	g := NewWithT(t)
	got, err := toMap(nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(map[string]any{}), "null: no values, not a nil map")
	got, err = toMap(struct {
		N int               `json:"n"`
		M map[string]string `json:"m"`
	}{N: 3, M: map[string]string{"a": "b"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(map[string]any{"n": 3.0, "m": map[string]any{"a": "b"}}), "plain JSON types only")
	_, err = toMap(func() {})
	g.Expect(err).To(MatchError(ContainSubstring("encoding values")))
	_, err = toMap([]string{"a"})
	g.Expect(err).To(MatchError(ContainSubstring("decoding values")), "values are an object")
}

func TestLookup(t *testing.T) {
	vals := map[string]any{"expose": map[string]any{"annotations": map[string]any{"a": "b"}, "type": "Ingress"}}
	tests := []struct {
		path []string
		want any
	}{
		{[]string{"expose", "annotations"}, map[string]any{"a": "b"}},
		{[]string{"expose", "type"}, "Ingress"},
		{[]string{"expose", "missing"}, nil},
		{[]string{"expose", "type", "below"}, nil},
		{[]string{"podLabels"}, nil},
	}
	for _, tt := range tests {
		g := NewWithT(t)
		if tt.want == nil {
			g.Expect(lookup(vals, tt.path)).To(BeNil(), "%v", tt.path)
			continue
		}
		g.Expect(lookup(vals, tt.path)).To(Equal(tt.want), "%v", tt.path)
	}
}
