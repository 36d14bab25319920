package operator_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	helmtime "helm.sh/helm/v3/pkg/time"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/controller/challenge"
	"github.com/challenge-operator/challenge-operator/test/builders"
	"github.com/challenge-operator/challenge-operator/test/controlplane"
)

// recorder keeps every status a Challenge is seen in through a watch.
type recorder struct {
	mu       sync.Mutex
	statuses []ctfv1alpha1.ChallengeStatus
	deleted  bool
}

// record watches the Challenge named name in ns until the test ends.
func record(t *testing.T, ns, name string) *recorder {
	t.Helper()
	wc, err := client.NewWithWatch(cluster.Config, client.Options{Scheme: k8s.Scheme()})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	w, err := wc.Watch(context.Background(), &ctfv1alpha1.ChallengeList{}, client.InNamespace(ns),
		client.MatchingFields{"metadata.name": name})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	t.Cleanup(w.Stop)
	r := &recorder{}
	go func() {
		for ev := range w.ResultChan() {
			ch, ok := ev.Object.(*ctfv1alpha1.Challenge)
			if !ok {
				continue
			}
			r.mu.Lock()
			if ev.Type == watch.Deleted {
				r.deleted = true
			} else {
				r.statuses = append(r.statuses, ch.Status)
			}
			r.mu.Unlock()
		}
	}()
	return r
}

func (r *recorder) seen() ([]ctfv1alpha1.ChallengeStatus, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]ctfv1alpha1.ChallengeStatus(nil), r.statuses...), r.deleted
}

// steps lists the statuses seen, each as its phase, reason and message,
// for a failure's message.
func (r *recorder) steps() string {
	statuses, _ := r.seen()
	var out strings.Builder
	for i, st := range statuses {
		fmt.Fprintf(&out, "\n  %s %s %q (observed %d)", st.Phase, st.Reason, st.Message, st.ObservedGeneration)
		for _, c := range st.Conditions {
			fmt.Fprintf(&out, " %s=%s/%s", c.Type, c.Status, c.Reason)
		}
		if i > 0 {
			fmt.Fprintf(&out, "\n    changed: %s", cmp.Diff(statuses[i-1], st))
		}
	}
	return out.String()
}

// phases returns the phases seen, consecutive repeats folded.
func (r *recorder) phases() []ctfv1alpha1.Phase {
	statuses, _ := r.seen()
	var out []ctfv1alpha1.Phase
	for _, st := range statuses {
		if len(out) == 0 || out[len(out)-1] != st.Phase {
			out = append(out, st.Phase)
		}
	}
	return out
}

func TestPhasesGoNonePendingRunningWithoutGaps(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t)
	rec := record(t, ns, "seq")
	ch := builders.Challenge(ns, "seq", "team-seq")
	g.Expect(k8s.Create(context.Background(), ch)).To(Succeed())
	eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)

	g.Eventually(rec.phases, timeout, interval).Should(Equal(
		[]ctfv1alpha1.Phase{ctfv1alpha1.PhaseNone, ctfv1alpha1.PhasePending, ctfv1alpha1.PhaseRunning}))
	statuses, _ := rec.seen()
	for _, st := range statuses {
		ready := meta.FindStatusCondition(st.Conditions, "Ready")
		if st.Phase == ctfv1alpha1.PhaseNone {
			g.Expect(ready).To(BeNil(), "nothing claims readiness before the first reconcile")
			continue
		}
		g.Expect(ready).NotTo(BeNil(), "phase %s has a Ready condition", st.Phase)
		g.Expect(ready.Status == metav1.ConditionTrue).To(Equal(st.Phase == ctfv1alpha1.PhaseRunning),
			"Ready agrees with phase %s", st.Phase)
		if st.Phase == ctfv1alpha1.PhaseRunning {
			g.Expect(st.Endpoint).NotTo(BeNil(), "Running always comes with an endpoint")
		}
	}
	expectEvents(t, ns, "seq", "Ready")

	// A start costs few status writes and Events: the workloads' progress is
	// one message until they are available, and an Event per phase change,
	// none for a step of the start.
	progress := map[string]bool{}
	for _, st := range statuses {
		if st.Reason == "WorkloadsNotReady" {
			progress[st.Message] = true
		}
	}
	g.Expect(len(progress)).To(BeNumerically("<=", 1), "progress messages %v", progress)
	var events eventsv1.EventList
	g.Expect(k8s.List(context.Background(), &events, client.InNamespace(ns))).To(Succeed())
	var reasons []string
	for _, e := range events.Items {
		if e.Regarding.Kind == "Challenge" && e.Regarding.Name == "seq" {
			reasons = append(reasons, e.Reason)
		}
	}
	g.Expect(reasons).To(HaveLen(2), "into Pending, into Running: %v", reasons)
}

func TestUpgradesNeverLoseThePhase(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	ch := builders.Challenge(ns, "upg", "team-upg")
	g.Expect(k8s.Create(ctx, ch)).To(Succeed())
	eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
	rec := record(t, ns, "upg")

	for i := range 10 {
		patch := client.MergeFrom(ch.DeepCopy())
		ch.Spec.Env = []ctfv1alpha1.EnvVar{{Name: "ROUND", Value: fmt.Sprint(i)}}
		g.Expect(k8s.Patch(ctx, ch, patch)).To(Succeed())
		g.Eventually(func(g Gomega) {
			got := &ctfv1alpha1.Challenge{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), got)).To(Succeed())
			ready := meta.FindStatusCondition(got.Status.Conditions, "Ready")
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.ObservedGeneration).To(Equal(got.Generation))
			g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
			g.Expect(got.Status.Phase).To(Equal(ctfv1alpha1.PhaseRunning))
		}, timeout, interval).Should(Succeed(), "round %d", i)
	}

	dep := &appsv1.Deployment{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), dep)).To(Succeed())
	g.Expect(dep.Spec.Template.Spec.Containers[0].Env).To(ContainElement(corev1.EnvVar{Name: "ROUND", Value: "9"}))
	statuses, _ := rec.seen()
	g.Expect(len(statuses)).To(BeNumerically(">=", 10))
	for _, st := range statuses {
		g.Expect(st.Phase).To(BeElementOf(ctfv1alpha1.PhasePending, ctfv1alpha1.PhaseRunning), "no phase is ever lost")
		g.Expect(st.Conditions).NotTo(BeEmpty())
	}
	g.Expect(rec.phases()).To(ContainElement(ctfv1alpha1.PhasePending), "an upgrade shows as Pending while it rolls out")
}

func TestUnpullableImageGivesErrorAndRecovers(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	ch := builders.Challenge(ns, "pull", "team-pull")
	g.Expect(k8s.Create(ctx, ch)).To(Succeed())
	eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)

	// KWOK runs no images: simulate the kubelet's report of a failed pull.
	pod := instancePod(t, ns, "pull")
	running := pod.Status.DeepCopy()
	pod.Status.ContainerStatuses[0].Ready = false
	pod.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
		Reason: "ImagePullBackOff", Message: `Back-off pulling image "registry.example/ctf/web-intro:1.0"`,
	}}
	setPodCondition(&pod.Status, corev1.PodReady, corev1.ConditionFalse)
	setPodCondition(&pod.Status, corev1.ContainersReady, corev1.ConditionFalse)
	g.Expect(k8s.Status().Update(ctx, pod)).To(Succeed())

	got := eventuallyPhase(t, ch, ctfv1alpha1.PhaseError)
	g.Expect(got.Status.Reason).To(Equal("ImagePullBackOff"))
	g.Expect(got.Status.Message).To(ContainSubstring(pod.Name))
	g.Expect(got.Status.Message).To(ContainSubstring("Back-off pulling image"))
	expectEvents(t, ns, "pull", "ImagePullBackOff")

	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
	pod.Status = *running
	g.Expect(k8s.Status().Update(ctx, pod)).To(Succeed())
	eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
}

func TestStalePendingReleaseIsUnlocked(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	// A crash during the first install leaves the release pending-install.
	releases := helmStorage(t, ns)
	chrt, err := loader.Load(filepath.Join(controlplane.RepoRoot(), "charts", "challenge"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(releases.Create(&release.Release{
		Name: "locked", Namespace: ns, Version: 1, Chart: chrt, Config: map[string]any{},
		Info: &release.Info{Status: release.StatusPendingInstall, FirstDeployed: helmtime.Now(), LastDeployed: helmtime.Now()},
	})).To(Succeed())

	ch := builders.Challenge(ns, "locked", "team-locked")
	g.Expect(k8s.Create(ctx, ch)).To(Succeed())
	eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)

	last, err := releases.Last("locked")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(last.Info.Status).To(Equal(release.StatusDeployed))
	g.Expect(last.Version).To(Equal(2))
	expectEvents(t, ns, "locked", "ReleaseUnlocked")
}

func TestDeletedLastsUntilEveryObjectIsGone(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	ch := builders.Challenge(ns, "bye", "team-bye")
	g.Expect(k8s.Create(ctx, ch)).To(Succeed())
	eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
	rec := record(t, ns, "bye")

	g.Expect(k8s.Delete(ctx, ch)).To(Succeed())
	g.Eventually(func() bool { _, deleted := rec.seen(); return deleted }, timeout, interval).Should(BeTrue())
	// The moment the Challenge is gone, everything it ran is gone too.
	for _, list := range []client.ObjectList{&appsv1.DeploymentList{}, &appsv1.ReplicaSetList{}, &corev1.PodList{}, &corev1.ServiceList{}} {
		g.Expect(k8s.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{ctfv1alpha1.AppInstanceLabel: "bye"})).To(Succeed())
		g.Expect(meta.LenList(list)).To(BeZero(), "%T", list)
	}
	g.Expect(releaseSecrets(ctx, g, ns, "bye")).To(BeEmpty())
	phases := rec.phases()
	g.Expect(phases[len(phases)-1]).To(Equal(ctfv1alpha1.PhaseDeleted), "seen: %v", phases)
	expectEvents(t, ns, "bye", "Uninstalling")
}

func TestMetricsCountPhasesAndTimeToReady(t *testing.T) {
	g := NewWithT(t)
	ns := namespace(t)
	ch := builders.Challenge(ns, "metered", "team-metrics")
	g.Expect(k8s.Create(context.Background(), ch)).To(Succeed())
	eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)

	families, err := crmetrics.Registry.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	byName := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			key := f.GetName()
			for _, l := range m.GetLabel() {
				key += "/" + l.GetValue()
			}
			switch {
			case m.GetGauge() != nil:
				byName[key] = m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				byName[key] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	g.Expect(byName).To(HaveKeyWithValue("challenge_phase_count/Running/", BeNumerically(">=", 1)), "by phase, and template (none)")
	g.Expect(byName).To(HaveKey("challenge_phase_count/Error/"))
	g.Expect(byName).To(HaveKeyWithValue("challenge_time_to_ready_seconds", BeNumerically(">=", 1)))
}

// instancePod returns the one pod of an instance once it runs.
func instancePod(t *testing.T, ns, instance string) *corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(k8s.List(context.Background(), &pods, client.InNamespace(ns), client.MatchingLabels{ctfv1alpha1.AppInstanceLabel: instance})).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(1))
		g.Expect(pods.Items[0].Status.ContainerStatuses).NotTo(BeEmpty())
	}, timeout, interval).Should(Succeed())
	return &pods.Items[0]
}

func setPodCondition(st *corev1.PodStatus, t corev1.PodConditionType, s corev1.ConditionStatus) {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			st.Conditions[i].Status = s
			return
		}
	}
	st.Conditions = append(st.Conditions, corev1.PodCondition{Type: t, Status: s})
}

// expectEvents waits for Events with the given reasons about a Challenge.
func expectEvents(t *testing.T, ns, name string, reasons ...string) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		var events eventsv1.EventList
		g.Expect(k8s.List(context.Background(), &events, client.InNamespace(ns))).To(Succeed())
		var seen []string
		for _, e := range events.Items {
			if e.Regarding.Kind == "Challenge" && e.Regarding.Name == name {
				seen = append(seen, e.Reason)
			}
		}
		g.Expect(seen).To(ContainElements(reasons))
	}, timeout, interval).Should(Succeed())
}

// templateEvents are the Events about the template named name, as
// "<reason>: <note>".
func templateEvents(g Gomega, name string) []string {
	var events eventsv1.EventList
	g.Expect(k8s.List(context.Background(), &events)).To(Succeed())
	var seen []string
	for _, e := range events.Items {
		if e.Regarding.Kind == "ChallengeTemplate" && e.Regarding.Name == name {
			seen = append(seen, e.Reason+": "+e.Note)
		}
	}
	return seen
}

func helmStorage(t *testing.T, ns string) *storage.Storage {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cluster.Config)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return storage.Init(driver.NewSecrets(cs.CoreV1().Secrets(ns)))
}

// TestTeardownsDoNotBlockInstalls holds the pods of more instances than the
// operator has workers (a finalizer keeps them terminating) while they are
// deleted: a new instance still becomes Running, because an uninstall does
// not hold a worker while objects go, and the held ones stay Deleted until
// their pods are gone.
func TestTeardownsDoNotBlockInstalls(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	const hold = "test.challenge-operator.io/hold"
	var held []*ctfv1alpha1.Challenge
	for i := range 6 { // the suite runs 4 workers
		ch := builders.Challenge(ns, fmt.Sprintf("held-%d", i), fmt.Sprintf("team-held-%d", i))
		g.Expect(k8s.Create(ctx, ch)).To(Succeed())
		held = append(held, ch)
	}
	var pods []*corev1.Pod
	for _, ch := range held {
		eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
		pod := instancePod(t, ns, ch.Name)
		patch := client.MergeFrom(pod.DeepCopy())
		pod.Finalizers = append(pod.Finalizers, hold)
		g.Expect(k8s.Patch(ctx, pod, patch)).To(Succeed())
		pods = append(pods, pod)
	}
	releasePods := func() {
		for _, pod := range pods {
			g.Expect(client.IgnoreNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(pod), pod))).To(Succeed())
			patch := client.MergeFrom(pod.DeepCopy())
			pod.Finalizers = nil
			_ = k8s.Patch(ctx, pod, patch)
		}
	}
	t.Cleanup(releasePods)
	for _, ch := range held {
		g.Expect(k8s.Delete(ctx, ch)).To(Succeed())
	}
	for _, ch := range held {
		eventuallyPhase(t, ch, ctfv1alpha1.PhaseDeleted)
	}

	fresh := builders.Challenge(ns, "fresh", "team-fresh")
	g.Expect(k8s.Create(ctx, fresh)).To(Succeed())
	eventuallyPhase(t, fresh, ctfv1alpha1.PhaseRunning)
	for _, ch := range held {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), ch)).To(Succeed(), "still there while its pod is")
		g.Expect(ch.Status.Phase).To(Equal(ctfv1alpha1.PhaseDeleted))
	}

	releasePods()
	for _, ch := range held {
		h.EventuallyGone(t, ch, timeout, "gone once its pod is")
	}
}

// TestPodsRefusedAtCreationGiveError: a ResourceQuota that admits no pod
// makes the API server refuse the instance's pod; the Challenge says so at
// once, with the API server's reason, instead of waiting in Pending.
func TestPodsRefusedAtCreationGiveError(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	g.Expect(k8s.Create(ctx, &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Name: "none", Namespace: ns},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}},
	})).To(Succeed())
	ch := builders.Challenge(ns, "refused", "team-q")
	g.Expect(k8s.Create(ctx, ch)).To(Succeed())
	got := eventuallyPhase(t, ch, ctfv1alpha1.PhaseError)
	g.Expect(got.Status.Reason).To(Equal("FailedCreate"))
	g.Expect(got.Status.Message).To(ContainSubstring("exceeded quota"))
}

// TestStatusWritesDoNotStartHelmReconciles: once a Challenge runs, writes to
// its status (anyone's, the operator's own included) never start a Helm
// reconcile, each of which would be a server-side dry-run upgrade of every
// object.
func TestStatusWritesDoNotStartHelmReconciles(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	ch := builders.Challenge(ns, "quiet", "team-quiet")
	g.Expect(k8s.Create(ctx, ch)).To(Succeed())
	eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
	helmReconciles := func() int {
		data, err := os.ReadFile(h.LogFile)
		g.Expect(err).NotTo(HaveOccurred())
		n := 0
		for _, line := range strings.Split(string(data), "\n") {
			if strings.Contains(line, "Reconciliation triggered") && strings.Contains(line, fmt.Sprintf(`"name":"quiet","namespace":"%s"`, ns)) {
				n++
			}
		}
		return n
	}
	// The install, and the reconcile its finalizer starts, settle first.
	var settled int
	g.Eventually(func() bool {
		before := helmReconciles()
		settled = before
		return consistentlyEqual(helmReconciles, before)
	}, timeout, interval).Should(BeTrue())
	g.Expect(settled).To(BeNumerically("<=", 3), "an install takes one Helm reconcile and at most a couple more")

	// A status-only change: another writer pokes the message; the status
	// controller puts the truth back.
	got := &ctfv1alpha1.Challenge{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), got)).To(Succeed())
	truth := got.Status.Message
	patch := client.MergeFrom(got.DeepCopy())
	got.Status.Message = "poked"
	g.Expect(k8s.Status().Patch(ctx, got, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), got)).To(Succeed())
		g.Expect(got.Status.Message).To(Equal(truth))
	}, timeout, interval).Should(Succeed(), "the status is rewritten")
	g.Consistently(helmReconciles, 2*time.Second, interval).Should(Equal(settled), "status writes started Helm reconciles")
}

// consistentlyEqual polls f for a second and reports whether it stayed want.
func consistentlyEqual(f func() int, want int) bool {
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) {
		if f() != want {
			return false
		}
		time.Sleep(interval) // the poll interval of this check, not synchronisation
	}
	return true
}

// TestStatusIsAppliedByOneFieldManager: the one status writer applies the
// status server-side as its own field manager, and no other write of the
// operator's touches it.
func TestStatusIsAppliedByOneFieldManager(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ch := builders.Challenge(namespace(t), "owned", "team-owned")
	g.Expect(k8s.Create(ctx, ch)).To(Succeed())
	eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)

	got := &ctfv1alpha1.Challenge{}
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), got)).To(Succeed())
	var status []metav1.ManagedFieldsEntry
	for _, e := range got.ManagedFields {
		if e.Subresource == "status" {
			status = append(status, e)
		}
	}
	g.Expect(status).To(HaveLen(1), "one manager owns the status: %+v", status)
	g.Expect(status[0].Manager).To(Equal(challenge.StatusFieldManager))
	g.Expect(status[0].Operation).To(Equal(metav1.ManagedFieldsOperationApply))
	g.Expect(string(status[0].FieldsV1.Raw)).To(And(ContainSubstring(`"f:phase"`), ContainSubstring(`"f:endpoint"`), ContainSubstring(`"f:conditions"`)))
}

// A renewal moves the expiry and renders nothing new: the instance stays
// Running throughout, as a participant who reloads the page must see it,
// although the renewal is a new generation of the Challenge.
func TestRenewalKeepsTheInstanceRunning(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	h.Template(t, "tpl-renew-running", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Lifetime = &ctfv1alpha1.LifetimePolicy{Default: &metav1.Duration{Duration: time.Hour}}
	})
	ch := builders.FromTemplate(ns, "renewing", "team-renew", "tpl-renew-running")
	g.Expect(k8s.Create(ctx, ch)).To(Succeed())
	got := eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
	rec := record(t, ns, "renewing")

	renewNow(t, got)
	g.Eventually(func(g Gomega) {
		statuses, _ := rec.seen()
		g.Expect(statuses).NotTo(BeEmpty())
		last := statuses[len(statuses)-1]
		g.Expect(last.Renewals).To(Equal(int32(1)))
		g.Expect(last.ObservedGeneration).To(Equal(got.Generation), "the Helm reconciler has seen the renewal")
	}, timeout, interval).Should(Succeed())
	g.Expect(rec.phases()).To(Equal([]ctfv1alpha1.Phase{ctfv1alpha1.PhaseRunning}), "never Pending for a renewal")
}

// A spec that renders differently is rolled out, and says so: Pending
// (Upgrading) until the new release's workloads are ready again.
func TestSpecChangeIsRolledOutThroughPending(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := namespace(t)
	ch := builders.Challenge(ns, "changing", "team-change")
	g.Expect(k8s.Create(ctx, ch)).To(Succeed())
	got := eventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
	rec := record(t, ns, "changing")

	patch := client.MergeFrom(got.DeepCopy())
	got.Spec.Image = "registry.example/ctf/web-intro:1.1"
	g.Expect(k8s.Patch(ctx, got, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		statuses, _ := rec.seen()
		g.Expect(statuses).NotTo(BeEmpty())
		last := statuses[len(statuses)-1]
		g.Expect(last.ObservedGeneration).To(Equal(got.Generation))
		g.Expect(last.Phase).To(Equal(ctfv1alpha1.PhaseRunning))
	}, timeout, interval).Should(Succeed())
	want := []ctfv1alpha1.Phase{ctfv1alpha1.PhaseRunning, ctfv1alpha1.PhasePending, ctfv1alpha1.PhaseRunning}
	if !slices.Equal(rec.phases(), want) {
		// Rare, under load, and not yet understood: say what was seen.
		statuses, _ := rec.seen()
		for _, st := range statuses {
			t.Logf("seen: %s (%s), generation %d: %s", st.Phase, st.Reason, st.ObservedGeneration, st.Message)
		}
	}
	g.Expect(rec.phases()).To(Equal(want))
	var dep appsv1.Deployment
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "changing"}, &dep)).To(Succeed())
	g.Expect(dep.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.example/ctf/web-intro:1.1"))
}
