package challengetemplate_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/controller/challengetemplate"
	"github.com/challenge-operator/challenge-operator/test/controlplane"
	"github.com/challenge-operator/challenge-operator/test/harness"
)

// statusTemplate creates a template named name with no status written yet.
func statusTemplate(t *testing.T, cl client.Client, name string) *ctfv1alpha1.ChallengeTemplate {
	t.Helper()
	return (&harness.Harness{Client: cl}).Template(t, name, nil)
}

// statusOwners are the managers of tmpl's status fields, with how they wrote them.
func statusOwners(g Gomega, cl client.Client, tmpl *ctfv1alpha1.ChallengeTemplate) []string {
	got := &ctfv1alpha1.ChallengeTemplate{}
	g.Expect(cl.Get(context.Background(), client.ObjectKeyFromObject(tmpl), got)).To(Succeed())
	var owners []string
	for _, m := range got.ManagedFields {
		if m.Subresource == "status" {
			owners = append(owners, m.Manager+" "+string(m.Operation))
		}
	}
	return owners
}

func condition(t string) metav1.Condition {
	return metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: t, Message: t, LastTransitionTime: metav1.Now()}
}

// TestATemplateStatusHasOneOwner: each part of a template's status handed
// to the writer, from a read of the template made before any of them was
// written (a cache that has seen none of its writes), is written once, at
// once (no conflict: there is no live reader to retry with here), and the
// status has one field manager, which applied it. An object emptied (the
// health of a template lifted) is stored empty, not refused as null.
func TestATemplateStatusHasOneOwner(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	_, cl := controlplane.StartAPIServer(t)
	read := statusTemplate(t, cl, "owned")
	w := &challengetemplate.TemplateStatusWriter{Client: cl}
	stale := func() *ctfv1alpha1.ChallengeTemplate { return read.DeepCopy() }

	g.Expect(w.Set(ctx, stale(), func(st *ctfv1alpha1.ChallengeTemplateStatus) { st.ActiveInstances = 3 })).To(Succeed())
	g.Expect(w.Set(ctx, stale(), func(st *ctfv1alpha1.ChallengeTemplateStatus) {
		st.Pool = &ctfv1alpha1.PoolStatus{Size: 2, Ready: 1, Target: 2}
	})).To(Succeed())
	g.Expect(w.Set(ctx, stale(), func(st *ctfv1alpha1.ChallengeTemplateStatus) {
		st.StaticFlags = []ctfv1alpha1.StaticFlagDigest{{Name: "main", Digest: "d1"}}
	})).To(Succeed())
	var wrote []bool
	accept := func(_ context.Context, tmpl *ctfv1alpha1.ChallengeTemplate) (challengetemplate.TemplateDecision, error) {
		apimeta.SetStatusCondition(&tmpl.Status.Conditions, condition("Accepted"))
		tmpl.Status.ObservedGeneration = tmpl.Generation
		return challengetemplate.TemplateDecision{Then: func(_ context.Context, written bool) error {
			wrote = append(wrote, written)
			return nil
		}}, nil
	}
	for range 2 {
		_, err := w.Decide(ctx, client.ObjectKeyFromObject(read), nil, accept)
		g.Expect(err).NotTo(HaveOccurred())
	}
	g.Expect(wrote).To(Equal([]bool{true, false}), "written, then nothing changed and nothing written")

	// A template's health emptied (its failures gone) is stored empty.
	for _, health := range []ctfv1alpha1.TemplateHealth{{Failures: 2, Canary: "web-canary"}, {}} {
		_, err := w.Decide(ctx, client.ObjectKeyFromObject(read), nil, func(_ context.Context, tmpl *ctfv1alpha1.ChallengeTemplate) (challengetemplate.TemplateDecision, error) {
			tmpl.Status.Health = &health
			return challengetemplate.TemplateDecision{}, nil
		})
		g.Expect(err).NotTo(HaveOccurred())
	}

	got := &ctfv1alpha1.ChallengeTemplate{}
	g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(read), got)).To(Succeed())
	g.Expect(got.Status.Health).To(Equal(&ctfv1alpha1.TemplateHealth{}))
	g.Expect(got.Status.ActiveInstances).To(BeEquivalentTo(3))
	g.Expect(got.Status.Pool).To(Equal(&ctfv1alpha1.PoolStatus{Size: 2, Ready: 1, Target: 2}))
	g.Expect(got.Status.StaticFlags).To(HaveLen(1))
	g.Expect(apimeta.IsStatusConditionTrue(got.Status.Conditions, "Accepted")).To(BeTrue())
	g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
	g.Expect(statusOwners(g, cl, read)).To(ConsistOf(challengetemplate.TemplateStatusFieldManager + " Apply"))
}

// TestTheWriterDropsWhatAnEarlierVersionWrote: an earlier version wrote a
// template's status with merge patches, as another field manager. What the
// writer leaves out of the status is gone, though that manager wrote it
// too: a condition no longer true, the pool of a template without one, a
// flag's digest, each left out at its own write, the manager sharing the
// rest.
func TestTheWriterDropsWhatAnEarlierVersionWrote(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	_, cl := controlplane.StartAPIServer(t)
	tmpl := statusTemplate(t, cl, "upgraded")
	patch := client.MergeFrom(tmpl.DeepCopy())
	tmpl.Status = ctfv1alpha1.ChallengeTemplateStatus{
		ActiveInstances: 2,
		Conditions:      []metav1.Condition{condition("Accepted"), condition("Stalled")},
		Pool:            &ctfv1alpha1.PoolStatus{Size: 2},
		StaticFlags:     []ctfv1alpha1.StaticFlagDigest{{Name: "main", Digest: "d1"}, {Name: "bonus", Digest: "d2"}},
	}
	g.Expect(cl.Status().Patch(ctx, tmpl, patch, client.FieldOwner("manager"))).To(Succeed())
	w := &challengetemplate.TemplateStatusWriter{Client: cl, Live: cl}

	_, err := w.Decide(ctx, client.ObjectKeyFromObject(tmpl), nil, func(_ context.Context, tmpl *ctfv1alpha1.ChallengeTemplate) (challengetemplate.TemplateDecision, error) {
		apimeta.RemoveStatusCondition(&tmpl.Status.Conditions, "Stalled")
		return challengetemplate.TemplateDecision{}, nil
	})
	g.Expect(err).NotTo(HaveOccurred())
	read, err := w.Read(ctx, client.ObjectKeyFromObject(tmpl), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(w.Set(ctx, read, func(st *ctfv1alpha1.ChallengeTemplateStatus) { st.Pool = nil })).To(Succeed())
	g.Expect(w.Set(ctx, read, func(st *ctfv1alpha1.ChallengeTemplateStatus) { st.StaticFlags = st.StaticFlags[:1] })).To(Succeed())

	got := &ctfv1alpha1.ChallengeTemplate{}
	g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(tmpl), got)).To(Succeed())
	g.Expect(apimeta.FindStatusCondition(got.Status.Conditions, "Stalled")).To(BeNil())
	g.Expect(apimeta.FindStatusCondition(got.Status.Conditions, "Accepted")).NotTo(BeNil())
	g.Expect(got.Status.Pool).To(BeNil())
	g.Expect(got.Status.StaticFlags).To(Equal([]ctfv1alpha1.StaticFlagDigest{{Name: "main", Digest: "d1"}}))
	g.Expect(got.Status.ActiveInstances).To(BeEquivalentTo(2))
}
