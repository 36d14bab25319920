package values

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
)

func template(mutate func(*ctfv1alpha1.ChallengeTemplateSpec)) *ctfv1alpha1.ChallengeTemplate {
	t := &ctfv1alpha1.ChallengeTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "web-intro"},
		Spec: ctfv1alpha1.ChallengeTemplateSpec{
			Image: "registry.example/web-intro:1",
			Ports: []ctfv1alpha1.ChallengePort{{Name: "http", Port: 80, Protocol: ctfv1alpha1.ProtocolTCP}},
		},
	}
	if mutate != nil {
		mutate(&t.Spec)
	}
	return t
}

func instance(mutate func(*ctfv1alpha1.ChallengeSpec)) *ctfv1alpha1.Challenge {
	c := &ctfv1alpha1.Challenge{
		ObjectMeta: metav1.ObjectMeta{Name: "web-intro-team-1", Namespace: "ctf"},
		Spec:       ctfv1alpha1.ChallengeSpec{Participant: "team-1", Template: "web-intro"},
	}
	if mutate != nil {
		mutate(&c.Spec)
	}
	return c
}

func TestComposePrecedenceWithTemplate(t *testing.T) {
	g := NewWithT(t)
	tmpl := template(func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Values = raw(`{"replicas": 2, "podAnnotations": {"a": "template", "b": "template"}, "image": "values:1"}`)
		s.OverridableValues = []ctfv1alpha1.ValuePath{"podAnnotations.b", "env"}
		s.Flag = &ctfv1alpha1.FlagSpec{FlagDelivery: ctfv1alpha1.FlagDelivery{Mount: ctfv1alpha1.FlagMountFile, Path: "/flag"}}
		s.Egress = []ctfv1alpha1.EgressRule{{Name: "api", CIDR: "198.51.100.0/24"}}
	})
	c := instance(func(s *ctfv1alpha1.ChallengeSpec) {
		s.Values = raw(`{"podAnnotations": {"b": "challenge"}}`)
		s.Env = []ctfv1alpha1.EnvVar{{Name: "X", Value: "1"}}
	})
	got, err := Compose(c, tmpl, Settings{InternalCIDRs: []string{"10.0.0.0/8"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(HaveKeyWithValue("replicas", float64(2)), "template values")
	g.Expect(got).To(HaveKeyWithValue("podAnnotations", map[string]any{"a": "template", "b": "challenge"}), "Challenge values over template values")
	g.Expect(got).To(HaveKeyWithValue("image", "registry.example/web-intro:1"), "typed template fields over values")
	g.Expect(got).To(HaveKeyWithValue("env", []any{map[string]any{"name": "X", "value": "1"}}))
	g.Expect(got).To(HaveKeyWithValue("challenge", "web-intro"))
	g.Expect(got).To(HaveKeyWithValue("flag", HaveKeyWithValue("secretName", "web-intro-team-1-flag")))
	g.Expect(got).To(HaveKeyWithValue("networkPolicy", map[string]any{
		"internalCIDRs":         toAny(defaultCIDRs()), // 10.0.0.0/8 is among them already
		"egress":                []any{map[string]any{"name": "api", "cidr": "198.51.100.0/24"}},
		"allowInternetEgress":   false,
		"ingressFromNamespaces": []any{},
		"dnsNamespace":          "kube-system",
		"sharedServices":        []any{},
	}))
}

func TestComposeRefusesWhatTheTemplateDoesNotAllow(t *testing.T) {
	tests := []struct {
		name    string
		allow   []ctfv1alpha1.ValuePath
		spec    func(*ctfv1alpha1.ChallengeSpec)
		refused string
	}{
		{"nothing allowed", nil, func(s *ctfv1alpha1.ChallengeSpec) { s.Values = raw(`{"replicas": 3}`) }, "replicas"},
		{"sibling of an allowed path", []ctfv1alpha1.ValuePath{"resources.limits"}, func(s *ctfv1alpha1.ChallengeSpec) {
			s.Values = raw(`{"resources": {"requests": {"cpu": "1"}}}`)
		}, "resources.requests.cpu"},
		{"a typed field counts too", []ctfv1alpha1.ValuePath{"env"}, func(s *ctfv1alpha1.ChallengeSpec) { s.Image = "evil:1" }, "image"},
		{"prefix is not a path", []ctfv1alpha1.ValuePath{"pod"}, func(s *ctfv1alpha1.ChallengeSpec) {
			s.Values = raw(`{"podAnnotations": {"x": "y"}}`)
		}, "podAnnotations.x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			tmpl := template(func(s *ctfv1alpha1.ChallengeTemplateSpec) { s.OverridableValues = tt.allow })
			_, err := Compose(instance(tt.spec), tmpl, Settings{})
			g.Expect(lifecycle.IsReason(err, lifecycle.ReasonValueNotAllowed)).To(BeTrue(), "got %v", err)
			g.Expect(err.Error()).To(ContainSubstring(tt.refused))
		})
	}
	g := NewWithT(t)
	tmpl := template(func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.OverridableValues = []ctfv1alpha1.ValuePath{"resources.limits"}
	})
	_, err := Compose(instance(func(s *ctfv1alpha1.ChallengeSpec) {
		s.Values = raw(`{"resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}`)
	}), tmpl, Settings{})
	g.Expect(err).NotTo(HaveOccurred(), "paths below an allowed one are allowed")
}

func TestComposeRefusesALifetimeOverTheMaximum(t *testing.T) {
	g := NewWithT(t)
	tmpl := template(func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Lifetime = &ctfv1alpha1.LifetimePolicy{Max: &metav1.Duration{Duration: time.Hour}}
	})
	_, err := Compose(instance(func(s *ctfv1alpha1.ChallengeSpec) { s.Lifetime = &metav1.Duration{Duration: 2 * time.Hour} }), tmpl, Settings{})
	g.Expect(lifecycle.IsReason(err, lifecycle.ReasonLifetimeTooLong)).To(BeTrue(), "got %v", err)
	_, err = Compose(instance(func(s *ctfv1alpha1.ChallengeSpec) { s.Lifetime = &metav1.Duration{Duration: time.Hour} }), tmpl, Settings{})
	g.Expect(err).NotTo(HaveOccurred())
}
