package controller

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// ApplyStatusOf applies *status as the whole status of obj, a kind of this
// API, server-side as manager, with obj's resourceVersion as a
// precondition. obj gets the new resourceVersion and managedFields (an
// update of the object from it, the Helm reconciler's of its finalizer,
// would otherwise hand the status fields back to the manager that wrote
// them last with Update), and *status the status as stored, its times in
// whole seconds: a write is remembered by it (the writers' caughtUp) and compared with
// the next status computed, whose times come from the API server, and a
// nanosecond apart they made a write that changed nothing.
func ApplyStatusOf[S any](ctx context.Context, cl client.Client, obj client.Object, kind string, status *S, manager string) error {
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(status)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{Object: map[string]any{"status": content}}
	u.SetGroupVersionKind(ctfv1alpha1.GroupVersion.WithKind(kind))
	u.SetNamespace(obj.GetNamespace())
	u.SetName(obj.GetName())
	u.SetResourceVersion(obj.GetResourceVersion())
	if err := cl.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(manager), client.ForceOwnership); err != nil {
		return err
	}
	obj.SetResourceVersion(u.GetResourceVersion())
	obj.SetManagedFields(u.GetManagedFields())
	if stored, ok := u.Object["status"].(map[string]any); ok {
		var st S
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(stored, &st); err != nil {
			return err
		}
		*status = st
	}
	return nil
}
