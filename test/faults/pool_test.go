package faults_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/pool"
	"github.com/challenge-operator/challenge-operator/test/builders"
)

// TestOperatorKilledMidClaimAndRefill: a template keeps a warm pool; a burst
// of teams claims it while the operator is SIGKILLed right after a claim is
// written (before its claimant's status is) and again while the pool
// refills. Afterwards every team is Running, no pooled instance serves two
// teams, none is claimed by a team that is gone, the pool is whole again,
// and deleting the teams and the template leaves nothing.
func TestOperatorKilledMidClaimAndRefill(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t, "claims")
	poolNs := namespace(t, "ctf-pool")
	operator := func() operatorProcess {
		return startOperator(t, "pool", "--leader-elect=false", "--pool-namespace="+poolNs)
	}
	processes := []operatorProcess{operator()}
	size := int32(sc.Pool)
	tmpl := builders.Template("warm", web, func(s *ctfv1alpha1.ChallengeTemplateSpec) { s.Pool = &ctfv1alpha1.PoolSpec{Min: size, Max: size} })
	g.Expect(k8s.Create(ctx, tmpl)).To(Succeed())
	eventuallyPoolWhole(t, poolNs, size, within(int(size)))

	chs := make([]*ctfv1alpha1.Challenge, sc.Claims)
	for i := range chs {
		chs[i] = builders.FromTemplate(ns, fmt.Sprintf("c-%04d", i), fmt.Sprintf("team-%04d", i), "warm")
	}
	created := make(chan error, 1)
	go func() { created <- createAll(chs) }()

	g.Eventually(func() bool { return len(claimed(g, poolNs)) > 0 }, within(sc.Claims), 10*time.Millisecond).Should(BeTrue())
	t.Log("SIGKILL mid-claim")
	processes[0].Kill()
	processes = append(processes, operator())
	g.Expect(<-created).To(Succeed())

	g.Eventually(func() bool { return refilling(g, poolNs) }, within(sc.Claims), 10*time.Millisecond).Should(BeTrue())
	t.Log("SIGKILL mid-refill")
	killedAt := time.Now()
	processes[1].Kill()
	operator()

	eventuallyAllRunning(t, ns, sc.Claims, within(sc.Claims))
	converged := time.Since(killedAt)
	eventuallyPoolWhole(t, poolNs, size, within(int(size)))

	items, err := challenges(ctx, ns)
	g.Expect(err).NotTo(HaveOccurred())
	servedBy := map[string]string{}
	for _, ch := range items {
		if ref := ch.Status.PooledInstance; ref != nil {
			g.Expect(servedBy).NotTo(HaveKey(ref.Name), "%s and %s share a pooled instance", servedBy[ref.Name], ch.Name)
			servedBy[ref.Name] = ch.Name
		}
	}
	g.Expect(servedBy).NotTo(BeEmpty(), "the pool served some of the burst")
	for name, claimant := range claimed(g, poolNs) {
		g.Expect(servedBy).To(HaveKeyWithValue(name, claimant), "every claim is its claimant's instance: none orphaned")
	}
	t.Logf("%d of %d teams were served by the pool", len(servedBy), sc.Claims)

	teardown := deleteAllAndCheck(t, ns, within(sc.Claims))
	g.Eventually(func() map[string]string { return claimed(g, poolNs) }, within(sc.Claims), interval).Should(BeEmpty(),
		"the teams' pooled instances went with them")
	g.Expect(k8s.Delete(ctx, tmpl)).To(Succeed())
	eventuallyNothingLeft(t, poolNs, within(int(size)))
	report(t, measurement{Fault: "SIGKILL mid-claim and mid-refill", Challenges: sc.Claims, Times: 2, Seconds: seconds([]time.Duration{converged})})
	t.Logf("all Running %s after the last kill; deleted and gone in %s", converged, teardown)
}

// claimed maps the pool's claimed instances to their claimants' names.
func claimed(g Gomega, poolNs string) map[string]string {
	items, err := challenges(context.Background(), poolNs)
	g.Expect(err).NotTo(HaveOccurred())
	out := map[string]string{}
	for _, ch := range items {
		if key, _, ok := pool.Claimant(&ch); ok {
			out[ch.Name] = key.Name
		}
	}
	return out
}

// refilling tells whether the pool holds an unclaimed instance not Running yet.
func refilling(g Gomega, poolNs string) bool {
	items, err := challenges(context.Background(), poolNs)
	g.Expect(err).NotTo(HaveOccurred())
	for _, ch := range items {
		if _, _, ok := pool.Claimant(&ch); !ok && ch.Status.Phase != ctfv1alpha1.PhaseRunning {
			return true
		}
	}
	return false
}

// eventuallyPoolWhole waits until the pool holds size unclaimed instances,
// every one Running.
func eventuallyPoolWhole(t *testing.T, poolNs string, size int32, within time.Duration) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		items, err := challenges(context.Background(), poolNs)
		g.Expect(err).NotTo(HaveOccurred())
		var ready int32
		for _, ch := range items {
			if _, _, ok := pool.Claimant(&ch); !ok && ch.DeletionTimestamp == nil {
				g.Expect(ch.Status.Phase).To(Equal(ctfv1alpha1.PhaseRunning), "%s: %s", ch.Name, ch.Status.Message)
				ready++
			}
		}
		g.Expect(ready).To(Equal(size))
	}, within, interval).Should(Succeed())
}
