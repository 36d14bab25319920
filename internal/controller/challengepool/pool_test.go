package challengepool_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/controller/challengepool"
	"github.com/challenge-operator/challenge-operator/internal/controller/challengetemplate"
	"github.com/challenge-operator/challenge-operator/internal/pool"
	"github.com/challenge-operator/challenge-operator/test/controlplane"
)

// poolUnderTest is the pool controller alone on a real API server, for one
// template, reconciled by hand, its demand's clock read from a variable of
// the test's.
type poolUnderTest struct {
	cl       client.Client
	demand   *pool.Demand
	recorder *events.FakeRecorder
	tmpl     *ctfv1alpha1.ChallengeTemplate
	r        *challengepool.PoolReconciler
}

// startPool starts an API server with the pool's namespace ("pool") and
// a template of that name with that pool, the demand's clock reading *now.
func startPool(t *testing.T, name string, spec *ctfv1alpha1.PoolSpec, now *time.Time) *poolUnderTest {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	tmpl := &ctfv1alpha1.ChallengeTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: ctfv1alpha1.ChallengeTemplateSpec{
			Image: "registry.example/ctf/" + name + ":1",
			Ports: []ctfv1alpha1.ChallengePort{{Name: "nc", Port: 1337}},
			Pool:  spec,
		},
	}
	_, cl := controlplane.StartAPIServer(t)
	g.Expect(cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "pool"}})).To(Succeed())
	// No status yet: the pool controller may write before the template
	// status controller does.
	g.Expect(cl.Create(ctx, tmpl)).To(Succeed())
	p := &poolUnderTest{cl: cl, demand: &pool.Demand{Now: func() time.Time { return *now }}, recorder: events.NewFakeRecorder(100), tmpl: tmpl}
	p.r = &challengepool.PoolReconciler{
		Pools:    &pool.Pools{Namespace: "pool", Reader: cl, Client: cl, Demand: p.demand},
		Status:   &challengetemplate.TemplateStatusWriter{Client: cl, Live: cl},
		Live:     cl,
		Recorder: p.recorder,
	}
	return p
}

// reconcile reconciles the template once and reads its status.pool back,
// an opening's time in UTC (decoded in the local zone).
func (p *poolUnderTest) reconcile(g Gomega) (ctrl.Result, *ctfv1alpha1.PoolStatus) {
	ctx := context.Background()
	res, err := p.r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(p.tmpl)})
	g.Expect(err).NotTo(HaveOccurred())
	got := &ctfv1alpha1.ChallengeTemplate{}
	g.Expect(p.cl.Get(ctx, client.ObjectKeyFromObject(p.tmpl), got)).To(Succeed())
	if st := got.Status.Pool; st != nil && st.Opening != nil {
		st.Opening = &metav1.Time{Time: st.Opening.UTC()}
	}
	return res, got.Status.Pool
}

// pooled lists the pool's Challenges.
func (p *poolUnderTest) pooled(g Gomega) []ctfv1alpha1.Challenge {
	var list ctfv1alpha1.ChallengeList
	g.Expect(p.cl.List(context.Background(), &list, client.InNamespace("pool"))).To(Succeed())
	return list.Items
}

// TestPoolStatusCountsWhatIsLeftAfterAShrink: as demand ages out, the pool
// shrinks to its min, and the template's status.pool.size says how many
// unclaimed instances it holds after the shrink, not before. The pool
// controller runs alone on a real API server, reconciled by hand, with the
// demand's clock moved forward.
func TestPoolStatusCountsWhatIsLeftAfterAShrink(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	p := startPool(t, "shrinking", &ctfv1alpha1.PoolSpec{Min: 1, Max: 4}, &now)
	tmpl := p.tmpl
	demand := p.demand
	reconcileAndRead := func() *ctfv1alpha1.PoolStatus {
		t.Helper()
		_, status := p.reconcile(g)
		return status
	}
	unclaimed := func() int {
		n := 0
		for _, ch := range p.pooled(g) {
			if ch.DeletionTimestamp.IsZero() {
				n++
			}
		}
		return n
	}

	for range 3 {
		demand.Add(tmpl.Name)
	}
	now = now.Add(2 * time.Second) // quiet: the pool's changes are no longer held back
	g.Expect(reconcileAndRead()).To(HaveValue(Equal(ctfv1alpha1.PoolStatus{Size: 3, Ready: 0, Target: 3})), "grown to the demand")
	g.Expect(unclaimed()).To(Equal(3))

	now = now.Add(6 * time.Minute) // the demand ages out of the window
	g.Expect(reconcileAndRead()).To(HaveValue(Equal(ctfv1alpha1.PoolStatus{Size: 1, Ready: 0, Target: 1})), "shrunk to min")
	g.Expect(unclaimed()).To(Equal(1))
}

// TestPoolRefillWaitsForQuiet: while teams claim, the pool is not refilled
// (its creates would load the API server the claims wait on) but its
// status says what it holds; once no team has asked for 2 s, or after 10 s
// of a steady stream, the refill is made, and its installs, which the
// pooled Helm controller holds back on the same rule, are not held back
// again for what the refill has waited already.
func TestPoolRefillWaitsForQuiet(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	p := startPool(t, "refilled", &ctfv1alpha1.PoolSpec{Min: 1, Max: 20}, &now)
	tmpl := p.tmpl
	demand := p.demand
	reconcile := func() (ctrl.Result, *ctfv1alpha1.PoolStatus, []ctfv1alpha1.Challenge) {
		t.Helper()
		res, status := p.reconcile(g)
		return res, status, p.pooled(g)
	}

	// A team's request every second for 9 s: held back, the status as it stands.
	for second := range 10 {
		if second > 0 {
			now = now.Add(time.Second)
		}
		demand.Add(tmpl.Name)
		res, status, pooled := reconcile()
		g.Expect(pooled).To(BeEmpty(), "at %d s", second)
		g.Expect(status).To(HaveValue(Equal(ctfv1alpha1.PoolStatus{Size: 0, Ready: 0, Target: int32(second + 1)})))
		g.Expect(res.RequeueAfter).To(Equal(min(2*time.Second, time.Duration(10-second)*time.Second)))
	}
	// 10 s held back: the refill is made although teams still ask.
	now = now.Add(time.Second)
	demand.Add(tmpl.Name)
	_, status, pooled := reconcile()
	g.Expect(pooled).To(HaveLen(11))
	g.Expect(status).To(HaveValue(Equal(ctfv1alpha1.PoolStatus{Size: 11, Ready: 0, Target: 11})))
	for _, ch := range pooled {
		wait, _ := demand.Hold(client.ObjectKeyFromObject(&ch).String(), 2*time.Second, 10*time.Second)
		g.Expect(wait).To(BeZero(), "%s's install is not held back again", ch.Name)
	}

	// The next request holds the pool back afresh; quiet lets it go at once.
	now = now.Add(time.Second)
	demand.Add(tmpl.Name)
	res, _, pooled := reconcile()
	g.Expect(pooled).To(HaveLen(11))
	g.Expect(res.RequeueAfter).To(Equal(2 * time.Second))
	now = now.Add(2 * time.Second)
	_, status, pooled = reconcile()
	g.Expect(pooled).To(HaveLen(12))
	g.Expect(status).To(HaveValue(Equal(ctfv1alpha1.PoolStatus{Size: 12, Ready: 0, Target: 12})))
}

// TestPoolOpeningWindow: a pool of min 0 holds nothing until its opening's
// window starts, wakes itself at the start (RequeueAfter), grows to the
// opening's size beyond its max and says so (Event PoolOpening,
// status.pool.target and .opening), wakes itself at the end, and then goes
// back to its demand (Event PoolOpeningOver). The pool controller runs
// alone on a real API server, reconciled by hand, with the demand's clock,
// which is the pools', moved forward.
func TestPoolOpeningWindow(t *testing.T) {
	g := NewWithT(t)
	at := time.Date(2026, 11, 28, 18, 0, 0, 0, time.UTC)
	now := at.Add(-2 * time.Hour)
	p := startPool(t, "opening", &ctfv1alpha1.PoolSpec{Min: 0, Max: 1, Opening: &ctfv1alpha1.PoolOpening{
		Time: metav1.NewTime(at), Size: 3, FillBefore: &metav1.Duration{Duration: time.Hour}}}, &now)
	tmpl := p.tmpl
	g.Expect(tmpl.Spec.Pool.Opening.HoldFor).To(Equal(&metav1.Duration{Duration: 30 * time.Minute}), "the CRD's default")
	recorder := p.recorder
	reconcile := func() (time.Duration, *ctfv1alpha1.PoolStatus) {
		t.Helper()
		res, status := p.reconcile(g)
		return res.RequeueAfter, status
	}
	openings := func() []string {
		var out []string
		for {
			select {
			case e := <-recorder.Events:
				if strings.Contains(e, "PoolOpening") {
					out = append(out, e)
				}
			default:
				return out
			}
		}
	}

	wait, status := reconcile()
	g.Expect(status).To(HaveValue(Equal(ctfv1alpha1.PoolStatus{})), "before the window: the demand's target, none")
	g.Expect(wait).To(Equal(time.Hour), "wakes at the window's start")
	g.Expect(openings()).To(BeEmpty())

	now = now.Add(wait)
	wait, status = reconcile()
	g.Expect(status).To(HaveValue(Equal(ctfv1alpha1.PoolStatus{Size: 3, Target: 3, Opening: &metav1.Time{Time: at}})), "the opening's size, above max")
	g.Expect(wait).To(Equal(time.Minute), "the demand's minute comes before the window's end")
	g.Expect(openings()).To(Equal([]string{"Normal PoolOpening growing the pool to 3 for the opening at 2026-11-28T18:00:00Z"}))

	now = at.Add(29*time.Minute + 30*time.Second)
	wait, status = reconcile()
	g.Expect(status).To(HaveValue(Equal(ctfv1alpha1.PoolStatus{Size: 3, Target: 3, Opening: &metav1.Time{Time: at}})), "held until holdFor has passed")
	g.Expect(wait).To(Equal(30*time.Second), "wakes at the window's end")
	g.Expect(openings()).To(BeEmpty(), "announced once")

	now = now.Add(wait)
	wait, status = reconcile()
	g.Expect(status).To(HaveValue(Equal(ctfv1alpha1.PoolStatus{})), "back to the demand")
	g.Expect(wait).To(BeZero(), "no edge left")
	g.Expect(openings()).To(Equal([]string{"Normal PoolOpeningOver the opening at 2026-11-28T18:00:00Z is past: the pool goes back to its demand"}))
	for _, ch := range p.pooled(g) {
		g.Expect(ch.DeletionTimestamp).NotTo(BeNil(), "%s: shrunk away", ch.Name)
	}
}
