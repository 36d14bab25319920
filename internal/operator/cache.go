package operator

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/controller/challenge"
)

// CacheOptions limit the manager's cache to the given namespaces (all when
// empty) and, for the kinds a release renders, to objects of instances, so
// the operator never holds every Deployment or Secret of the cluster in memory;
// with the gateways feature, the Gateway API's routes are among those kinds (its CRDs
// then exist).
func CacheOptions(namespaces []string, features Features) cache.Options {
	instances := labels.NewSelector().Add(mustRequirement(ctfv1alpha1.InstanceLabel, selection.Exists))
	helmReleases := labels.SelectorFromSet(labels.Set{"owner": "helm"})
	opts := cache.Options{
		// Nothing reads managedFields from the cache, and they are a large
		// part of every object held.
		DefaultTransform: stripManagedFields,
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: {Label: helmReleases},
			// The solver checks' runs alone.
			&batchv1.Job{}: {Label: labels.NewSelector().Add(mustRequirement(ctfv1alpha1.SolverLabel, selection.Exists)), Transform: stripManagedFields},
		},
	}
	for _, obj := range append(challenge.ReleaseKinds(true), &corev1.Pod{}, &appsv1.ReplicaSet{}) {
		opts.ByObject[obj] = cache.ByObject{Label: instances, Transform: withoutUnreadSpecs}
	}
	if features.Gateways {
		for _, obj := range []client.Object{&gatewayv1.TLSRoute{}, &gatewayv1.HTTPRoute{}} {
			opts.ByObject[obj] = cache.ByObject{Label: instances, Transform: stripManagedFields}
		}
	}
	if len(namespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return opts
}

// withoutUnreadSpecs strips managedFields, annotations, the pod spec from the pods,
// ReplicaSets and Deployments it caches, and the rules from NetworkPolicies.
// They are most of each object, and nothing reads them from the cache: the
// status is computed from metadata, status and spec.replicas (kstatus), drift
// is a Deployment's or a NetworkPolicy's generation, and the policy gate
// checks the rendered manifest before it is applied.
func withoutUnreadSpecs(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Pod:
		o.Spec = corev1.PodSpec{}
	case *appsv1.ReplicaSet:
		o.Spec.Template = corev1.PodTemplateSpec{}
	case *appsv1.Deployment:
		o.Spec.Template = corev1.PodTemplateSpec{}
	case *networkingv1.NetworkPolicy:
		o.Spec = networkingv1.NetworkPolicySpec{}
	}
	// Nothing reads an instance object's annotations either (Helm's release
	// names, the post-renderer's owner annotations, the Deployment controller's
	// revisions): they are a good part of the metadata that is most of what
	// each resident instance costs. A Namespace keeps its own.
	if o, ok := obj.(client.Object); ok {
		if _, isNamespace := obj.(*corev1.Namespace); !isNamespace {
			o.SetAnnotations(nil)
		}
	}
	return stripManagedFields(obj)
}

var stripManagedFields = cache.TransformStripManagedFields()

func mustRequirement(key string, op selection.Operator) labels.Requirement {
	r, err := labels.NewRequirement(key, op, nil)
	if err != nil {
		panic(err)
	}
	return *r
}
