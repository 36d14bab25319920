package builders

import (
	"go/build"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// TestTemplates: Template fills in an image of the template's own and one
// port, then the edits in order, skipping a nil one; BareTemplate sets only
// what its edits do.
func TestTemplates(t *testing.T) {
	g := NewWithT(t)
	pooled := func(s *ctfv1alpha1.ChallengeTemplateSpec) { s.Pool = &ctfv1alpha1.PoolSpec{Max: 2} }
	tmpl := Template("web", pooled, nil, func(s *ctfv1alpha1.ChallengeTemplateSpec) { s.Pool.Min = 1 })
	g.Expect(tmpl.Name).To(Equal("web"))
	g.Expect(tmpl.Spec.Image).To(Equal("registry.example/ctf/web:1"))
	g.Expect(tmpl.Spec.Ports).To(Equal([]ctfv1alpha1.ChallengePort{{Name: "nc", Port: 1337}}))
	g.Expect(tmpl.Spec.Pool).To(Equal(&ctfv1alpha1.PoolSpec{Min: 1, Max: 2}), "the edits apply in order")

	g.Expect(Template("pwn", func(s *ctfv1alpha1.ChallengeTemplateSpec) { s.Image = "registry.example/pwn:2" }).Spec.Image).
		To(Equal("registry.example/pwn:2"), "an edit overrides a default")

	bare := BareTemplate("web", pooled)
	g.Expect(bare.Spec).To(Equal(ctfv1alpha1.ChallengeTemplateSpec{Pool: &ctfv1alpha1.PoolSpec{Max: 2}}))
}

// TestChallenges: Challenge is valid without a template, FromTemplate names
// one, and the options set what they say, in order.
func TestChallenges(t *testing.T) {
	g := NewWithT(t)
	ch := Challenge("ctf", "web-intro", "team-a")
	g.Expect(ch.Namespace + "/" + ch.Name).To(Equal("ctf/web-intro"))
	g.Expect(ch.Spec).To(Equal(ctfv1alpha1.ChallengeSpec{Participant: "team-a", Image: "registry.example/ctf/web-intro:1.0",
		Ports: []ctfv1alpha1.ChallengePort{{Name: "http", Port: 8080}}}))

	at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	ch = FromTemplate("ctf", "web-a", "team-a", "web", UID("uid-a"), Created(at), nil,
		Labelled(ctfv1alpha1.ParticipantLabel, "team-a"), Labelled(ctfv1alpha1.CreatedByLabel, "instancer"),
		Annotated(ctfv1alpha1.TemplateGenerationAnnotation, "2"))
	g.Expect(ch.Spec).To(Equal(ctfv1alpha1.ChallengeSpec{Participant: "team-a", Template: "web"}))
	g.Expect(ch.UID).To(BeEquivalentTo("uid-a"))
	g.Expect(ch.CreationTimestamp.Time).To(Equal(at))
	g.Expect(ch.Labels).To(Equal(map[string]string{ctfv1alpha1.ParticipantLabel: "team-a", ctfv1alpha1.CreatedByLabel: "instancer"}))
	g.Expect(ch.Annotations).To(Equal(map[string]string{ctfv1alpha1.TemplateGenerationAnnotation: "2"}))
}

// TestImportsTheAPIOnly: the package imports the API, apimachinery and the
// standard library only, so that a test of any package but the API's own
// may import it without a cycle.
func TestImportsTheAPIOnly(t *testing.T) {
	g := NewWithT(t)
	pkg, err := build.ImportDir(".", 0)
	g.Expect(err).NotTo(HaveOccurred())
	for _, imp := range pkg.Imports {
		std := !strings.Contains(strings.Split(imp, "/")[0], ".")
		g.Expect(std || strings.HasPrefix(imp, "k8s.io/apimachinery/") ||
			imp == "github.com/challenge-operator/challenge-operator/api/v1alpha1").To(BeTrue(), "builders imports %s", imp)
	}
}
