package challenge

import (
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// TestKstatusReadsNoMoreThanItsView: kstatus says of the part of a
// Deployment workloadOf converts what it says of the whole Deployment, in
// every state a Deployment of an instance goes through.
func TestKstatusReadsNoMoreThanItsView(t *testing.T) {
	now := metav1.Now()
	for name, edit := range map[string]func(*appsv1.Deployment){
		"available":           func(*appsv1.Deployment) {},
		"generation unseen":   func(d *appsv1.Deployment) { d.Generation = 3 },
		"starting":            func(d *appsv1.Deployment) { d.Status.ReadyReplicas, d.Status.AvailableReplicas = 0, 0 },
		"no replica yet":      func(d *appsv1.Deployment) { d.Status = appsv1.DeploymentStatus{ObservedGeneration: 2} },
		"scaled to two":       func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](2) },
		"pending termination": func(d *appsv1.Deployment) { d.Spec.Replicas = ptr.To[int32](0) },
		"replicas unset":      func(d *appsv1.Deployment) { d.Spec.Replicas = nil },
		"being deleted":       func(d *appsv1.Deployment) { d.DeletionTimestamp = &now },
		"rolling out": func(d *appsv1.Deployment) {
			d.Spec.ProgressDeadlineSeconds = ptr.To[int32](600)
			d.Status.Conditions[1].Reason = "ReplicaSetUpdated"
		},
		"deadline exceeded": func(d *appsv1.Deployment) {
			d.Spec.ProgressDeadlineSeconds = ptr.To[int32](60)
			d.Status.AvailableReplicas = 0
			d.Status.Conditions[1] = appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"}
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			dep := &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team-a", Generation: 2, Labels: map[string]string{"app": "web"}},
				Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
						Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.example/web:1"}}}}},
				Status: appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
					Conditions: []appsv1.DeploymentCondition{
						{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue},
						{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"},
					}},
			}
			edit(dep)
			g.Expect(statusOf(g, kstatusView(dep))).To(Equal(statusOf(g, dep)))
		})
	}
}

func statusOf(g Gomega, dep *appsv1.Deployment) kstatus.Result {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(dep)
	g.Expect(err).NotTo(HaveOccurred())
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion("apps/v1")
	u.SetKind("Deployment")
	res, err := kstatus.Compute(u)
	g.Expect(err).NotTo(HaveOccurred())
	return *res
}
