package instancer

import (
	"bytes"
	"testing"

	. "github.com/onsi/gomega"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/flagtag"
	"github.com/challenge-operator/challenge-operator/test/builders"
)

// TestAStaticFlagsPreviousValuesAreCorrect: a static flag is correct at
// its current value and at every previous one the operator holds because
// running instances serve it; not at one it no longer holds, nor at
// another flag's or template's.
func TestAStaticFlagsPreviousValuesAreCorrect(t *testing.T) {
	g := NewWithT(t)
	codec, err := flagtag.New(bytes.Repeat([]byte("k"), 32))
	g.Expect(err).NotTo(HaveOccurred())
	f := &ctfv1alpha1.NamedFlag{Name: "main", Static: &ctfv1alpha1.SecretKeyRef{Name: "s", Key: "flag"}}
	tmpl := builders.BareTemplate("web")
	tmpl.Status.StaticFlags = []ctfv1alpha1.StaticFlagDigest{{Name: "main", Digest: codec.StaticDigest("web", "main", "CTF{now}"),
		Previous: []ctfv1alpha1.PreviousStaticFlag{
			{Digest: codec.StaticDigest("web", "main", "CTF{first}"), Instances: 1},
			{Digest: codec.StaticDigest("web", "main", "CTF{second}"), Instances: 2},
			{Digest: codec.StaticDigest("other", "main", "CTF{other-template}"), Instances: 1},
			{Digest: codec.StaticDigest("web", "extra", "CTF{other-flag}"), Instances: 1},
		}}}
	for submission, want := range map[string]string{
		"CTF{now}": verdictCorrect, " CTF{first}\n": verdictCorrect, "CTF{second}": verdictCorrect,
		"CTF{dropped}": verdictWrong, "CTF{other-template}": verdictWrong, "CTF{other-flag}": verdictWrong, "": verdictWrong,
	} {
		got, ready := judge(codec, tmpl, f, "team-a", submission)
		g.Expect(ready).To(BeTrue())
		g.Expect(got.Verdict).To(Equal(want), "%q", submission)
		g.Expect(got.Accepted).To(Equal(want == verdictCorrect), "%q", submission)
	}
}
