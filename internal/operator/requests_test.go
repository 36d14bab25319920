package operator_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/test/builders"
)

// TestAnInstallSendsWhatHelmNeeds holds an install to the API requests it
// needs: the floor's (each object created), Helm's own (its release record
// created, and marked deployed after), the reconciler's finalizer (the webhook's, where it
// serves: internal/webhook), and a status write and an Event per phase
// change. An install sent 23 before: Helm's discovery (GET /version four
// times, /api and /apis), now asked once a minute, and a status write
// marking the install before Helm made it; then 16, with a LIST of the
// release's records, which the cache now answers for a new Challenge
// (action.Records); then 15, with a GET of each object before its create,
// which the cache now answers for the kinds it holds (action.Existence).
func TestAnInstallSendsWhatHelmNeeds(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	discovery := func() int {
		all := h.Requests.All()
		return all["GET /version"] + all["GET /api"] + all["GET /apis"]
	}
	discoveredBefore := discovery()

	rec := record(t, ns, "requests")
	ch := builders.Challenge(ns, "requests", "team-"+ns)
	g.Expect(k8s.Create(ctx, ch)).To(Succeed())
	eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)

	want := map[string]int{
		"POST serviceaccounts": 1, "POST services": 1, "POST deployments": 1, "POST networkpolicies": 1,
		"POST secrets": 1, "PUT secrets": 1,
		"PATCH challenges": 1,
		"POST events":      2,
	}
	requests := func(g Gomega) {
		got := h.Requests.In(ns)
		// Pending, then Running; only Running when the workloads were
		// ready by the time Helm was done.
		g.Expect(got["APPLY challenges/status"]).To(BeNumerically("<=", 2), "status writes: %v; refused: %v; writes: %v; statuses seen: %s", got, h.Requests.FailedIn(ns), h.Requests.StatusWritesIn(ns), rec.steps())
		delete(got, "APPLY challenges/status")
		g.Expect(got).To(Equal(want))
	}
	g.Eventually(requests, timeout, interval).Should(Succeed())
	g.Consistently(requests, time.Second, interval).Should(Succeed())
	// At most one refresh of Helm's discovery, the version twice (its
	// reachability, its capabilities) and the two documents, whatever the
	// rest of the suite is doing meanwhile.
	g.Expect(discovery() - discoveredBefore).To(BeNumerically("<=", 4))
}
