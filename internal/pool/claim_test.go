package pool

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apitypes "k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/test/builders"
)

// claimTestPools is a pool of one Running instance of "web" on a fake API
// server whose updates go through update.
func claimTestPools(t *testing.T, update func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.UpdateOption) error) *Pools {
	t.Helper()
	scheme := runtime.NewScheme()
	NewWithT(t).Expect(ctfv1alpha1.AddToScheme(scheme)).To(Succeed())
	pooled := testPooled("web-pool-a", 0, running)
	cl := fake.NewClientBuilder().WithScheme(scheme).WithObjects(&pooled).
		WithIndex(&ctfv1alpha1.Challenge{}, ClaimableField, IndexClaimable).
		WithInterceptorFuncs(interceptor.Funcs{Update: update}).Build()
	return &Pools{Namespace: "pool", Reader: cl, Client: cl, Demand: &Demand{}}
}

func claimantWithUID(uid string) *ctfv1alpha1.Challenge {
	return testClaimant(builders.UID(uid), func(c *ctfv1alpha1.Challenge) { c.Name = uid })
}

// TestClaimsAtOnceNeverTryTheSameInstance: while one claim's update of a
// pooled instance is under way, another claim of the same process skips
// that instance instead of sending an update the API server would refuse
// as a conflict (in a burst of 200 claims, 28 were).
func TestClaimsAtOnceNeverTryTheSameInstance(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	var updates atomic.Int32
	entered, proceed := make(chan struct{}), make(chan struct{})
	p := claimTestPools(t, func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
		if updates.Add(1) == 1 {
			close(entered)
			<-proceed
		}
		return cl.Update(ctx, obj, opts...)
	})
	tmpl := testTemplate(1, 5)

	var wg sync.WaitGroup
	var first *ctfv1alpha1.Challenge
	var firstErr error
	wg.Go(func() { first, firstErr = p.Claim(ctx, claimantWithUID("uid-first"), tmpl) })
	<-entered
	second, err := p.Claim(ctx, claimantWithUID("uid-second"), tmpl)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(second).To(BeNil(), "the only instance is being claimed: none for the second")
	g.Expect(updates.Load()).To(Equal(int32(1)), "the second claim sent no update")
	close(proceed)
	wg.Wait()
	g.Expect(firstErr).NotTo(HaveOccurred())
	g.Expect(first).NotTo(BeNil())
	g.Expect(first.Annotations).To(HaveKeyWithValue(ctfv1alpha1.ClaimantAnnotation, "team-a/uid-first/uid-first"))
}

// TestAClaimRefusedLeavesTheInstanceClaimable: an update refused as a
// conflict (a write since the cache's read, not necessarily a claim) gives
// the reservation up: the next claim tries the instance again and gets it.
func TestAClaimRefusedLeavesTheInstanceClaimable(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	var updates atomic.Int32
	p := claimTestPools(t, func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
		if updates.Add(1) == 1 {
			return apierrors.NewConflict(schema.GroupResource{Group: ctfv1alpha1.GroupVersion.Group, Resource: "challenges"}, obj.GetName(), nil)
		}
		return cl.Update(ctx, obj, opts...)
	})
	tmpl := testTemplate(1, 5)

	refused, err := p.Claim(ctx, claimantWithUID("uid-first"), tmpl)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(refused).To(BeNil())
	claimed, err := p.Claim(ctx, claimantWithUID("uid-second"), tmpl)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(claimed).NotTo(BeNil(), "tried again after the conflict")
	g.Expect(updates.Load()).To(Equal(int32(2)))

	// Claimed: this process skips it while its cache may still show it unclaimed.
	stale := testPooled("web-pool-a", 0, running)
	p.Reader = fake.NewClientBuilder().WithScheme(p.Client.Scheme()).WithObjects(&stale).
		WithIndex(&ctfv1alpha1.Challenge{}, ClaimableField, IndexClaimable).Build()
	again, err := p.Claim(ctx, claimantWithUID("uid-third"), tmpl)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(BeNil())
	g.Expect(updates.Load()).To(Equal(int32(2)), "no update of an instance this process claimed")
}

// TestAClaimTriesItsShardThenThePool: a claim lists its own shard of the
// claimable instances first, and the whole pool when its shard has none it
// could take. A claimant whose shard is empty still gets the pool's one
// instance; one refused in its own shard is not tried again from the whole
// pool: one claim, one update per instance at most.
func TestAClaimTriesItsShardThenThePool(t *testing.T) {
	tmpl := testTemplate(1, 5)
	pooled := testPooled("web-pool-a", 0, running)
	own := shardKey(claimableKey(tmpl), pooled.Name)
	NewWithT(t).Expect(IndexClaimable(&pooled)).To(ConsistOf(claimableKey(tmpl), own))
	conflict := apierrors.NewConflict(schema.GroupResource{Group: ctfv1alpha1.GroupVersion.Group, Resource: "challenges"}, pooled.Name, nil)
	tests := []struct {
		name        string
		claimant    string
		updateErr   error
		wantClaimed bool
	}{
		{"its shard empty: from the whole pool", uidWhere(func(shard string) bool { return shard != own }), nil, true},
		{"refused in its shard: not tried again", uidWhere(func(shard string) bool { return shard == own }), conflict, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var updates atomic.Int32
			p := claimTestPools(t, func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
				updates.Add(1)
				if tt.updateErr != nil {
					return tt.updateErr
				}
				return cl.Update(ctx, obj, opts...)
			})
			claimed, err := p.Claim(context.Background(), claimantWithUID(tt.claimant), tmpl)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(claimed != nil).To(Equal(tt.wantClaimed))
			g.Expect(updates.Load()).To(Equal(int32(1)), "the instance was tried once")
		})
	}
}

// uidWhere is the first of "uid-0", "uid-1", ... whose shard of
// testTemplate's claimable instances wanted accepts.
func uidWhere(wanted func(shard string) bool) string {
	key := claimableKey(testTemplate(1, 5))
	for i := 0; ; i++ {
		if uid := fmt.Sprintf("uid-%d", i); wanted(shardKey(key, uid)) {
			return uid
		}
	}
}

// TestTheClaimantsOfAShardStartApart: the claimants of one shard start
// their candidates (rotation, by their UID's CRC-32) at many of its
// instances. Shards drawn from the same hash made those of a shard of 64
// start at 8 instances at most.
func TestTheClaimantsOfAShardStartApart(t *testing.T) {
	key := claimableKey(testTemplate(1, 5))
	shard := shardKey(key, "uid-0")
	starts := map[int]bool{}
	for i := range 1000 {
		if uid := fmt.Sprintf("uid-%d", i); shardKey(key, uid) == shard {
			starts[rotation(apitypes.UID(uid), 64)] = true
		}
	}
	NewWithT(t).Expect(len(starts)).To(BeNumerically(">", 32), "distinct starts in a shard of 64 instances")
}
