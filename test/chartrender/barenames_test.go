package chartrender_test

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/policy"
	"github.com/challenge-operator/challenge-operator/internal/values"
)

// TestBareNamesRenderPassesTheGate: what the chart renders for a template
// with bareNames is what the gate expects of that instance, in a shared
// namespace and in its own, and not what it expects of another instance of
// the same template (another subdomain, another search domain, another
// headless Service).
func TestBareNamesRenderPassesTheGate(t *testing.T) {
	limits := policy.Limits{CPU: resource.MustParse("2"), Memory: resource.MustParse("2Gi"), MaxReplicas: 2,
		IngressDomain: goldenSettings.IngressDomain, IngressFromNamespaces: goldenSettings.IngressFromNamespaces}
	for _, name := range []string{"bare-names", "bare-names-own-namespace"} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			var tc goldenCase
			for _, c := range goldenCases {
				if c.name == name {
					tc = c
				}
			}
			g.Expect(tc.tmpl).NotTo(BeNil())
			settings := goldenSettings
			if tc.settings != nil {
				tc.settings(&settings)
			}
			tmpl := &ctfv1alpha1.ChallengeTemplate{ObjectMeta: metav1.ObjectMeta{Name: "golden-template"}, Spec: *tc.tmpl}
			expect := func(instance string) policy.Instance {
				ch := &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Name: instance, Namespace: "ctf-teams"},
					Spec: ctfv1alpha1.ChallengeSpec{Participant: "team-1", Template: "golden-template"}}
				in, err := values.Expectation(ch, tmpl, settings, limits, "", nil)
				g.Expect(err).NotTo(HaveOccurred())
				return in
			}
			manifest := renderCase(t, tc) // the instance "golden"
			own := expect("golden")
			g.Expect(own.BareNames).NotTo(BeNil())
			g.Expect(policy.Check(manifest, own)).To(Succeed())

			other := own
			other.BareNames = expect("other").BareNames
			g.Expect(policy.Check(manifest, other)).To(MatchError(ContainSubstring("name: Service")),
				"another instance's headless Service")
			search := *own.BareNames
			search.Search = other.BareNames.Search
			other.BareNames = &search
			g.Expect(policy.Check(manifest, other)).To(MatchError(ContainSubstring("bare-names")),
				"another instance's search domain")
		})
	}
}
