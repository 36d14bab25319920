package instancer

import (
	"context"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// countingMiss stands for a cache or an API server without the object, and
// counts the reads it answers.
type countingMiss struct {
	client.Reader
	gets atomic.Int32
}

func (c *countingMiss) Get(_ context.Context, key client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
	c.gets.Add(1)
	return apierrors.NewNotFound(ctfv1alpha1.GroupVersion.WithResource("challenges").GroupResource(), key.Name)
}

// TestAbsentInstanceCostsBoundedLiveReads: 200 requests on an absent
// instance cost 200 reads of the API server; now a team's cache misses
// read through only within its budget, and another team keeps its own.
func TestAbsentInstanceCostsBoundedLiveReads(t *testing.T) {
	g := NewWithT(t)
	cache, live := &countingMiss{}, &countingMiss{}
	reads := liveReads{live: live}
	ctx := context.Background()
	for range 200 {
		err := reads.reader(cache, "team-a").Get(ctx, client.ObjectKey{Name: "absent"}, &ctfv1alpha1.Challenge{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue())
	}
	g.Expect(cache.gets.Load()).To(BeEquivalentTo(200), "the cache answers every request")
	t.Logf("live reads for 200 requests: %d", live.gets.Load())
	g.Expect(live.gets.Load()).To(BeNumerically("<=", liveReadsBurst+liveReadsPerSecond), "the API server only within the budget")

	before := live.gets.Load()
	_ = reads.reader(cache, "team-b").Get(ctx, client.ObjectKey{Name: "absent"}, &ctfv1alpha1.Challenge{})
	g.Expect(live.gets.Load()).To(Equal(before+1), "another team's budget is its own")
}
