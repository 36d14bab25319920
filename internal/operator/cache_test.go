package operator

import (
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/values"
)

// TestCachedWorkloadsKeepWhatTheStatusReads: the cache drops pod specs,
// NetworkPolicy rules, annotations and managedFields, and keeps the labels, replicas and status the lifecycle is
// computed from. (Pure: the transform is the operator's, not the API server's.)
func TestCachedWorkloadsKeepWhatTheStatusReads(t *testing.T) {
	g := NewWithT(t)
	meta := metav1.ObjectMeta{Name: "web", Labels: map[string]string{"app": "web"}, Generation: 3,
		Annotations:   map[string]string{"meta.helm.sh/release-name": "web"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "helm"}}}
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}}

	pod, err := withoutUnreadSpecs(&corev1.Pod{ObjectMeta: meta, Spec: spec,
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "web", Ready: true}}}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pod.(*corev1.Pod).Spec).To(Equal(corev1.PodSpec{}))
	g.Expect(pod.(*corev1.Pod).Status.ContainerStatuses).To(HaveLen(1))
	g.Expect(pod.(*corev1.Pod).Labels).To(HaveKeyWithValue("app", "web"))
	g.Expect(pod.(*corev1.Pod).ManagedFields).To(BeEmpty())
	g.Expect(pod.(*corev1.Pod).Annotations).To(BeEmpty())

	dep, err := withoutUnreadSpecs(&appsv1.Deployment{ObjectMeta: meta,
		Spec:   appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Template: corev1.PodTemplateSpec{Spec: spec}},
		Status: appsv1.DeploymentStatus{AvailableReplicas: 1}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(dep.(*appsv1.Deployment).Spec.Template).To(Equal(corev1.PodTemplateSpec{}))
	g.Expect(dep.(*appsv1.Deployment).Spec.Replicas).To(HaveValue(BeEquivalentTo(1)))
	g.Expect(dep.(*appsv1.Deployment).Generation).To(BeEquivalentTo(3))
	g.Expect(dep.(*appsv1.Deployment).Status.AvailableReplicas).To(BeEquivalentTo(1))

	np, err := withoutUnreadSpecs(&networkingv1.NetworkPolicy{ObjectMeta: meta,
		Spec: networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(np.(*networkingv1.NetworkPolicy).Spec).To(Equal(networkingv1.NetworkPolicySpec{}))
	g.Expect(np.(*networkingv1.NetworkPolicy).Generation).To(BeEquivalentTo(3))

	svc, err := withoutUnreadSpecs(&corev1.Service{ObjectMeta: meta, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(svc.(*corev1.Service).Spec.Type).To(Equal(corev1.ServiceTypeNodePort))
}

// TestRoutesAreCachedByInstanceOnlyWithGateways: the routes are held like
// the other kinds a release renders, by the instance label, and only where
// --gateways names Gateways (elsewhere their CRDs may not exist).
func TestRoutesAreCachedByInstanceOnlyWithGateways(t *testing.T) {
	g := NewWithT(t)
	hasRoutes := func(opts cache.Options) bool {
		for obj, by := range opts.ByObject {
			if _, ok := obj.(*gatewayv1.TLSRoute); ok {
				g.Expect(by.Label.String()).To(Equal(ctfv1alpha1.InstanceLabel))
				return true
			}
		}
		return false
	}
	g.Expect(hasRoutes(CacheOptions(nil, Features{Gateways: true}))).To(BeTrue())
	g.Expect(hasRoutes(CacheOptions(nil, Features{}))).To(BeFalse())
}

// TestFeaturesFollowTheOptions: each optional part is on exactly when its
// flag asks for it.
func TestFeaturesFollowTheOptions(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Options{}.Features()).To(Equal(Features{}))
	g.Expect(Options{Values: values.Settings{Gateways: []ctfv1alpha1.GatewayRef{{Namespace: "gw", Name: "ctf"}}, NamespacePerInstance: true},
		PoolNamespace: "ctf-pool", Webhook: true}.Features()).To(Equal(Features{Gateways: true, NamespacePerInstance: true, Pools: true, Webhook: true}))
}
