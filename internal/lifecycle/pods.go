package lifecycle

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// PodProblem is why one pod cannot become ready, in the kubelet's or the scheduler's words.
type PodProblem struct {
	Pod     string
	Reason  string
	Message string
}

// stuckReasons are container waiting reasons that do not resolve without a fix.
var stuckReasons = map[string]bool{
	"ErrImagePull":               true,
	"ImagePullBackOff":           true,
	"InvalidImageName":           true,
	"CrashLoopBackOff":           true,
	"CreateContainerConfigError": true,
	"CreateContainerError":       true,
	"RunContainerError":          true,
}

// PodProblems lists the pods that are stuck: a container waiting for a reason
// that needs a fix, or a pod the scheduler cannot place.
func PodProblems(pods []corev1.Pod) []PodProblem {
	var out []PodProblem
	for i := range pods {
		if p, ok := podProblem(&pods[i]); ok {
			out = append(out, p)
		}
	}
	return out
}

func podProblem(pod *corev1.Pod) (PodProblem, bool) {
	if pod.DeletionTimestamp != nil {
		return PodProblem{}, false
	}
	for _, cs := range append(append([]corev1.ContainerStatus{}, pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil && stuckReasons[w.Reason] {
			msg := w.Message
			if msg == "" {
				msg = fmt.Sprintf("container %s is waiting: %s", cs.Name, w.Reason)
			}
			return PodProblem{Pod: pod.Name, Reason: w.Reason, Message: msg}, true
		}
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return PodProblem{Pod: pod.Name, Reason: c.Reason, Message: c.Message}, true
		}
	}
	return PodProblem{}, false
}
