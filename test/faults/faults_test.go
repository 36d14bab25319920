package faults_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/test/builders"
)

// busyRelease is what Helm says when a release is left locked by an
// operation that never finished.
const busyRelease = "another operation (install/upgrade/rollback) is in progress"

// leaseAcquired is what client-go's leader election logs once it leads.
const leaseAcquired = "Successfully acquired lease"

// within bounds a convergence of n Challenges on a loaded 2-core machine.
func within(n int) time.Duration { return 90*time.Second + time.Duration(n)*time.Second }

// TestOperatorKilledMidBurst: the operator is SIGKILLed several times during
// a burst: once while a release is pending-install, once while uninstalls
// run, otherwise at random moments. After the last restart every Challenge
// is Running on exactly one release and one set of objects, those deleted
// meanwhile are gone without a trace, and Helm never reports a locked release.
func TestOperatorKilledMidBurst(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t, "killed")
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 0))
	t.Logf("random seed %d", seed)

	// One replica without leader election, as a single-replica install runs:
	// the restarted process takes over at once.
	operator := func() operatorProcess { return startOperator(t, "killed", "--leader-elect=false") }
	processes := []operatorProcess{operator()}

	chs := make([]*ctfv1alpha1.Challenge, sc.Burst)
	for i := range chs {
		chs[i] = challenge(ns, i)
	}
	releases, err := k8s.Watch(ctx, &corev1.SecretList{}, client.InNamespace(ns), client.MatchingLabels{"owner": "helm"})
	g.Expect(err).NotTo(HaveOccurred())
	defer releases.Stop()
	created := make(chan error, 1)
	go func() { created <- createAll(chs) }()

	deleted := 0
	moments := []string{"pending-install", "uninstalling"}
	for len(moments) < sc.Kills {
		moments = append(moments, "random")
	}
	for _, moment := range moments {
		switch moment {
		case "pending-install":
			waitPendingInstall(t, releases)
		case "uninstalling":
			// Delete a tenth of the burst; kill once one of them is being torn down.
			g.Expect(<-created).To(Succeed())
			g.Eventually(func() int { return countPhase(ns, ctfv1alpha1.PhaseRunning) }, within(sc.Burst), interval).
				Should(BeNumerically(">=", sc.Burst/10))
			for _, ch := range chs[deleted : deleted+sc.Burst/10] {
				g.Expect(client.IgnoreNotFound(k8s.Delete(ctx, ch))).To(Succeed())
			}
			deleted += sc.Burst / 10
			g.Eventually(func() bool { return anyTornDown(ctx, ns) }, within(sc.Burst), 20*time.Millisecond).Should(BeTrue())
		case "random":
			time.Sleep(time.Duration(rng.Int64N(int64(3 * time.Second)))) // a random moment, not synchronisation
		}
		t.Logf("SIGKILL at %s", moment)
		processes[len(processes)-1].Kill()
		processes = append(processes, operator())
	}
	killedAt := time.Now()

	eventuallyAllRunning(t, ns, sc.Burst-deleted, within(sc.Burst))
	converged := time.Since(killedAt)
	for _, ch := range chs[:deleted] {
		g.Expect(apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(ch), &ctfv1alpha1.Challenge{}))).To(BeTrue(), "%s was deleted", ch.Name)
	}
	expectOneReleaseEach(t, ns)
	for _, p := range processes {
		g.Expect(p.logContains(busyRelease)).To(BeFalse(), "%s: Helm found a release locked", p.Log)
	}
	teardown := deleteAllAndCheck(t, ns, within(sc.Burst))
	report(t, measurement{Fault: "SIGKILL mid-burst", Challenges: sc.Burst, Times: sc.Kills, Seconds: seconds([]time.Duration{converged})})
	t.Logf("all Running %s after the last kill; all %d deleted and gone in %s", converged, sc.Burst-deleted, teardown)
}

// TestLeaderLostMidBurst: two replicas elect a leader; the leader is killed
// mid-burst, the standby takes over within the lease and everything
// converges. The dead replica comes back as the next standby.
func TestLeaderLostMidBurst(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t, "failover")
	replicas := []operatorProcess{startOperator(t, "replica", "--leader-elect"), startOperator(t, "replica", "--leader-elect")}
	leader := func() int {
		for i, p := range replicas {
			if p.Running() && p.logContains(leaseAcquired) {
				return i
			}
		}
		return -1
	}
	var takeovers, convergences []time.Duration
	total := 0
	for round := range sc.Failovers {
		g.Eventually(leader, 60*time.Second, interval).ShouldNot(Equal(-1), "a replica leads")
		chs := make([]*ctfv1alpha1.Challenge, sc.FailoverBurst)
		for i := range chs {
			chs[i] = challenge(ns, total+i)
		}
		total += len(chs)
		g.Expect(createAll(chs)).To(Succeed())
		g.Eventually(func() int { return countPhase(ns, ctfv1alpha1.PhaseRunning) }, within(total), interval).
			Should(BeNumerically(">=", total-len(chs)+len(chs)/3), "round %d: a third of the burst is Running", round)

		dead := leader()
		replicas[dead].Kill()
		killedAt := time.Now()
		standby := 1 - dead
		g.Eventually(func() bool { return replicas[standby].logContains(leaseAcquired) }, 60*time.Second, interval).
			Should(BeTrue(), "the standby takes over")
		takeovers = append(takeovers, time.Since(killedAt))
		eventuallyAllRunning(t, ns, total, within(total))
		convergences = append(convergences, time.Since(killedAt))
		replicas[dead] = startOperator(t, "replica", "--leader-elect")
	}
	expectOneReleaseEach(t, ns)
	deleteAllAndCheck(t, ns, within(total))
	report(t, measurement{Fault: "leader killed mid-burst: standby leads", Challenges: sc.FailoverBurst, Times: sc.Failovers, Seconds: seconds(takeovers)})
	report(t, measurement{Fault: "leader killed mid-burst: all Running", Challenges: sc.FailoverBurst, Times: sc.Failovers, Seconds: seconds(convergences)})
}

// TestControlPlaneRestart: the control plane (etcd, kube-apiserver, the
// controller-manager and the scheduler, as a control-plane node's reboot) is
// killed and restarted under the running operator, mid-burst; it reconnects
// without exiting, and instances created before, during and after converge.
func TestControlPlaneRestart(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t, "restart")
	operator := startOperator(t, "restart", "--leader-elect")
	var convergences []time.Duration
	total := 0
	for range sc.Restarts {
		chs := make([]*ctfv1alpha1.Challenge, sc.RestartBurst)
		for i := range chs {
			chs[i] = challenge(ns, total+i)
		}
		total += len(chs)
		g.Expect(createAll(chs[:len(chs)/2])).To(Succeed())
		g.Eventually(func() int { return countPhase(ns, ctfv1alpha1.PhaseRunning) }, within(total), interval).
			Should(BeNumerically(">", total-len(chs)), "some of the burst is Running")
		g.Expect(cluster.RestartControlPlane(ctx, time.Second)).To(Succeed())
		restartedAt := time.Now()
		g.Expect(createAll(chs[len(chs)/2:])).To(Succeed())
		eventuallyAllRunning(t, ns, total, within(total))
		convergences = append(convergences, time.Since(restartedAt))
		g.Expect(operator.Running()).To(BeTrue(), "the operator rode out the restart (see %s)", operator.Log)
	}
	expectOneReleaseEach(t, ns)
	deleteAllAndCheck(t, ns, within(total))
	report(t, measurement{Fault: "control plane (etcd, kube-apiserver, controller-manager, scheduler) restarted mid-burst", Challenges: sc.RestartBurst, Times: sc.Restarts, Seconds: seconds(convergences)})
}

// TestMassDeletionAndExpiry: DeleteAll Challenges are deleted at once while
// ExpireAll expire at once (each one's lifetime is cut short: a template's
// shorter lifetime applies only to new instances and renewals); an
// install started meanwhile still reaches Running, and afterwards nothing
// is left: no object with the instance labels, namespaced or cluster-scoped,
// no release record, no finalizer.
func TestMassDeletionAndExpiry(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	deleting, expiring, newcomers := namespace(t, "mass-delete"), namespace(t, "mass-expire"), namespace(t, "newcomers")
	startOperator(t, "mass", "--leader-elect")

	tmpl := builders.Template("mass-expiry", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Image = "registry.example/ctf/mass:1"
		s.Lifetime = &ctfv1alpha1.LifetimePolicy{Default: &metav1.Duration{Duration: time.Hour}}
	})
	g.Expect(k8s.Create(ctx, tmpl)).To(Succeed())
	t.Cleanup(func() { _ = k8s.Delete(ctx, tmpl) })
	chs := make([]*ctfv1alpha1.Challenge, 0, sc.DeleteAll+sc.ExpireAll)
	for i := range sc.DeleteAll {
		chs = append(chs, challenge(deleting, i))
	}
	for i := range sc.ExpireAll {
		ch := builders.FromTemplate(expiring, challenge(expiring, i).Name, challenge(expiring, i).Spec.Participant, tmpl.Name)
		ch.Spec.Lifetime = &metav1.Duration{Duration: time.Hour}
		chs = append(chs, ch)
	}
	g.Expect(createAll(chs)).To(Succeed())
	eventuallyAllRunning(t, deleting, sc.DeleteAll, within(sc.DeleteAll+sc.ExpireAll))
	eventuallyAllRunning(t, expiring, sc.ExpireAll, within(sc.ExpireAll))

	start := time.Now()
	g.Expect(k8s.DeleteAllOf(ctx, &ctfv1alpha1.Challenge{}, client.InNamespace(deleting))).To(Succeed())
	for _, ch := range chs[sc.DeleteAll:] {
		g.Expect(k8s.Patch(ctx, ch, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"lifetime":"1s"}}`)))).To(Succeed())
	}
	newcomer := challenge(newcomers, 0)
	g.Expect(k8s.Create(ctx, newcomer)).To(Succeed())

	newcomerRunning := eventuallyAllRunning(t, newcomers, 1, within(1))
	eventuallyNothingLeft(t, deleting, within(sc.DeleteAll))
	deleted := time.Since(start)
	eventuallyNothingLeft(t, expiring, within(sc.ExpireAll))
	expired := time.Since(start)
	deleteAllAndCheck(t, newcomers, within(1))
	report(t, measurement{Fault: "delete all at once: nothing left", Challenges: sc.DeleteAll, Times: 1, Seconds: seconds([]time.Duration{deleted})})
	report(t, measurement{Fault: "expire all at once (alongside): nothing left", Challenges: sc.ExpireAll, Times: 1, Seconds: seconds([]time.Duration{expired})})
	report(t, measurement{Fault: "install during the mass teardown: Running", Challenges: 1, Times: 1, Seconds: seconds([]time.Duration{newcomerRunning})})
}

// waitPendingInstall returns once a release record is seen pending-install.
func waitPendingInstall(t *testing.T, releases watch.Interface) {
	t.Helper()
	deadline := time.After(within(sc.Burst))
	for {
		select {
		case ev, ok := <-releases.ResultChan():
			if !ok {
				t.Fatal("the release watch ended")
			}
			if s, isSecret := ev.Object.(*corev1.Secret); isSecret && s.Labels["status"] == "pending-install" {
				return
			}
		case <-deadline:
			t.Fatal("no release was ever seen pending-install")
		}
	}
}

// anyTornDown reports whether a Challenge of ns is being deleted by the operator.
func anyTornDown(ctx context.Context, ns string) bool {
	items, err := challenges(ctx, ns)
	if err != nil {
		return false
	}
	for _, ch := range items {
		if ch.DeletionTimestamp != nil && ch.Status.Phase == ctfv1alpha1.PhaseDeleted {
			return true
		}
	}
	return false
}

// TestNamespaceDeletedWithInstances: deleting a namespace that holds
// Challenges leaves nothing behind, their instance namespaces (cluster-scoped,
// owned by no one the garbage collector follows) included.
func TestNamespaceDeletedWithInstances(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t, "doomed")
	startOperator(t, "doomed", "--leader-elect=false")
	const n = 5
	chs := make([]*ctfv1alpha1.Challenge, n)
	for i := range chs {
		chs[i] = challenge(ns, i)
	}
	g.Expect(createAll(chs)).To(Succeed())
	eventuallyAllRunning(t, ns, n, within(n))
	g.Expect(k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	took := eventuallyNothingLeft(t, ns, within(n))
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}))
	}, within(n), interval).Should(BeTrue(), "the namespace itself goes")
	report(t, measurement{Fault: "namespace deleted with its instances: nothing left", Challenges: n, Times: 1, Seconds: seconds([]time.Duration{took})})
}
