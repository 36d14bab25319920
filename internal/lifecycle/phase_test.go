package lifecycle

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

func cond(t string, s metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg, LastTransitionTime: metav1.Now()}
}

var (
	deployed   = cond(ConditionDeployed, metav1.ConditionTrue, "InstallSuccessful", "")
	undeployed = cond(ConditionDeployed, metav1.ConditionFalse, "", "")
	installErr = cond(ConditionReleaseFailed, metav1.ConditionTrue, "InstallError", "values don't meet the schema")
	notFailed  = cond(ConditionReleaseFailed, metav1.ConditionFalse, "", "")
	irrecon    = cond(ConditionIrreconcilable, metav1.ConditionTrue, "ReconcileError", "boom")
	ready      = Workload{Kind: "Deployment", Name: "web", Status: kstatus.CurrentStatus, Message: "Deployment is available. Replicas: 1"}
	rolling    = Workload{Kind: "Deployment", Name: "web", Status: kstatus.InProgressStatus, Message: "0/1 replicas available"}
	failed     = Workload{Kind: "Deployment", Name: "web", Status: kstatus.FailedStatus, Message: "Progress deadline exceeded"}
	ep         = []ctfv1alpha1.Endpoint{{Host: "web.ctf.svc", Port: 8080, Protocol: "TCP", Address: "web.ctf.svc:8080"}}
)

func TestPhaseFor(t *testing.T) {
	tests := []struct {
		name       string
		obs        Observation
		wantPhase  ctfv1alpha1.Phase
		wantReason string
	}{
		{"nothing yet", Observation{}, ctfv1alpha1.PhaseNone, ReasonNotInstalled},
		{"not deployed", Observation{Conditions: []metav1.Condition{undeployed}}, ctfv1alpha1.PhaseNone, ReasonNotInstalled},
		{"install failed", Observation{Conditions: []metav1.Condition{undeployed, installErr}}, ctfv1alpha1.PhaseError, "InstallError"},
		{"upgrade failed while deployed", Observation{Conditions: []metav1.Condition{deployed, installErr}, Workloads: []Workload{ready}, Endpoints: ep}, ctfv1alpha1.PhaseError, "InstallError"},
		{"irreconcilable", Observation{Conditions: []metav1.Condition{deployed, irrecon}, Workloads: []Workload{ready}, Endpoints: ep}, ctfv1alpha1.PhaseError, "ReconcileError"},
		{"deployed, rolling out", Observation{Conditions: []metav1.Condition{deployed, notFailed}, Workloads: []Workload{rolling}, Endpoints: ep}, ctfv1alpha1.PhasePending, ReasonWorkloadsNotReady},
		{"deployed, workload failed", Observation{Conditions: []metav1.Condition{deployed}, Workloads: []Workload{failed}, Endpoints: ep}, ctfv1alpha1.PhaseError, ReasonWorkloadFailed},
		{"deployed, ready, no endpoint", Observation{Conditions: []metav1.Condition{deployed}, Workloads: []Workload{ready}}, ctfv1alpha1.PhasePending, ReasonEndpointPending},
		{"deployed, endpoint, no workload seen yet", Observation{Conditions: []metav1.Condition{deployed, notFailed}, Endpoints: ep}, ctfv1alpha1.PhasePending, ReasonWorkloadsNotReady},
		{"deployed, ready, endpoint", Observation{Conditions: []metav1.Condition{deployed, notFailed}, Workloads: []Workload{ready}, Endpoints: ep}, ctfv1alpha1.PhaseRunning, ReasonReady},
		{"one of two workloads rolling", Observation{Conditions: []metav1.Condition{deployed}, Workloads: []Workload{ready, rolling}, Endpoints: ep}, ctfv1alpha1.PhasePending, ReasonWorkloadsNotReady},
		{"claimed, flags pending", Observation{Conditions: []metav1.Condition{deployed}, Workloads: []Workload{ready}, FlagsPending: true}, ctfv1alpha1.PhasePending, ReasonDeliveringFlags},
		{"claimed, flags failed", Observation{Conditions: []metav1.Condition{deployed}, Workloads: []Workload{ready}, FlagsPending: true, FlagsFailed: "pod web-1: 5 writers failed"},
			ctfv1alpha1.PhaseError, ReasonFlagDeliveryFailed},
		{"deleting wins over running", Observation{Deleting: true, Conditions: []metav1.Condition{deployed}, Workloads: []Workload{ready}, Endpoints: ep}, ctfv1alpha1.PhaseDeleted, ReasonUninstalling},
		{"deleting wins over failed flags", Observation{Deleting: true, Conditions: []metav1.Condition{deployed}, Workloads: []Workload{ready}, FlagsFailed: "pod web-1: 5 writers failed"},
			ctfv1alpha1.PhaseDeleted, ReasonUninstalling},
		{"deleting wins over error", Observation{Deleting: true, Conditions: []metav1.Condition{installErr}}, ctfv1alpha1.PhaseDeleted, ReasonUninstalling},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			v := PhaseFor(tt.obs)
			g.Expect(v.Phase).To(Equal(tt.wantPhase))
			g.Expect(v.Reason).To(Equal(tt.wantReason))
			g.Expect(v.Message).NotTo(BeEmpty())
		})
	}
}

func TestApplyWritesTheWholeStatus(t *testing.T) {
	g := NewWithT(t)
	st := &ctfv1alpha1.ChallengeStatus{}
	t0 := metav1.NewTime(time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC))
	helmCond := metav1.Condition{Type: ConditionInitialized, Status: metav1.ConditionTrue, LastTransitionTime: t0}

	Apply(st, 3, Observation{Conditions: []metav1.Condition{helmCond, deployed}, Workloads: []Workload{rolling}, Endpoints: ep}, t0)
	g.Expect(st.Phase).To(Equal(ctfv1alpha1.PhasePending))
	g.Expect(st.ObservedGeneration).To(Equal(int64(3)))
	g.Expect(st.StartedAt).To(Equal(&t0))
	g.Expect(st.ReadyAt).To(BeNil())
	g.Expect(meta.FindStatusCondition(st.Conditions, ConditionInitialized).Reason).To(Equal(defaultReason), "empty Helm reasons are filled")
	readyCond := meta.FindStatusCondition(st.Conditions, ConditionReady)
	g.Expect(readyCond.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(readyCond.ObservedGeneration).To(Equal(int64(3)))
	for _, c := range st.Conditions {
		g.Expect(c.ObservedGeneration).To(Equal(int64(3)), c.Type)
	}

	t1 := metav1.NewTime(t0.Add(time.Minute))
	Apply(st, 3, Observation{Conditions: st.Conditions, Workloads: []Workload{ready}, Endpoints: ep}, t1)
	g.Expect(st.Phase).To(Equal(ctfv1alpha1.PhaseRunning))
	g.Expect(st.Endpoint).To(Equal(&ep[0]))
	g.Expect(st.StartedAt).To(Equal(&t0), "startedAt is set once")
	g.Expect(st.ReadyAt).To(Equal(&t1))
	g.Expect(meta.IsStatusConditionTrue(st.Conditions, ConditionReady)).To(BeTrue())

	t2 := metav1.NewTime(t1.Add(time.Minute))
	Apply(st, 4, Observation{Conditions: st.Conditions, Workloads: []Workload{rolling}, Endpoints: ep}, t2)
	g.Expect(st.ReadyAt).To(Equal(&t1), "readyAt is set once")
	g.Expect(meta.IsStatusConditionFalse(st.Conditions, ConditionReady)).To(BeTrue())
}

func TestApplyTruncatesHugeMessages(t *testing.T) {
	g := NewWithT(t)
	huge := cond(ConditionReleaseFailed, metav1.ConditionTrue, "InstallError", string(make([]byte, 100000)))
	st := &ctfv1alpha1.ChallengeStatus{}
	Apply(st, 1, Observation{Conditions: []metav1.Condition{huge}}, metav1.Now())
	g.Expect(len(st.Message)).To(BeNumerically("<=", maxMessage))
	for _, c := range st.Conditions {
		g.Expect(len(c.Message)).To(BeNumerically("<=", maxMessage))
	}
}

// TestStatusLeavesOutSilentConditions: the Helm reconciler's Paused (its
// pause annotation is not enabled, so it is always False) is never written,
// nor, on a claimant, which never has a release of its own, its verdicts on
// one: a claimed Challenge says Initialized, Deployed (Claimed) and Ready.
func TestStatusLeavesOutSilentConditions(t *testing.T) {
	paused := cond(conditionPaused, metav1.ConditionFalse, "", "")
	notIrrecon := cond(ConditionIrreconcilable, metav1.ConditionFalse, "", "")
	claimRefused := cond(ConditionIrreconcilable, metav1.ConditionTrue, "ReconcileError", "terminal error: Claimed: served by pool/web-abc")
	unknownRelease := cond(ConditionReleaseFailed, metav1.ConditionUnknown, "", "")
	initialized := cond(ConditionInitialized, metav1.ConditionTrue, "", "")
	pooled := &ctfv1alpha1.PooledInstanceRef{Namespace: "pool", Name: "web-abc"}
	tests := []struct {
		name string
		obs  Observation
		want []string
	}{
		{"an installed instance", Observation{Conditions: []metav1.Condition{initialized, paused, notIrrecon, notFailed, deployed}, Workloads: []Workload{ready}, Endpoints: ep},
			[]string{ConditionDeployed, ConditionInitialized, ConditionIrreconcilable, ConditionReady, ConditionReleaseFailed}},
		{"a claimant", Observation{Conditions: []metav1.Condition{initialized, paused, claimRefused, unknownRelease}, PooledInstance: pooled, Workloads: []Workload{ready}, Endpoints: ep},
			[]string{ConditionDeployed, ConditionInitialized, ConditionReady}},
		{"a claimant whose instance is gone", Observation{Conditions: []metav1.Condition{initialized, paused, claimRefused, unknownRelease}, PooledInstance: pooled, PooledInstanceGone: true},
			[]string{ConditionInitialized, ConditionReady, ConditionStalled}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var st ctfv1alpha1.ChallengeStatus
			Apply(&st, 1, tt.obs, metav1.Now())
			var types []string
			for _, c := range st.Conditions {
				types = append(types, c.Type)
			}
			g.Expect(types).To(Equal(tt.want))
		})
	}
}

// TestKstatusReadsThePhase: kstatus (and so Flux, Argo CD and kubectl wait)
// sees Error as Failed, None and Pending as InProgress, Running as Current.
func TestKstatusReadsThePhase(t *testing.T) {
	deployed := []metav1.Condition{deployed}
	failed := []metav1.Condition{installErr}
	ready := []Workload{ready}
	endpoint := ep
	tests := []struct {
		name string
		obs  Observation
		want kstatus.Status
	}{
		{"None", Observation{}, kstatus.InProgressStatus},
		{"Pending", Observation{Operation: Installing}, kstatus.InProgressStatus},
		{"Error", Observation{Conditions: failed}, kstatus.FailedStatus},
		{"Running", Observation{Conditions: deployed, Workloads: ready, Endpoints: endpoint}, kstatus.CurrentStatus},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			st := ctfv1alpha1.ChallengeStatus{}
			Apply(&st, 3, tt.obs, metav1.Now())
			g.Expect(string(st.Phase)).To(Equal(tt.name))
			ch := &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 3}, Status: st}
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ch)
			g.Expect(err).NotTo(HaveOccurred())
			res, err := kstatus.Compute(&unstructured.Unstructured{Object: m})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(res.Status).To(Equal(tt.want), res.Message)
			Apply(&st, 3, Observation{Conditions: deployed, Workloads: ready, Endpoints: endpoint}, metav1.Now())
			g.Expect(meta.FindStatusCondition(st.Conditions, ConditionStalled)).To(BeNil(), "cleared once Running")
			g.Expect(meta.FindStatusCondition(st.Conditions, ConditionReconciling)).To(BeNil(), "cleared once Running")
		})
	}
}

// TestKstatusConditionsKeepTheirTransitionTime: recomputing a status that
// did not change leaves Reconciling's and Stalled's lastTransitionTime where
// it was, so that the recompute is no write; a change of status moves it.
func TestKstatusConditionsKeepTheirTransitionTime(t *testing.T) {
	g := NewWithT(t)
	first := metav1.NewTime(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	for _, obs := range []Observation{{Operation: Installing}, {Conditions: []metav1.Condition{installErr}}} {
		st := ctfv1alpha1.ChallengeStatus{}
		Apply(&st, 1, obs, first)
		was := st.DeepCopy()
		obs.Conditions = was.Conditions // observed from the last status, as the Observer does
		Apply(&st, 1, obs, metav1.NewTime(first.Add(time.Minute)))
		g.Expect(st).To(Equal(*was), "nothing changed for %s", st.Phase)
	}
	st := ctfv1alpha1.ChallengeStatus{}
	Apply(&st, 1, Observation{Operation: Installing}, first)
	Apply(&st, 1, Observation{Conditions: []metav1.Condition{installErr}}, metav1.NewTime(first.Add(time.Minute)))
	g.Expect(meta.FindStatusCondition(st.Conditions, ConditionReconciling)).To(BeNil())
	g.Expect(meta.FindStatusCondition(st.Conditions, ConditionStalled)).NotTo(BeNil())
}

func TestSpecReasonsSurviveWrapping(t *testing.T) {
	for msg, want := range map[string][2]string{
		"terminal error: TemplateNotFound: ChallengeTemplate \"x\" does not exist":                                                {"TemplateNotFound", "ChallengeTemplate \"x\" does not exist"},
		"QuotaExceeded: participant p already has 2 active instances, the limit is 2":                                             {"QuotaExceeded", "participant p already has 2 active instances, the limit is 2"},
		"terminal error: BudgetExceeded: participant p's budget is cpu 1; its instances request cpu 1 and this one needs cpu 50m": {"BudgetExceeded", "participant p's budget is cpu 1; its instances request cpu 1 and this one needs cpu 50m"},
		"error while running post render on files: PolicyViolation: replicas: Deployment a/b: 3 replicas, at most 1":              {"PolicyViolation", "replicas: Deployment a/b: 3 replicas, at most 1"},
		"error while running post render on files: TemplateNotFound: ChallengeTemplate \"x\" does not exist":                      {"TemplateNotFound", "ChallengeTemplate \"x\" does not exist"},
		"upgrade failed: FlagInvalid: the flag in Secret ctf/flags key web has a line break":                                      {"FlagInvalid", "the flag in Secret ctf/flags key web has a line break"},
	} {
		g := NewWithT(t)
		v := PhaseFor(Observation{Conditions: []metav1.Condition{cond(ConditionIrreconcilable, metav1.ConditionTrue, "ErrorGettingValues", msg)}})
		g.Expect(v.Phase).To(Equal(ctfv1alpha1.PhaseError))
		g.Expect([2]string{v.Reason, v.Message}).To(Equal(want), msg)
	}
}

func TestPodsRefusedAtCreationAreAnError(t *testing.T) {
	g := NewWithT(t)
	dep := appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Status: appsv1.DeploymentStatus{Conditions: []appsv1.DeploymentCondition{{
		Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate",
		Message: `pods "web-1" is forbidden: exceeded quota: none, requested: pods=1, used: pods=0, limited: pods=0`,
	}}}}
	problems := DeploymentProblems([]appsv1.Deployment{dep})
	g.Expect(problems).To(HaveLen(1))
	v := PhaseFor(Observation{Conditions: []metav1.Condition{deployed}, Workloads: []Workload{rolling}, PodProblems: problems})
	g.Expect(v.Phase).To(Equal(ctfv1alpha1.PhaseError))
	g.Expect(v.Reason).To(Equal("FailedCreate"))
	g.Expect(v.Message).To(Equal(`Deployment web: pods "web-1" is forbidden: exceeded quota: none, requested: pods=1, used: pods=0, limited: pods=0`))
	dep.Status.Conditions[0].Status = corev1.ConditionFalse
	g.Expect(DeploymentProblems([]appsv1.Deployment{dep})).To(BeEmpty())
}

// TestPhaseNamesTheComponent: an instance is Running once every component
// is; until then, and when one cannot start, the message names it.
func TestPhaseNamesTheComponent(t *testing.T) {
	redisRolling := Workload{Kind: "Deployment", Name: "web--redis", Component: "redis", Status: kstatus.InProgressStatus, Message: "0/1 replicas available"}
	redisReady := redisRolling
	redisReady.Status = kstatus.CurrentStatus
	base := Observation{Conditions: []metav1.Condition{deployed, notFailed}, Endpoints: ep, Components: []string{"redis"}}
	tests := []struct {
		name      string
		workloads []Workload
		problems  []PodProblem
		want      Verdict
	}{
		{"its workload not seen yet", []Workload{ready}, nil,
			Verdict{ctfv1alpha1.PhasePending, ReasonWorkloadsNotReady, "component redis: waiting for its workload to appear"}},
		{"not ready", []Workload{ready, redisRolling}, nil,
			Verdict{ctfv1alpha1.PhasePending, ReasonWorkloadsNotReady, "component redis: Deployment web--redis: 0/1 replicas available"}},
		{"its image cannot be pulled", []Workload{ready, redisRolling}, []PodProblem{{Pod: "web--redis-5d4f-abcde", Component: "redis", Reason: "ImagePullBackOff", Message: "Back-off pulling image"}},
			Verdict{ctfv1alpha1.PhaseError, "ImagePullBackOff", "component redis: pod web--redis-5d4f-abcde: Back-off pulling image"}},
		{"every component ready", []Workload{ready, redisReady}, nil,
			Verdict{ctfv1alpha1.PhaseRunning, ReasonReady, "the instance is ready at " + ep[0].Address}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs := base
			obs.Workloads, obs.PodProblems = tt.workloads, tt.problems
			NewWithT(t).Expect(PhaseFor(obs)).To(Equal(tt.want))
		})
	}
}

// TestQueuedIsNotAnError: an instance waiting for capacity is Queued, with
// its position, Reconciling rather than Stalled; the position goes with the
// phase.
func TestQueuedIsNotAnError(t *testing.T) {
	g := NewWithT(t)
	queued := cond(ConditionReleaseFailed, metav1.ConditionTrue, "ReconcileError", "terminal error: Queued: position 2: waiting for capacity")
	obs := Observation{Conditions: []metav1.Condition{undeployed, queued}, QueuePosition: 2}
	g.Expect(PhaseFor(obs)).To(Equal(Verdict{ctfv1alpha1.PhaseQueued, ReasonQueued, "position 2: waiting for capacity"}))
	var st ctfv1alpha1.ChallengeStatus
	Apply(&st, 1, obs, metav1.Now())
	g.Expect(st.QueuePosition).To(HaveValue(BeEquivalentTo(2)))
	g.Expect(meta.IsStatusConditionTrue(st.Conditions, ConditionReconciling)).To(BeTrue())
	g.Expect(meta.FindStatusCondition(st.Conditions, ConditionStalled)).To(BeNil())
	Apply(&st, 1, Observation{Conditions: []metav1.Condition{deployed, notFailed}, Workloads: []Workload{ready}, Endpoints: ep}, metav1.Now())
	g.Expect(st.QueuePosition).To(BeNil(), "admitted: no position")
}

// TestAQueuedInstanceAlwaysSaysWhereItStands: Queued, as its last render
// said, while the queue as observed now has room for it (its admission
// under way): it is next, position 1, never Queued without a position.
func TestAQueuedInstanceAlwaysSaysWhereItStands(t *testing.T) {
	g := NewWithT(t)
	queued := cond(ConditionReleaseFailed, metav1.ConditionTrue, "ReconcileError", "terminal error: Queued: position 1: waiting for capacity")
	var st ctfv1alpha1.ChallengeStatus
	Apply(&st, 1, Observation{Conditions: []metav1.Condition{undeployed, queued}}, metav1.Now())
	g.Expect(st.Phase).To(Equal(ctfv1alpha1.PhaseQueued))
	g.Expect(st.QueuePosition).To(HaveValue(BeEquivalentTo(1)))
}

// TestSharedServiceBlinkIsACondition: a shared Service missing when an
// installed instance is rendered again leaves it Running, with a condition
// naming it; before the install it is the Error the install waits in.
func TestSharedServiceBlinkIsACondition(t *testing.T) {
	g := NewWithT(t)
	missing := cond(ConditionIrreconcilable, metav1.ConditionTrue, "ReconcileError",
		"failed to get values: SharedServiceNotFound: Service org/checker, which ChallengeTemplate web lets its instances reach, does not exist")
	running := Observation{Conditions: []metav1.Condition{deployed, missing},
		Workloads: []Workload{{Kind: "Deployment", Name: "web", Status: "Current"}}, Endpoints: []ctfv1alpha1.Endpoint{{Address: "web:1337"}}}
	st := &ctfv1alpha1.ChallengeStatus{}
	Apply(st, 1, running, metav1.Now())
	g.Expect(st.Phase).To(Equal(ctfv1alpha1.PhaseRunning))
	c := meta.FindStatusCondition(st.Conditions, ConditionSharedServices)
	g.Expect(c).NotTo(BeNil())
	g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(c.Message).To(HavePrefix("Service org/checker"))

	running.Conditions = []metav1.Condition{deployed}
	Apply(st, 1, running, metav1.Now())
	g.Expect(meta.FindStatusCondition(st.Conditions, ConditionSharedServices)).To(BeNil(), "back: the condition goes")

	installing := Observation{Conditions: []metav1.Condition{undeployed, missing}}
	g.Expect(PhaseFor(installing).Phase).To(Equal(ctfv1alpha1.PhaseError), "an install waits for it")
}
