package challenge

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
	"github.com/challenge-operator/challenge-operator/test/controlplane"
)

// emptyCache is a cache that has not seen the Challenge yet.
type emptyCache struct{ client.Reader }

func (emptyCache) Get(_ context.Context, key client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
	return apierrors.NewNotFound(schema.GroupResource{Group: ctfv1alpha1.GroupVersion.Group, Resource: "challenges"}, key.Name)
}

// TestStatusWriterPaths runs each path the status writer takes against a
// real API server, counting its status writes and Events: the first write,
// nothing to write, a status computed from a stale cache (a conflict, then a
// live read and a second write; without a live reader the conflict is
// returned), a cache that has not seen the Challenge, a teardown's Deleted
// written once and then left alone, and a renewal. It found the kstatus
// condition's lastTransitionTime moving at every recompute, so that a
// status with nothing new was written again.
func TestStatusWriterPaths(t *testing.T) {
	cfg, plain := controlplane.StartAPIServer(t)
	ctx := context.Background()

	type env struct {
		cl     client.Client
		before *ctfv1alpha1.Challenge // as the cache holds it when the case acts
	}
	installing := func(g Gomega, _ env, w *StatusWriter, ch *ctfv1alpha1.Challenge) {
		g.Expect(w.MarkReleasing(ctx, asUnstructured(ch), lifecycle.Installing)).To(Succeed())
	}
	markInstalling := func(w *StatusWriter, ch *ctfv1alpha1.Challenge) error {
		return w.MarkReleasing(ctx, asUnstructured(ch), lifecycle.Installing)
	}
	markUpgrading := func(w *StatusWriter, ch *ctfv1alpha1.Challenge) error {
		return w.MarkReleasing(ctx, asUnstructured(ch), lifecycle.Upgrading)
	}
	refresh := func(w *StatusWriter, ch *ctfv1alpha1.Challenge) error { return w.Refresh(ctx, ch) }
	cases := []struct {
		name string
		// prepare brings the Challenge (created with spec) to where the case starts.
		spec    func(*ctfv1alpha1.ChallengeSpec)
		prepare func(g Gomega, e env, w *StatusWriter, ch *ctfv1alpha1.Challenge)
		// cache is what the writer's Reader sees, by default e.before: the
		// Challenge as prepared, or as created with staleCache. live:
		// whether the writer has a live reader.
		cache      func(e env) client.Reader
		staleCache bool
		live       bool
		act        func(w *StatusWriter, ch *ctfv1alpha1.Challenge) error

		wantErr    func(error) bool
		wantWrites int
		wantPhase  ctfv1alpha1.Phase
		wantReason string
		wantEvents []string // reasons, in order
		check      func(g Gomega, got *ctfv1alpha1.Challenge)
	}{{
		name:       "first write",
		live:       true,
		act:        markInstalling,
		wantWrites: 1, wantPhase: ctfv1alpha1.PhasePending, wantReason: string(lifecycle.Installing), wantEvents: []string{"Installing"},
	}, {
		name:       "nothing changed: no write, no Event",
		prepare:    installing,
		live:       true,
		act:        markInstalling,
		wantWrites: 0, wantPhase: ctfv1alpha1.PhasePending, wantReason: string(lifecycle.Installing),
	}, {
		name:       "stale cache: a conflict, a live read, a second write",
		prepare:    installing,
		staleCache: true,
		live:       true,
		act:        markUpgrading,
		wantWrites: 2, wantPhase: ctfv1alpha1.PhasePending, wantReason: string(lifecycle.Upgrading), wantEvents: []string{"Upgrading"},
	}, {
		name:       "stale cache without a live reader: the conflict is returned",
		prepare:    installing,
		staleCache: true,
		act:        markUpgrading,
		wantErr:    apierrors.IsConflict,
		wantWrites: 1, wantPhase: ctfv1alpha1.PhasePending, wantReason: string(lifecycle.Installing),
	}, {
		name:       "a cache that has not seen the Challenge: read live",
		cache:      func(env) client.Reader { return emptyCache{} },
		live:       true,
		act:        markInstalling,
		wantWrites: 1, wantPhase: ctfv1alpha1.PhasePending, wantReason: string(lifecycle.Installing), wantEvents: []string{"Installing"},
	}, {
		name: "torn down: Deleted written once",
		prepare: func(g Gomega, e env, w *StatusWriter, ch *ctfv1alpha1.Challenge) {
			g.Expect(w.MarkReleasing(ctx, asUnstructured(ch), lifecycle.Installing)).To(Succeed())
			g.Expect(e.cl.Delete(ctx, ch)).To(Succeed()) // its finalizer keeps it
		},
		live:       true,
		act:        refresh,
		wantWrites: 1, wantPhase: ctfv1alpha1.PhaseDeleted, wantEvents: []string{lifecycle.ReasonUninstalling},
	}, {
		name: "torn down, again: no write",
		prepare: func(g Gomega, e env, w *StatusWriter, ch *ctfv1alpha1.Challenge) {
			g.Expect(e.cl.Delete(ctx, ch)).To(Succeed())
			g.Expect(e.cl.Get(ctx, client.ObjectKeyFromObject(ch), ch)).To(Succeed())
			g.Expect(w.Refresh(ctx, ch)).To(Succeed())
		},
		live:       true,
		act:        refresh,
		wantWrites: 0, wantPhase: ctfv1alpha1.PhaseDeleted,
	}, {
		name: "a renewal: counted, expiry moved, an Event",
		spec: func(s *ctfv1alpha1.ChallengeSpec) { s.Lifetime = &metav1.Duration{Duration: time.Hour} },
		prepare: func(g Gomega, e env, w *StatusWriter, ch *ctfv1alpha1.Challenge) {
			g.Expect(w.Refresh(ctx, ch)).To(Succeed()) // expiry computed first
			g.Expect(e.cl.Get(ctx, client.ObjectKeyFromObject(ch), ch)).To(Succeed())
			// Times are kept to the second: renew a second after the creation.
			g.Eventually(time.Now, 5*time.Second, 20*time.Millisecond).Should(BeTemporally(">=", ch.CreationTimestamp.Add(time.Second)))
			renewedAt := metav1.NewTime(time.Now().Truncate(time.Second))
			patch := client.MergeFrom(ch.DeepCopy())
			ch.Spec.RenewedAt = &renewedAt
			g.Expect(e.cl.Patch(ctx, ch, patch)).To(Succeed())
		},
		live:       true,
		act:        refresh,
		wantWrites: 1, wantPhase: ctfv1alpha1.PhasePending, wantEvents: []string{lifecycle.ReasonRenewed},
		check: func(g Gomega, got *ctfv1alpha1.Challenge) {
			g.Expect(got.Status.Renewals).To(Equal(int32(1)))
			g.Expect(got.Status.RenewedAt).NotTo(BeNil())
			g.Expect(got.Status.ExpiresAt.Time).To(Equal(got.Status.RenewedAt.Add(time.Hour)), "a lifetime after the renewal")
			g.Expect(got.Status.ExpiresAt.Time).To(BeTemporally(">", got.CreationTimestamp.Add(time.Hour)))
		},
	}}

	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			name := "paths-" + string(rune('a'+i))
			ch := webChallenge(name, "team-"+name)
			ch.Finalizers = []string{"test.challenge-operator.io/hold"}
			if tc.spec != nil {
				tc.spec(&ch.Spec)
			}
			g.Expect(plain.Create(ctx, ch)).To(Succeed())
			t.Cleanup(func() {
				_ = plain.Patch(ctx, ch, client.RawPatch("application/merge-patch+json", []byte(`{"metadata":{"finalizers":null}}`)))
				_ = plain.Delete(ctx, ch)
			})
			e := env{cl: plain, before: ch.DeepCopy()}
			if tc.prepare != nil {
				prep := &StatusWriter{Client: plain, Reader: plain, Live: plain, Observer: &Observer{Reader: plain}}
				tc.prepare(g, e, prep, ch)
				if !tc.staleCache {
					g.Expect(plain.Get(ctx, client.ObjectKeyFromObject(ch), e.before)).To(Succeed())
				}
				g.Expect(plain.Get(ctx, client.ObjectKeyFromObject(ch), ch)).To(Succeed())
			}

			writes := 0
			watched, err := client.NewWithWatch(cfg, client.Options{Scheme: plain.Scheme()})
			g.Expect(err).NotTo(HaveOccurred())
			counting := interceptor.NewClient(watched, interceptor.Funcs{
				SubResourceApply: func(ctx context.Context, c client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
					writes++
					return c.SubResource(sub).Apply(ctx, obj, opts...)
				},
			})
			recorder := events.NewFakeRecorder(10)
			var cache client.Reader = lastStatus{ch: e.before}
			if tc.cache != nil {
				cache = tc.cache(e)
			}
			w := &StatusWriter{Client: counting, Reader: cache, Observer: &Observer{Reader: plain}, Recorder: recorder}
			if tc.live {
				w.Live = plain
			}
			err = tc.act(w, ch)
			if tc.wantErr != nil {
				g.Expect(err).To(Satisfy(tc.wantErr))
			} else {
				g.Expect(err).NotTo(HaveOccurred())
			}
			g.Expect(writes).To(Equal(tc.wantWrites), "status writes")

			got := &ctfv1alpha1.Challenge{}
			g.Expect(plain.Get(ctx, client.ObjectKeyFromObject(ch), got)).To(Succeed())
			g.Expect(got.Status.Phase).To(Equal(tc.wantPhase))
			if tc.wantReason != "" {
				g.Expect(got.Status.Reason).To(Equal(tc.wantReason))
			}
			close(recorder.Events)
			var reasons []string
			for ev := range recorder.Events {
				reasons = append(reasons, strings.Fields(ev)[1]) // "Type Reason Note"
			}
			g.Expect(reasons).To(Equal(tc.wantEvents), "Events")
			if tc.check != nil {
				tc.check(g, got)
			}
		})
	}
}

// asUnstructured is ch as the Helm reconciler holds it.
func asUnstructured(ch *ctfv1alpha1.Challenge) *unstructured.Unstructured {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ch)
	if err != nil {
		panic(err)
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetGroupVersionKind(ctfv1alpha1.GroupVersion.WithKind("Challenge"))
	return u
}

// TestOwnWritesAnswerALaggingCache: the writer writes a status, then is
// asked again while the cache still holds the Challenge as it was before
// that write, as when the instance's next change reaches the status
// controller first; in a burst, a quarter of the installs. Recomputed from
// the status before, the status was written again at the old
// resourceVersion: a conflict (there is no live reader here, so it fails
// the test). The writer knows its own write: nothing new, nothing written;
// something new (the Helm reconciler's upgrade) is written at once.
func TestOwnWritesAnswerALaggingCache(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cfg, plain := controlplane.StartAPIServer(t)
	ch := webChallenge("lagging", "team-lagging")
	g.Expect(plain.Create(ctx, ch)).To(Succeed())
	stale := ch.DeepCopy() // all the cache holds throughout

	watched, err := client.NewWithWatch(cfg, client.Options{Scheme: plain.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	writes := 0
	counting := interceptor.NewClient(watched, interceptor.Funcs{
		SubResourceApply: func(ctx context.Context, c client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
			writes++
			return c.SubResource(sub).Apply(ctx, obj, opts...)
		},
	})
	w := &StatusWriter{Client: counting, Reader: lastStatus{ch: stale}, Observer: &Observer{Reader: plain}}

	g.Expect(w.Refresh(ctx, stale.DeepCopy())).To(Succeed())
	g.Expect(writes).To(Equal(1), "the first status")
	g.Expect(w.Refresh(ctx, stale.DeepCopy())).To(Succeed(), "recomputed from the cache before the write")
	g.Expect(writes).To(Equal(1), "nothing new: no write")

	g.Expect(w.MarkReleasing(ctx, asUnstructured(stale), lifecycle.Upgrading)).To(Succeed(), "the Helm reconciler's write, from the same cache")
	g.Expect(writes).To(Equal(2))
	got := &ctfv1alpha1.Challenge{}
	g.Expect(plain.Get(ctx, client.ObjectKeyFromObject(ch), got)).To(Succeed())
	g.Expect(got.Status.Reason).To(Equal(string(lifecycle.Upgrading)))

	// Once the cache holds the write, nothing of it is kept.
	w.caughtUp(got.DeepCopy())
	_, kept := w.written.Load(client.ObjectKeyFromObject(ch))
	g.Expect(kept).To(BeFalse(), "the write is forgotten once the cache holds it")
}
