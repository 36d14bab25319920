package operator_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/controller/challenge"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
	"github.com/challenge-operator/challenge-operator/test/builders"
)

// TestFirstStatusSurvivesALaggingCache: the Helm reconciler adds its
// finalizer, then writes the status of a render that failed for good (a
// missing template). When the cache has not yet seen the finalizer, the
// status computed from it is refused as stale. Nothing would write it again:
// a terminal error is never requeued, and the status controller waits for
// this first status. So the writer reads the Challenge again from the API
// server and writes once more; before, the Challenge stayed in phase None.
func TestFirstStatusSurvivesALaggingCache(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	// The operator under test stays out of the way while the writer is
	// driven by hand; it is back before the namespace goes.
	h.Stop()
	t.Cleanup(func() { _ = h.Start() })

	ch := builders.FromTemplate(ns, "lagging", "team-lagging", "tpl-never")
	g.Expect(k8s.Create(ctx, ch)).To(Succeed())
	asCreated := ch.DeepCopy() // all a lagging cache has seen
	controllerutil.AddFinalizer(ch, "uninstall-helm-release")
	g.Expect(k8s.Update(ctx, ch)).To(Succeed())

	held := &unstructured.Unstructured{}
	held.SetGroupVersionKind(ctfv1alpha1.GroupVersion.WithKind("Challenge"))
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), held)).To(Succeed())
	g.Expect(unstructured.SetNestedSlice(held.Object, []any{
		map[string]any{"type": lifecycle.ConditionInitialized, "status": "True", "reason": "", "message": "", "lastTransitionTime": "2026-11-23T10:00:00Z"},
		map[string]any{"type": lifecycle.ConditionIrreconcilable, "status": "True", "reason": "ErrorGettingValues",
			"message": `TemplateNotFound: ChallengeTemplate "tpl-never" does not exist`, "lastTransitionTime": "2026-11-23T10:00:00Z"},
	}, "status", "conditions")).To(Succeed())

	writer := &challenge.StatusWriter{
		Client:   k8s,
		Reader:   laggingCache{Reader: k8s, seen: asCreated},
		Live:     k8s,
		Observer: &challenge.Observer{Reader: k8s},
		Recorder: events.NewFakeRecorder(10),
	}
	statusClient := &challenge.StatusClient{Client: k8s, Writer: writer}
	g.Expect(statusClient.Status().Update(ctx, held)).To(Succeed())

	got := &ctfv1alpha1.Challenge{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), got)).To(Succeed())
	g.Expect(got.Status.Phase).To(Equal(ctfv1alpha1.PhaseError))
	g.Expect(got.Status.Reason).To(Equal(lifecycle.ReasonTemplateNotFound))
	g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, lifecycle.ConditionInitialized)).To(BeTrue())
	g.Expect(got.Finalizers).To(ContainElement("uninstall-helm-release"), "the status write leaves the finalizer alone")
}

// laggingCache answers a Get of a Challenge with the copy it has seen.
type laggingCache struct {
	client.Reader
	seen *ctfv1alpha1.Challenge
}

func (c laggingCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if ch, ok := obj.(*ctfv1alpha1.Challenge); ok && key == client.ObjectKeyFromObject(c.seen) {
		c.seen.DeepCopyInto(ch)
		return nil
	}
	return c.Reader.Get(ctx, key, obj, opts...)
}
