package instancer_test

import (
	"context"
	"net/http"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/instancer"
)

// startOn asks replica r to start template as the holder of tok; it
// returns the status and the error code (empty on success).
func startOn(t *testing.T, r *replica, tok, template string) (int, string) {
	t.Helper()
	var e apiError
	code := callAt(t, r.URL, tok, "POST", "/api/v1/instances", map[string]string{"template": template}, &e)
	return code, e.Code
}

// TestLimitsHoldAcrossReplicasAndRestarts: starts per minute and the
// cooldown after a stop hold whichever replica a request reaches, and after
// both replicas are killed and started again (they are kept in the
// cluster, not in a replica's memory).
func TestLimitsHoldAcrossReplicasAndRestarts(t *testing.T) {
	g := NewWithT(t)
	team := uniqueName("team")
	tok := mint(t, team)
	var tmpls []string
	for range startsPerMinute + 1 {
		tmpls = append(tmpls, startableTemplate(t, nil))
	}
	type answer struct {
		Status int
		Code   string
	}
	start := func(r *replica, tmpl string) answer {
		status, code := startOn(t, r, tok, tmpl)
		return answer{status, code}
	}
	limited := answer{http.StatusTooManyRequests, "rate_limited"}
	coolingDown := answer{http.StatusTooManyRequests, "cooldown"}

	// Three starts, alternating replicas, fill the team's minute.
	g.Expect(start(api, tmpls[0])).To(Equal(answer{http.StatusCreated, ""}))
	g.Expect(start(api2, tmpls[1])).To(Equal(answer{http.StatusCreated, ""}))
	g.Expect(start(api, tmpls[2])).To(Equal(answer{http.StatusCreated, ""}))
	g.Expect(start(api2, tmpls[3])).To(Equal(limited), "the replica that made one start knows of the other's two")
	g.Expect(start(api, tmpls[3])).To(Equal(limited))

	// A stop on one replica; the other holds the cooldown.
	g.Expect(callAt(t, api.URL, tok, "DELETE", instancePath(tmpls[1]), nil, nil)).To(Equal(http.StatusAccepted))
	h.EventuallyGone(t, &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Namespace: instancesNamespace, Name: nameOf(tmpls[1], team)}},
		timeout, "the stopped instance goes")
	// Until that replica's cache sees the instance gone, a start there says
	// "stopping" (and starts nothing); then it is refused: for the full
	// minute it knows of (a refusal it knows costs no request) rather than
	// the cooldown it has not read, which the Lease holds (below).
	g.Eventually(func() answer { return start(api2, tmpls[1]) }, timeout, interval).Should(BeElementOf(coolingDown, limited))

	// Both replicas crash and come back with empty memories.
	api.restart(t)
	api2.restart(t)
	g.Expect(start(api, tmpls[3])).To(Equal(limited), "after a restart")
	g.Expect(start(api2, tmpls[3])).To(Equal(limited), "after a restart")
	g.Expect(start(api, tmpls[1])).To(Equal(coolingDown), "after a restart")
	g.Expect(start(api2, tmpls[1])).To(Equal(coolingDown), "after a restart")
	g.Expect(challengesOf(t, team)).To(HaveLen(2), "two instances: three started, one stopped")

	// The record is one Lease of the team's in the instances' namespace.
	lease := &coordinationv1.Lease{}
	g.Expect(k8s.Get(context.Background(), client.ObjectKey{Namespace: instancesNamespace, Name: "instancer-limits-" + team}, lease)).To(Succeed())
	g.Expect(lease.Labels).To(HaveKeyWithValue(ctfv1alpha1.ParticipantLabel, team))
}

// TestStartsPerMinuteHoldUnderConcurrentStarts: a team firing twice its
// allowance of starts at once, at both replicas, gets exactly its
// allowance; the others wait.
func TestStartsPerMinuteHoldUnderConcurrentStarts(t *testing.T) {
	g := NewWithT(t)
	team := uniqueName("team")
	tok := mint(t, team)
	var tmpls []string
	for range 2 * startsPerMinute {
		tmpls = append(tmpls, startableTemplate(t, nil))
	}
	var wg sync.WaitGroup
	codes := make([]int, len(tmpls))
	errs := make([]string, len(tmpls))
	for i, tmpl := range tmpls {
		r := api
		if i%2 == 1 {
			r = api2
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i], errs[i] = startOn(t, r, tok, tmpl)
		}()
	}
	wg.Wait()
	created, limited := 0, 0
	for i := range codes {
		switch {
		case codes[i] == http.StatusCreated:
			created++
		case codes[i] == http.StatusTooManyRequests && errs[i] == "rate_limited":
			limited++
		}
	}
	g.Expect([]int{created, limited}).To(Equal([]int{startsPerMinute, startsPerMinute}), "codes %v, errors %v", codes, errs)
	g.Expect(challengesOf(t, team)).To(HaveLen(startsPerMinute))
}

// TestRenewalsAreSpacedAcrossReplicas: a team renews an instance at most
// once per --renew-interval, whichever replica it asks (12 renewals in 3 s
// were accepted, each a new generation and a Helm upgrade).
func TestRenewalsAreSpacedAcrossReplicas(t *testing.T) {
	g := NewWithT(t)
	tmpl := startableTemplate(t, nil)
	team := uniqueName("team")
	tok := mint(t, team)
	code, _ := startOn(t, api, tok, tmpl)
	g.Expect(code).To(Equal(http.StatusCreated))
	g.Eventually(func(g Gomega) {
		var inst instancer.Instance
		g.Expect(callAt(t, api2.URL, tok, "GET", instancePath(tmpl), nil, &inst)).To(Equal(http.StatusOK))
	}, timeout, interval).Should(Succeed())

	g.Expect(callAt(t, api.URL, tok, "POST", instancePath(tmpl)+"/renew", nil, nil)).To(Equal(http.StatusOK))
	var e apiError
	g.Expect(callAt(t, api2.URL, tok, "POST", instancePath(tmpl)+"/renew", nil, &e)).To(Equal(http.StatusTooManyRequests))
	g.Expect(e.Code).To(Equal("rate_limited"))
	g.Expect(callAt(t, api.URL, tok, "POST", instancePath(tmpl)+"/renew", nil, &e)).To(Equal(http.StatusTooManyRequests))
}
