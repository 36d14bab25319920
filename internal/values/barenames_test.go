package values

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/identity"
	"github.com/challenge-operator/challenge-operator/internal/policy"
)

// TestBareNamesValues: a template with bareNames gives the instance its
// headless Service, a search domain in the namespace its pods run in (the
// Challenge's, or its own) under the cluster's domain, the primary's bare
// name and each component's; any other template renders none of it.
func TestBareNamesValues(t *testing.T) {
	tmplWith := func(b *ctfv1alpha1.BareNames) *ctfv1alpha1.ChallengeTemplate {
		return &ctfv1alpha1.ChallengeTemplate{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: ctfv1alpha1.ChallengeTemplateSpec{
			Image: "ghcr.io/x/web:1", Ports: []ctfv1alpha1.ChallengePort{{Name: "http", Port: 8080}}, BareNames: b,
			Components: []ctfv1alpha1.Component{{Name: "db", Image: "postgres:16"}, {Name: "flag", Image: "flag:1"}},
		}}
	}
	c := challenge(func(s *ctfv1alpha1.ChallengeSpec) {
		*s = ctfv1alpha1.ChallengeSpec{Participant: "team-1", Template: "web"}
	})
	none := map[string]any{"service": "", "search": "", "primary": ""}
	for _, tt := range []struct {
		name       string
		tmpl       *ctfv1alpha1.ChallengeTemplate
		settings   Settings
		want       map[string]any
		components []any // the components' bareName, nil for none
	}{
		{name: "shared namespace", tmpl: tmplWith(&ctfv1alpha1.BareNames{Primary: "app"}),
			want:       map[string]any{"service": "web---names", "search": "web---names.ctf.svc.cluster.local", "primary": "app"},
			components: []any{"db", "flag"}},
		{name: "own namespace, another cluster domain", tmpl: tmplWith(&ctfv1alpha1.BareNames{Primary: "app"}),
			settings:   Settings{NamespacePerInstance: true, ClusterDomain: "k8s.example"},
			want:       map[string]any{"service": "web---names", "search": "web---names." + identity.Namespace(c) + ".svc.k8s.example", "primary": "app"},
			components: []any{"db", "flag"}},
		{name: "without bareNames", tmpl: tmplWith(nil), want: none, components: []any{nil, nil}},
		{name: "without a template", want: none},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ch := c.DeepCopy()
			if tt.tmpl == nil {
				ch.Spec = ctfv1alpha1.ChallengeSpec{Participant: "team-1", Image: "ghcr.io/x/web:1"}
			}
			got, err := Compose(ch, tt.tmpl, tt.settings)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got["bareNames"]).To(Equal(tt.want))
			comps, _ := got["components"].([]any)
			g.Expect(comps).To(HaveLen(len(tt.components)))
			for i, want := range tt.components {
				if want == nil {
					g.Expect(comps[i]).NotTo(HaveKey("bareName"))
					continue
				}
				g.Expect(comps[i]).To(HaveKeyWithValue("bareName", want))
			}
		})
	}
}

func TestEffectiveClusterDomain(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Settings{}.EffectiveClusterDomain()).To(Equal("cluster.local"))
	g.Expect(Settings{ClusterDomain: "k8s.example"}.EffectiveClusterDomain()).To(Equal("k8s.example"))
}

// TestBareNamesExpectation: the gate expects the headless Service, the
// search domain in the namespace the instance runs in and every workload's
// bare name that the values render; nothing without bareNames.
func TestBareNamesExpectation(t *testing.T) {
	g := NewWithT(t)
	tmpl := &ctfv1alpha1.ChallengeTemplate{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: ctfv1alpha1.ChallengeTemplateSpec{
		Image: "ghcr.io/x/web:1", BareNames: &ctfv1alpha1.BareNames{Primary: "app"},
		Components: []ctfv1alpha1.Component{{Name: "db", Image: "postgres:16"}},
	}}
	c := challenge(func(s *ctfv1alpha1.ChallengeSpec) {
		*s = ctfv1alpha1.ChallengeSpec{Participant: "team-1", Template: "web"}
	})
	for _, settings := range []Settings{{}, {NamespacePerInstance: true, ClusterDomain: "k8s.example"}} {
		in, err := Expectation(c, tmpl, settings, policy.Limits{}, "", nil)
		g.Expect(err).NotTo(HaveOccurred())
		vals, err := Compose(c, tmpl, settings)
		g.Expect(err).NotTo(HaveOccurred())
		bare := vals["bareNames"].(map[string]any)
		g.Expect(in.BareNames).To(Equal(&policy.BareNames{Service: bare["service"].(string), Search: bare["search"].(string),
			Selector: identity.InstancePods(c)}))
		g.Expect(in.BareNames.Search).To(HavePrefix("web---names." + in.Namespace + ".svc."))
		g.Expect(in.Workloads[0].BareName).To(Equal("app"))
		g.Expect(in.Workloads[1].BareName).To(Equal("db"))
	}
	tmpl.Spec.BareNames = nil
	in, err := Expectation(c, tmpl, Settings{}, policy.Limits{}, "", nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(in.BareNames).To(BeNil())
	g.Expect(in.Workloads[1].BareName).To(BeEmpty())
}
