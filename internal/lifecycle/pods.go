package lifecycle

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// PodProblem is why one pod cannot become ready, or cannot even be created,
// in the words of the kubelet, the scheduler or the API server.
type PodProblem struct {
	// Pod names the pod; for a pod that could not be created, the Deployment.
	Pod string
	// Workload is set when the pod could not be created: it names the Deployment.
	Workload bool
	// Component names the instance's component; "" for the primary one.
	Component string
	Reason    string
	Message   string
}

// where says which object has the problem, for the phase's message.
func (p PodProblem) where() string {
	if p.Workload {
		return componentPrefix(p.Component) + "Deployment " + p.Pod
	}
	return componentPrefix(p.Component) + "pod " + p.Pod
}

// DeploymentProblems lists the Deployments whose pods the API server refuses
// to create (Pod Security admission, a ResourceQuota): the ReplicaSet
// controller reports it as ReplicaFailure, and no pod will ever show it.
func DeploymentProblems(deps []appsv1.Deployment) []PodProblem {
	var out []PodProblem
	for i := range deps {
		d := &deps[i]
		for _, c := range d.Status.Conditions {
			if c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue && d.DeletionTimestamp == nil {
				reason := c.Reason
				if reason == "" {
					reason = "FailedCreate"
				}
				out = append(out, PodProblem{Pod: d.Name, Workload: true, Component: d.Labels[ctfv1alpha1.ComponentLabel], Reason: reason, Message: c.Message})
			}
		}
	}
	return out
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
			return PodProblem{Pod: pod.Name, Component: pod.Labels[ctfv1alpha1.ComponentLabel], Reason: w.Reason, Message: msg}, true
		}
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return PodProblem{Pod: pod.Name, Component: pod.Labels[ctfv1alpha1.ComponentLabel], Reason: c.Reason, Message: c.Message}, true
		}
	}
	return PodProblem{}, false
}
