package challenge

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
	"github.com/challenge-operator/challenge-operator/test/controlplane"
)

// webChallenge is a Challenge of one web port in namespace default.
func webChallenge(name, participant string) *ctfv1alpha1.Challenge {
	ch := &ctfv1alpha1.Challenge{}
	ch.Namespace, ch.Name = "default", name
	ch.Spec = ctfv1alpha1.ChallengeSpec{Participant: participant, Image: "registry.example/ctf/web:1",
		Ports: []ctfv1alpha1.ChallengePort{{Name: "http", Port: 8080}}}
	return ch
}

// TestStatusAfterTheFinalizerNeedsNoRetry: the Helm reconciler patches its
// finalizer, then writes the status while the cache still holds the
// Challenge as it was before the patch. The finalizer patch goes out alone
// (the converted Challenge is never sent back whole), and the status is
// written at the patch's resourceVersion the first time: no conflict, no
// read from the API server (Live is nil here, so a conflict fails the test).
func TestStatusAfterTheFinalizerNeedsNoRetry(t *testing.T) {
	ctx := context.Background()
	_, cl := controlplane.StartAPIServer(t)

	ch := webChallenge("finalized", "team-f")
	if err := cl.Create(ctx, ch); err != nil {
		t.Fatal(err)
	}
	stale := ch.DeepCopy() // what the cache holds: the Challenge before the patch
	writer := &StatusWriter{Client: cl, Reader: lastStatus{Reader: cl, ch: stale}, Observer: &Observer{Reader: cl}}
	helm := &StatusClient{Client: cl, Writer: writer}

	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ch)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(ctfv1alpha1.GroupVersion.WithKind("Challenge"))
	u.SetFinalizers([]string{"uninstall-helm-release"})
	if err := helm.Update(ctx, u); err != nil {
		t.Fatal(err)
	}
	if u.GetResourceVersion() == stale.ResourceVersion {
		t.Fatal("the finalizer patch left the resourceVersion unchanged")
	}
	if err := writer.MarkReleasing(ctx, u, lifecycle.Installing); err != nil {
		t.Fatalf("status after the finalizer patch: %v", err)
	}
	got := &ctfv1alpha1.Challenge{}
	if err := cl.Get(ctx, client.ObjectKeyFromObject(ch), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != ctfv1alpha1.PhasePending || got.Status.Reason != string(lifecycle.Installing) {
		t.Errorf("status %s/%s, want Pending/Installing", got.Status.Phase, got.Status.Reason)
	}
	if len(got.Finalizers) != 1 || got.Spec.Image != ch.Spec.Image {
		t.Errorf("finalizers %v, image %q: the patch changed more than the finalizers", got.Finalizers, got.Spec.Image)
	}
}

// TestGetOfAChallengeDeletedAndCreatedAgainIsNotFound: once the Helm
// reconciler has removed its finalizer it polls Get of the Challenge it held
// until that is not found (up to 30 s). A Challenge deleted and created again
// under the same name, as a team restarting its instance, must end that wait
// at once: a Get into the old Challenge (its UID) does not find the new one,
// while a Get into an empty object does.
func TestGetOfAChallengeDeletedAndCreatedAgainIsNotFound(t *testing.T) {
	ctx := context.Background()
	_, cl := controlplane.StartAPIServer(t)
	helm := &StatusClient{Client: cl}
	newChallenge := func() *ctfv1alpha1.Challenge { return webChallenge("restarted", "team-r") }
	first := newChallenge()
	if err := cl.Create(ctx, first); err != nil {
		t.Fatal(err)
	}
	held := &unstructured.Unstructured{}
	held.SetGroupVersionKind(ctfv1alpha1.GroupVersion.WithKind("Challenge"))
	if err := helm.Get(ctx, client.ObjectKeyFromObject(first), held); err != nil || held.GetUID() != first.UID {
		t.Fatalf("the first Challenge: uid %q, %v", held.GetUID(), err)
	}
	if err := cl.Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	second := newChallenge()
	if err := cl.Create(ctx, second); err != nil {
		t.Fatal(err)
	}
	if err := helm.Get(ctx, client.ObjectKeyFromObject(first), held); !apierrors.IsNotFound(err) {
		t.Fatalf("Get into the deleted Challenge: %v, want not found (found uid %s)", err, held.GetUID())
	}
	fresh := &unstructured.Unstructured{}
	fresh.SetGroupVersionKind(ctfv1alpha1.GroupVersion.WithKind("Challenge"))
	if err := helm.Get(ctx, client.ObjectKeyFromObject(second), fresh); err != nil || fresh.GetUID() != second.UID {
		t.Fatalf("the second Challenge: uid %q, %v", fresh.GetUID(), err)
	}
}

// TestNothingIsKeptOfAChallengeWhoseLastFinalizerGoes: removing the Helm
// reconciler's finalizer from a deleted Challenge ends it, and its delete
// event may have been handled before the patch returns (Forget), so the
// writer keeps no finalizer step for it; one per deleted instance would
// otherwise pile up over a CTF.
func TestNothingIsKeptOfAChallengeWhoseLastFinalizerGoes(t *testing.T) {
	ctx := context.Background()
	_, cl := controlplane.StartAPIServer(t)
	writer := &StatusWriter{Client: cl, Reader: cl, Observer: &Observer{Reader: cl}}
	helm := &StatusClient{Client: cl, Writer: writer}
	ch := webChallenge("gone", "team-g")
	ch.Finalizers = []string{"uninstall-helm-release"}
	if err := cl.Create(ctx, ch); err != nil {
		t.Fatal(err)
	}
	if err := cl.Delete(ctx, ch); err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(ctfv1alpha1.GroupVersion.WithKind("Challenge"))
	if err := cl.Get(ctx, client.ObjectKeyFromObject(ch), u); err != nil || u.GetDeletionTimestamp() == nil {
		t.Fatalf("the deleted Challenge, held by its finalizer: %v", err)
	}
	u.SetFinalizers(nil)
	if err := helm.Update(ctx, u); err != nil {
		t.Fatal(err)
	}
	if err := cl.Get(ctx, client.ObjectKeyFromObject(ch), &ctfv1alpha1.Challenge{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the Challenge after its last finalizer: %v, want not found", err)
	}
	if _, kept := writer.written.Load(client.ObjectKeyFromObject(ch)); kept {
		t.Error("a finalizer step is kept for a Challenge that is gone")
	}
}

// TestAHelmStatusThatChangesNothingWritesNothing: the Helm reconciler
// writes a status rebuilt from its own read, its conditions and
// deployedRelease alone. Completed, it is the status last written, and
// nothing is sent: it was compared with the reconciler's partial status,
// which always differs (no message, no endpoint), and written again, a
// write the API server found unchanged (an install cost three status
// writes for two phases, seen under load).
func TestAHelmStatusThatChangesNothingWritesNothing(t *testing.T) {
	ctx := context.Background()
	cfg, cl := controlplane.StartAPIServer(t)
	ch := webChallenge("unchanged", "team-u")
	if err := cl.Create(ctx, ch); err != nil {
		t.Fatal(err)
	}
	counted, applies := countingApplies(t, cfg, cl)
	writer := &StatusWriter{Client: counted, Reader: cl, Observer: &Observer{Reader: cl}}
	if err := writer.MarkReleasing(ctx, asHelmHoldsIt(t, cl, ch), lifecycle.Installing); err != nil {
		t.Fatal(err)
	}
	if *applies != 1 {
		t.Fatalf("%d status writes for Pending, want 1", *applies)
	}
	if err := writer.MarkReleasing(ctx, asHelmHoldsIt(t, cl, ch), lifecycle.Installing); err != nil {
		t.Fatal(err)
	}
	if *applies != 1 {
		t.Errorf("%d status writes, want 1: the second status was the first", *applies)
	}
}

// TestAWriteIsRememberedAsStored: the status a write is remembered by,
// until the cache shows it, is the status as the API server stored it, its
// times in whole seconds. Remembered as computed, its times a nanosecond
// apart from those the Helm reconciler reads back, the next status from
// the reconciler differed from it and was written, unchanged (an install's
// Running written twice, seen under load).
func TestAWriteIsRememberedAsStored(t *testing.T) {
	ctx := context.Background()
	cfg, cl := controlplane.StartAPIServer(t)
	ch := webChallenge("remembered", "team-r")
	if err := cl.Create(ctx, ch); err != nil {
		t.Fatal(err)
	}
	stale := ch.DeepCopy() // the cache, which shows none of the writes
	counted, applies := countingApplies(t, cfg, cl)
	writer := &StatusWriter{Client: counted, Reader: lastStatus{Reader: cl, ch: stale}, Observer: &Observer{Reader: cl}}
	for range 2 {
		if err := writer.MarkReleasing(ctx, asHelmHoldsIt(t, cl, ch), lifecycle.Installing); err != nil {
			t.Fatal(err)
		}
	}
	if *applies != 1 {
		t.Errorf("%d status writes, want 1: the second status was the first, as stored", *applies)
	}
}

// countingApplies is a client of the API server at cfg that counts its
// server-side applies of a subresource (status writes).
func countingApplies(t *testing.T, cfg *rest.Config, cl client.Client) (client.Client, *int) {
	t.Helper()
	watching, err := client.NewWithWatch(cfg, client.Options{Scheme: cl.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	applies := new(int)
	return interceptor.NewClient(watching, interceptor.Funcs{
		SubResourceApply: func(ctx context.Context, c client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
			*applies++
			return c.SubResource(sub).Apply(ctx, obj, opts...)
		},
	}), applies
}

// asHelmHoldsIt is ch as the Helm reconciler holds it, read now from cl: its
// status rebuilt as the reconciler's own, the conditions alone.
func asHelmHoldsIt(t *testing.T, cl client.Client, ch *ctfv1alpha1.Challenge) *unstructured.Unstructured {
	t.Helper()
	got := &ctfv1alpha1.Challenge{}
	if err := cl.Get(context.Background(), client.ObjectKeyFromObject(ch), got); err != nil {
		t.Fatal(err)
	}
	got.Status = ctfv1alpha1.ChallengeStatus{Conditions: got.Status.Conditions}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(got)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(ctfv1alpha1.GroupVersion.WithKind("Challenge"))
	return u
}
