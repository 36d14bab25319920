package instancer_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/controller/challengetemplate"
	"github.com/challenge-operator/challenge-operator/internal/identity"
	"github.com/challenge-operator/challenge-operator/test/harness"
)

// TestAChangedStaticFlagStaysCorrectWhereItIsServed: the organiser changes
// a static flag mid-CTF. A team's instance started before keeps showing
// the value its container read when it started, and that value stays
// correct while the instance runs, for every team (a static flag is the
// same for all), with the organiser told how many instances serve it; a
// new instance gets the new value, which is correct at once. When the last
// instance that served the old value is gone, the old value is wrong.
// Before, the published digest followed the Secret within a minute and the
// team was told wrong for the flag its own instance showed.
func TestAChangedStaticFlagStaysCorrectWhereItIsServed(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const before, after = "CTF{before-the-change}", "CTF{after-the-change}"
	secret := harness.OrganiserSecret("static-"+uniqueName("c"), map[string][]byte{"flag": []byte(before)})
	g.Expect(k8s.Create(ctx, secret)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), secret) })
	tmpl := startableTemplate(t, func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Flags = []ctfv1alpha1.NamedFlag{{Name: "main", Static: &ctfv1alpha1.SecretKeyRef{Namespace: secret.Namespace, Name: secret.Name, Key: "flag"}}}
	})
	early, late := uniqueName("team-e"), uniqueName("team-l")
	running := func(team string) *ctfv1alpha1.Challenge {
		t.Helper()
		tok := mint(t, team)
		g.Expect(call(t, tok, "POST", "/api/v1/instances", map[string]string{"template": tmpl}, nil)).To(Equal(http.StatusCreated))
		ch := &ctfv1alpha1.Challenge{}
		g.Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: instancesNamespace, Name: nameOf(tmpl, team)}, ch)).To(Succeed())
			g.Expect(ch.Status.Phase).To(Equal(ctfv1alpha1.PhaseRunning), "%s: %s", ch.Status.Reason, ch.Status.Message)
		}, timeout, interval).Should(Succeed())
		return ch
	}
	served := func(ch *ctfv1alpha1.Challenge) string {
		t.Helper()
		s := &corev1.Secret{}
		g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ch.Namespace, Name: identity.FlagSecret(ch.Name)}, s)).To(Succeed())
		return string(s.Data["flag.main"])
	}
	verdict := func(g Gomega, team, submission string) string {
		body, _ := json.Marshal(map[string]string{"team": team, "template": tmpl, "flag": "main", "submission": submission})
		var v struct{ Verdict string }
		g.Expect(platformCall(t, api, signed(t, verifyPath, body), verifyPath, body, &v)).To(Equal(http.StatusOK))
		return v.Verdict
	}

	first := running(early)
	g.Expect(served(first)).To(Equal(before))
	g.Eventually(func(g Gomega) { g.Expect(verdict(g, early, before)).To(Equal("correct")) }, timeout, interval).Should(Succeed())

	// The organiser changes the flag. The operator reads it again every
	// minute; an edit of the template makes it read at once.
	secret.Data = map[string][]byte{"flag": []byte(after)}
	g.Expect(k8s.Update(ctx, secret)).To(Succeed())
	nudge := &ctfv1alpha1.ChallengeTemplate{ObjectMeta: metav1.ObjectMeta{Name: tmpl}}
	g.Expect(k8s.Patch(ctx, nudge, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"example.org/touched":"flag"}}}`)))).To(Succeed())

	g.Eventually(func(g Gomega) { g.Expect(verdict(g, late, after)).To(Equal("correct")) }, timeout, interval).Should(Succeed(),
		"the new value is published")
	g.Expect(verdict(g, early, before)).To(Equal("correct"), "the team's instance still shows the old value")
	g.Expect(verdict(g, late, before)).To(Equal("correct"), "a static flag is every team's")
	g.Expect(verdict(g, late, "CTF{neither}")).To(Equal("wrong"))

	current := &ctfv1alpha1.ChallengeTemplate{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Name: tmpl}, current)).To(Succeed())
	g.Expect(current.Status.StaticFlags).To(HaveLen(1))
	g.Expect(current.Status.StaticFlags[0].Previous).To(ConsistOf(HaveField("Instances", int32(1))), "the organiser sees one instance serve it")
	status, err := json.Marshal(current.Status)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(status)).NotTo(Or(ContainSubstring("before-the-change"), ContainSubstring("after-the-change")), "digests only")
	g.Eventually(func(g Gomega) {
		var list eventsv1.EventList
		g.Expect(k8s.List(ctx, &list)).To(Succeed())
		var notes []string
		for _, e := range list.Items {
			if e.Regarding.Name == tmpl && e.Reason == challengetemplate.ReasonStaticFlagChanged {
				notes = append(notes, e.Note)
			}
		}
		g.Expect(notes).To(ConsistOf(And(ContainSubstring("1 running instances still serve"), Not(ContainSubstring("the-change")))))
	}, timeout, interval).Should(Succeed(), "the organiser is told")

	second := running(late)
	g.Expect(served(second)).To(Equal(after), "a new instance gets the new value")

	// The team stops its instance: nothing serves the old value any more.
	g.Expect(call(t, mint(t, early), "DELETE", instancePath(tmpl), nil, nil)).To(Equal(http.StatusAccepted))
	g.Eventually(func(g Gomega) {
		g.Expect(verdict(g, late, before)).To(Equal("wrong"))
		g.Expect(k8s.Get(ctx, client.ObjectKey{Name: tmpl}, current)).To(Succeed())
		g.Expect(current.Status.StaticFlags).To(ConsistOf(HaveField("Previous", BeEmpty())))
	}, timeout, interval).Should(Succeed(), "the old value goes with the last instance that served it")
	g.Expect(verdict(g, late, after)).To(Equal("correct"))
}
