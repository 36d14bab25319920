package chartrender_test

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/values"
	"github.com/challenge-operator/challenge-operator/test/chartrender"
)

// TestComponentReplicasSchema: the chart's schema takes a component's
// replicas up to ten, the API's bound, and no more.
func TestComponentReplicasSchema(t *testing.T) {
	g := NewWithT(t)
	ch := &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Name: "golden", Namespace: "ctf-teams"},
		Spec: ctfv1alpha1.ChallengeSpec{Participant: "team-1", Template: "golden-template"}}
	tmpl := &ctfv1alpha1.ChallengeTemplate{ObjectMeta: metav1.ObjectMeta{Name: "golden-template"}, Spec: ctfv1alpha1.ChallengeTemplateSpec{
		Image: "registry.example/ctf/web:1", Components: []ctfv1alpha1.Component{{Name: "worker", Image: "registry.example/ctf/worker:1"}},
	}}
	for _, tt := range []struct {
		replicas int64
		ok       bool
	}{{10, true}, {11, false}, {0, false}} {
		vals, err := values.Compose(ch, tmpl, goldenSettings)
		g.Expect(err).NotTo(HaveOccurred())
		vals["components"].([]any)[0].(map[string]any)["replicas"] = tt.replicas
		_, err = chartrender.Render(ch, vals)
		if tt.ok {
			g.Expect(err).NotTo(HaveOccurred())
			continue
		}
		g.Expect(err).To(MatchError(ContainSubstring("replicas")), "%d replicas", tt.replicas)
	}
}
