package operator_test

import (
	"context"
	"os"
	"testing"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/test/builders"
	"github.com/challenge-operator/challenge-operator/test/harness"
)

// TestStaticFlagThatCannotRenderIsNeverShown: a static flag whose Secret
// value the chart would refuse (a trailing newline, as echo writes it) once
// failed the chart's schema, and Helm's error quoted the value into the
// status, the phase Event and the operator's log, which every team reads.
// The flag is checked before rendering: Error/FlagInvalid names the Secret
// and key, and the value appears nowhere; fixing the Secret heals it.
func TestStaticFlagThatCannotRenderIsNeverShown(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	const body = "CTF{never-shown-3f9a}"
	secret := harness.OrganiserSecret("flag-newline", map[string][]byte{"web": []byte(body + "\n")})
	g.Expect(k8s.Create(ctx, secret)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), secret) })
	h.Template(t, "tpl-flag-newline", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Flag = &ctfv1alpha1.FlagSpec{Static: &ctfv1alpha1.SecretKeyRef{Namespace: harness.OrganiserNamespace, Name: secret.Name, Key: "web"}}
	})
	ch := builders.FromTemplate(ns, "leaky", "team-leak", "tpl-flag-newline")
	g.Expect(k8s.Create(ctx, ch)).To(Succeed())
	got := eventuallyPhase(t, ch, ctfv1alpha1.PhaseError)
	g.Expect(got.Status.Reason).To(Equal("FlagInvalid"))
	g.Expect(got.Status.Message).To(ContainSubstring(`Secret ctf-organiser/flag-newline key "web"`))
	g.Expect(got.Status.Message).To(ContainSubstring("line break"))

	status, err := client.MergeFrom(&ctfv1alpha1.Challenge{}).Data(got) // the whole object as JSON
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(status)).NotTo(ContainSubstring("never-shown"), "the Challenge")
	var events eventsv1.EventList
	g.Expect(k8s.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
	g.Expect(events.Items).NotTo(BeEmpty())
	for _, e := range events.Items {
		g.Expect(e.Note).NotTo(ContainSubstring("never-shown"), "Event %s", e.Reason)
	}
	logs, err := os.ReadFile(h.LogFile)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(logs)).NotTo(ContainSubstring("never-shown"), "the operator's log")

	secret.Data["web"] = []byte(body)
	g.Expect(k8s.Update(ctx, secret)).To(Succeed())
	// The Secret is not watched: a change to the Challenge (or the backoff) tries again.
	// A patch, not an update: the operator writes the status meanwhile.
	g.Expect(k8s.Patch(ctx, got, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"retry":"1"}}}`)))).To(Succeed())
	eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
}
