package controlplane

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestDeploymentBecomesAvailable proves the control plane is real enough for
// the operator's tests: a Deployment rolls out and its pod runs on the KWOK node.
func TestDeploymentBecomesAvailable(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c, err := Start(ctx, Options{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(c.Stop)

	cl, err := client.New(c.Config, client.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	labels := map[string]string{"app": "smoke"}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "smoke", Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.invalid/smoke:1"}}},
			},
		},
	}
	g.Expect(cl.Create(ctx, dep)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(dep), dep)).To(Succeed())
		g.Expect(dep.Status.AvailableReplicas).To(Equal(int32(1)))
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed())

	var pods corev1.PodList
	g.Expect(cl.List(ctx, &pods, client.InNamespace("default"), client.MatchingLabels(labels))).To(Succeed())
	g.Expect(pods.Items).To(HaveLen(1))
	g.Expect(pods.Items[0].Status.Phase).To(Equal(corev1.PodRunning))
	g.Expect(pods.Items[0].Spec.NodeName).To(Equal(NodeName))

	// The control plane restarts with its data and certificates: the same
	// clients find the same objects, twice in a row.
	for range 2 {
		g.Expect(c.RestartControlPlane(ctx, 0)).To(Succeed())
		g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(dep), dep)).To(Succeed())
		g.Expect(dep.Status.AvailableReplicas).To(Equal(int32(1)))
	}
}

// A restart waits for the ports of the process it starts again, read from
// its command line.
func TestListenAddressesOfTheControlPlane(t *testing.T) {
	g := NewWithT(t)
	g.Expect(listenAddresses([]string{"/bin/etcd", "--listen-peer-urls=http://localhost:40001",
		"--listen-client-urls=http://127.0.0.1:40002", "--data-dir=/tmp/x"})).To(ConsistOf("localhost:40001", "127.0.0.1:40002"))
	g.Expect(listenAddresses([]string{"/bin/kube-apiserver", "--secure-port=40003", "--bind-address=127.0.0.1", "--etcd-servers=http://127.0.0.1:40002"})).
		To(ConsistOf("127.0.0.1:40003"))
	g.Expect(listenAddresses([]string{"/bin/kube-scheduler", "--secure-port=0", "--bind-address=127.0.0.1"})).To(BeEmpty())
}
