package values

import (
	"testing"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// BenchmarkCompose measures the value translation of a templated Challenge.
func BenchmarkCompose(b *testing.B) {
	tmpl := template(func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Values = raw(`{"replicas": 1, "podAnnotations": {"a": "b"}, "resources": {"limits": {"cpu": "1"}}}`)
		s.OverridableValues = []ctfv1alpha1.ValuePath{"podAnnotations", "env"}
	})
	c := instance(func(s *ctfv1alpha1.ChallengeSpec) {
		s.Values = raw(`{"podAnnotations": {"c": "d"}}`)
		s.Env = []ctfv1alpha1.EnvVar{{Name: "X", Value: "1"}}
	})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Compose(c, tmpl, Settings{}); err != nil {
			b.Fatal(err)
		}
	}
}
