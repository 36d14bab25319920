package operator

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// TestReleaseInputChanged: only what can change a Challenge's release starts
// a Helm reconcile; its status writes never do.
func TestReleaseInputChanged(t *testing.T) {
	base := func() *ctfv1alpha1.Challenge {
		return &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ctf", Generation: 1,
			Labels: map[string]string{"team": "a"}, Annotations: map[string]string{"note": "x"}, Finalizers: []string{"uninstall-helm-release"}}}
	}
	now := metav1.Now()
	tests := []struct {
		name   string
		change func(c *ctfv1alpha1.Challenge)
		want   bool
	}{
		{"nothing", func(*ctfv1alpha1.Challenge) {}, false},
		{"a status write", func(c *ctfv1alpha1.Challenge) { c.Status.Phase = ctfv1alpha1.PhaseRunning }, false},
		{"a finalizer added (the reconciler's own, before an install)", func(c *ctfv1alpha1.Challenge) {
			c.Finalizers = append(c.Finalizers, "another")
		}, false},
		{"a new generation", func(c *ctfv1alpha1.Challenge) { c.Generation = 2 }, true},
		{"deleted", func(c *ctfv1alpha1.Challenge) { c.DeletionTimestamp = &now }, true},
		{"a finalizer removed", func(c *ctfv1alpha1.Challenge) { c.Finalizers = nil }, true},
		{"a label changed", func(c *ctfv1alpha1.Challenge) { c.Labels["team"] = "b" }, true},
		{"an annotation added", func(c *ctfv1alpha1.Challenge) { c.Annotations["more"] = "y" }, true},
	}
	p := releaseInputChanged()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old, changed := base(), base()
			tt.change(changed)
			NewWithT(t).Expect(p.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: changed})).To(Equal(tt.want))
		})
	}
	NewWithT(t).Expect(p.Generic(event.GenericEvent{Object: base()})).To(BeFalse(), "no periodic resync of every release")
}

// TestDrifted: a release's object deleted, or changed in what the release
// set (its spec, counted by generation where the kind counts one, or its
// labels), is drift; status and the annotations controllers add are not.
func TestDrifted(t *testing.T) {
	svc := func() *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ctf", ResourceVersion: "1", Labels: map[string]string{"a": "b"}},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
	}
	withGeneration := func(o client.Object) client.Object { o.SetGeneration(3); return o }
	tests := []struct {
		name     string
		old, new client.Object
		want     bool
	}{
		{"nothing but the resourceVersion", svc(), func() client.Object { s := svc(); s.ResourceVersion = "2"; return s }(), false},
		{"status (a load balancer's address)", svc(), func() client.Object {
			s := svc()
			s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.1"}}
			return s
		}(), false},
		{"an annotation a controller added", svc(), func() client.Object { s := svc(); s.Annotations = map[string]string{"x": "y"}; return s }(), false},
		{"the spec of a kind without generations", svc(), func() client.Object { s := svc(); s.Spec.Ports[0].Port = 81; return s }(), true},
		{"a label", svc(), func() client.Object { s := svc(); s.Labels["a"] = "c"; return s }(), true},
		{"being deleted", svc(), func() client.Object { s := svc(); now := metav1.Now(); s.DeletionTimestamp = &now; return s }(), true},
		{"the same generation, other fields", withGeneration(svc()), func() client.Object {
			s := withGeneration(svc()).(*corev1.Service)
			s.Spec.Ports[0].Port = 81
			return s
		}(), false},
		{"a new generation", withGeneration(svc()), func() client.Object { s := withGeneration(svc()); s.SetGeneration(4); return s }(), true},
	}
	p := drifted()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(p.Update(event.UpdateEvent{ObjectOld: tt.old, ObjectNew: tt.new})).To(Equal(tt.want))
		})
	}
	g := NewWithT(t)
	g.Expect(p.Delete(event.DeleteEvent{Object: svc()})).To(BeTrue(), "a deleted object is drift")
	g.Expect(p.Create(event.CreateEvent{Object: svc()})).To(BeFalse(), "the release's own creates are not")
}
