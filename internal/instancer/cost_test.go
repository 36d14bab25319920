package instancer_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/instancer"
)

// holdFinalizer keeps a stopped instance stopping until the test lets go.
const holdFinalizer = "instancer-test.example/hold"

// TestRefusalsAndRepeatedStopsCostNoAPIRequests: 600 refused starts and
// renewals cost 601 reads of the team's Lease, and 200 stops of an
// instance already stopping 490 writes. A refusal the replica already knows
// of, and a stop of an instance already stopping, now cost the API server
// nothing, however many.
func TestRefusalsAndRepeatedStopsCostNoAPIRequests(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const n = 300
	tmpl := startableTemplate(t, nil)
	srv, requests := newCountedServer(instancer.Options{StartsPerMinute: startsPerMinute, Cooldown: time.Minute, RenewInterval: time.Minute})
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	team := uniqueName("team")
	tok := mint(t, team)
	start := map[string]string{"template": tmpl}
	// burst sends n requests and returns their codes and the API requests
	// they cost.
	burst := func(method, path string, body any) (map[int]int, int64) {
		before := requests.Load()
		codes := map[int]int{}
		for range n {
			codes[callAt(t, ts.URL, tok, method, path, body, nil)]++
		}
		return codes, requests.Load() - before
	}

	var inst instancer.Instance
	g.Expect(callAt(t, ts.URL, tok, "POST", "/api/v1/instances", start, &inst)).To(Equal(http.StatusCreated))
	g.Eventually(func() int { return callAt(t, ts.URL, tok, "GET", instancePath(tmpl), nil, nil) }, timeout, interval).Should(Equal(http.StatusOK))
	g.Expect(callAt(t, ts.URL, tok, "POST", instancePath(tmpl)+"/renew", nil, nil)).To(Equal(http.StatusOK))

	codes, cost := burst("POST", instancePath(tmpl)+"/renew", nil)
	t.Logf("%d refused renewals: %d API requests", n, cost)
	g.Expect(codes).To(Equal(map[int]int{http.StatusTooManyRequests: n}))
	g.Expect(cost).To(BeZero(), "refused renewals")

	// The instance stays stopping while the test holds it.
	ch := &ctfv1alpha1.Challenge{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: instancesNamespace, Name: inst.Name}, ch)).To(Succeed())
	patch := client.MergeFrom(ch.DeepCopy())
	ch.Finalizers = append(ch.Finalizers, holdFinalizer)
	g.Expect(k8s.Patch(ctx, ch, patch)).To(Succeed())
	g.Expect(callAt(t, ts.URL, tok, "DELETE", instancePath(tmpl), nil, nil)).To(Equal(http.StatusAccepted))
	g.Eventually(func(g Gomega) {
		var got instancer.Instance
		g.Expect(callAt(t, ts.URL, tok, "GET", instancePath(tmpl), nil, &got)).To(Equal(http.StatusOK))
		g.Expect(got.Phase).To(Equal("Deleted"))
	}, timeout, interval).Should(Succeed())

	codes, cost = burst("DELETE", instancePath(tmpl), nil)
	t.Logf("%d stops of a stopping instance: %d API requests", n, cost)
	g.Expect(codes).To(Equal(map[int]int{http.StatusAccepted: n}))
	g.Expect(cost).To(BeZero(), "stops of an instance already stopping")
	codes, cost = burst("POST", "/api/v1/instances", start)
	t.Logf("%d starts while it stops: %d API requests", n, cost)
	g.Expect(codes).To(Equal(map[int]int{http.StatusConflict: n}))
	g.Expect(cost).To(BeZero(), "starts while the instance stops")

	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), ch)).To(Succeed())
	patch = client.MergeFrom(ch.DeepCopy())
	ch.Finalizers = nil
	g.Expect(k8s.Patch(ctx, ch, patch)).To(Succeed())
	g.Eventually(func() int { return callAt(t, ts.URL, tok, "POST", "/api/v1/instances", start, nil) }, timeout, interval).
		Should(Equal(http.StatusTooManyRequests), "the cooldown, once the instance is gone")
	codes, cost = burst("POST", "/api/v1/instances", start)
	t.Logf("%d starts in the cooldown: %d API requests", n, cost)
	g.Expect(codes).To(Equal(map[int]int{http.StatusTooManyRequests: n}))
	g.Expect(cost).To(BeZero(), "starts refused by the cooldown")
	g.Expect(challengesOf(t, team)).To(BeEmpty())
}

// TestEventStreamOpensAreRateLimitedPerTeam: 100 opens of an event stream
// in 5 s by one team were all served. A team's opens now draw on a bucket
// (429 with Retry-After once empty); another team keeps its own.
func TestEventStreamOpensAreRateLimitedPerTeam(t *testing.T) {
	g := NewWithT(t)
	tmpl := startableTemplate(t, nil)
	tok := mint(t, uniqueName("team"))
	open := func(tok string) (int, string) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", api.URL+instancePath(tmpl)+"/events", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		res, err := http.DefaultClient.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		defer func() { _ = res.Body.Close() }()
		instancer.CheckStream(t, req, res)
		return res.StatusCode, res.Header.Get("Retry-After")
	}
	began := time.Now()
	served, limited := 0, 0
	for range 100 {
		code, retry := open(tok)
		switch code {
		case http.StatusOK:
			served++
		case http.StatusTooManyRequests:
			limited++
			wait, err := strconv.Atoi(retry)
			g.Expect(err).NotTo(HaveOccurred(), "Retry-After in seconds")
			g.Expect(wait).To(BeNumerically(">=", 1))
		}
	}
	elapsed := time.Since(began)
	t.Logf("100 opens in %s: %d served, %d refused", elapsed, served, limited)
	g.Expect(served + limited).To(Equal(100))
	g.Expect(served).To(BeNumerically("<=", 16+int(elapsed.Seconds()/2)+1), "a burst, then one every 2 s")
	code, _ := open(mint(t, uniqueName("other")))
	g.Expect(code).To(Equal(http.StatusOK), "another team's opens are its own")
}
