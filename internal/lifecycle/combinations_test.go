package lifecycle

import (
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// TestPhaseForEveryCombination walks every combination of deletion, release
// operation, reconciler conditions, workload readiness, pod problems and
// endpoint, and checks the rules a platform relies on.
func TestPhaseForEveryCombination(t *testing.T) {
	conditionSets := map[string][]metav1.Condition{
		"none":                     nil,
		"not deployed":             {undeployed},
		"install failed":           {undeployed, installErr},
		"deployed":                 {deployed, notFailed},
		"deployed, upgrade failed": {deployed, installErr},
		"deployed, irreconcilable": {deployed, irrecon},
	}
	workloadSets := map[string][]Workload{
		"none": nil, "ready": {ready}, "rolling": {rolling}, "failed": {failed}, "ready+rolling": {ready, rolling},
	}
	problemSets := map[string][]PodProblem{
		"none": nil, "pull": {{Pod: "web-1", Reason: "ImagePullBackOff", Message: "Back-off pulling image"}},
	}
	for _, deleting := range []bool{false, true} {
		for _, op := range []Operation{NoOperation, Installing, Upgrading} {
			for cName, conds := range conditionSets {
				for wName, ws := range workloadSets {
					for pName, problems := range problemSets {
						for _, endpoints := range [][]ctfv1alpha1.Endpoint{nil, ep} {
							o := Observation{Deleting: deleting, Operation: op, Conditions: conds, Workloads: ws, PodProblems: problems, Endpoints: endpoints}
							name := fmt.Sprintf("deleting=%v/op=%q/%s/workloads=%s/pods=%s/endpoint=%v", deleting, op, cName, wName, pName, endpoints != nil)
							t.Run(name, func(t *testing.T) { checkInvariants(t, o) })
						}
					}
				}
			}
		}
	}
}

func checkInvariants(t *testing.T, o Observation) {
	g := NewWithT(t)
	v := PhaseFor(o)
	g.Expect(v.Phase).To(BeElementOf(ctfv1alpha1.PhaseNone, ctfv1alpha1.PhasePending, ctfv1alpha1.PhaseRunning, ctfv1alpha1.PhaseError, ctfv1alpha1.PhaseDeleted))
	g.Expect(v.Reason).To(MatchRegexp(`^[A-Z][A-Za-z]*$`), "reasons are CamelCase")
	g.Expect(v.Message).NotTo(BeEmpty())

	failedRelease := hasTrue(o.Conditions, ConditionReleaseFailed) || hasTrue(o.Conditions, ConditionIrreconcilable)
	allReady := len(o.Workloads) > 0 // no workload seen is not ready
	for _, w := range o.Workloads {
		allReady = allReady && w == ready
	}
	wantRunning := !o.Deleting && o.Operation == NoOperation && !failedRelease &&
		hasTrue(o.Conditions, ConditionDeployed) && allReady && len(o.Endpoints) > 0
	g.Expect(v.Phase == ctfv1alpha1.PhaseRunning).To(Equal(wantRunning), "Running exactly when deployed, ready and reachable")
	g.Expect(v.Phase == ctfv1alpha1.PhaseDeleted).To(Equal(o.Deleting), "Deleted exactly while deleting")
	if !o.Deleting && o.Operation != NoOperation {
		g.Expect(v.Phase).To(Equal(ctfv1alpha1.PhasePending), "an install or upgrade in progress is Pending")
	}
	if !o.Deleting && o.Operation == NoOperation && failedRelease {
		g.Expect(v.Phase).To(Equal(ctfv1alpha1.PhaseError), "a failed release is an Error")
	}
	if v.Phase == ctfv1alpha1.PhaseNone {
		g.Expect(hasTrue(o.Conditions, ConditionDeployed)).To(BeFalse(), "None only before anything is installed")
	}
}

func hasTrue(conds []metav1.Condition, t string) bool {
	for _, c := range conds {
		if c.Type == t && c.Status == metav1.ConditionTrue {
			return true
		}
	}
	return false
}

func TestOperationFor(t *testing.T) {
	g := NewWithT(t)
	g.Expect(OperationFor(1, 0, nil)).To(Equal(Installing), "a new Challenge")
	g.Expect(OperationFor(1, 1, []metav1.Condition{undeployed, installErr})).To(Equal(NoOperation), "a failed install of this generation is not retried as Pending")
	g.Expect(OperationFor(2, 1, []metav1.Condition{undeployed, installErr})).To(Equal(Installing), "a fixed spec retries the install")
	g.Expect(OperationFor(2, 1, []metav1.Condition{deployed})).To(Equal(Upgrading))
	g.Expect(OperationFor(2, 2, []metav1.Condition{deployed})).To(Equal(NoOperation))
}

func TestPodProblems(t *testing.T) {
	waiting := func(reason string) corev1.Pod {
		return corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "web-1"},
			Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{
				Name: "challenge", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}},
			}}},
		}
	}
	unschedulable := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-2"},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes are available",
		}}},
	}
	deleting := waiting("CrashLoopBackOff")
	deleting.DeletionTimestamp = &metav1.Time{}
	tests := []struct {
		name string
		pod  corev1.Pod
		want []PodProblem
	}{
		{"image pull back-off", waiting("ImagePullBackOff"), []PodProblem{{Pod: "web-1", Reason: "ImagePullBackOff", Message: "container challenge is waiting: ImagePullBackOff"}}},
		{"pull error", waiting("ErrImagePull"), []PodProblem{{Pod: "web-1", Reason: "ErrImagePull", Message: "container challenge is waiting: ErrImagePull"}}},
		{"crash loop", waiting("CrashLoopBackOff"), []PodProblem{{Pod: "web-1", Reason: "CrashLoopBackOff", Message: "container challenge is waiting: CrashLoopBackOff"}}},
		{"still creating is no problem", waiting("ContainerCreating"), nil},
		{"unschedulable", unschedulable, []PodProblem{{Pod: "web-2", Reason: "Unschedulable", Message: "0/3 nodes are available"}}},
		{"a terminating pod is no problem", deleting, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(PodProblems([]corev1.Pod{tt.pod})).To(Equal(tt.want))
		})
	}
}

func TestPhaseForNamesTheStuckPod(t *testing.T) {
	g := NewWithT(t)
	v := PhaseFor(Observation{
		Conditions:  []metav1.Condition{deployed},
		Workloads:   []Workload{rolling},
		PodProblems: []PodProblem{{Pod: "web-1", Reason: "CrashLoopBackOff", Message: "back-off restarting failed container"}},
		Endpoints:   ep,
	})
	g.Expect(v).To(Equal(Verdict{ctfv1alpha1.PhaseError, "CrashLoopBackOff", "pod web-1: back-off restarting failed container"}))

	v = PhaseFor(Observation{
		Conditions:  []metav1.Condition{deployed},
		Workloads:   []Workload{ready},
		PodProblems: []PodProblem{{Pod: "web-2", Reason: "ImagePullBackOff", Message: "x"}},
		Endpoints:   ep,
	})
	g.Expect(v.Phase).To(Equal(ctfv1alpha1.PhaseRunning), "a broken surge pod behind a ready workload does not take the instance down")
}

func FuzzPhaseFor(f *testing.F) {
	f.Add(true, uint8(0), uint8(1), uint8(2), true)
	f.Fuzz(func(t *testing.T, deleting bool, op, condMask, workloadKind uint8, withEndpoint bool) {
		all := []metav1.Condition{deployed, installErr, irrecon}
		var conds []metav1.Condition
		for i, c := range all {
			if condMask&(1<<i) != 0 {
				conds = append(conds, c)
			}
		}
		ws := [][]Workload{nil, {ready}, {rolling}, {failed}}[int(workloadKind)%4]
		o := Observation{Deleting: deleting, Operation: []Operation{NoOperation, Installing, Upgrading}[int(op)%3], Conditions: conds, Workloads: ws}
		if withEndpoint {
			o.Endpoints = ep
		}
		checkInvariants(t, o)
	})
}
