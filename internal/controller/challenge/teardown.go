package challenge

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/helmobject"
	"github.com/challenge-operator/challenge-operator/internal/identity"
	"github.com/challenge-operator/challenge-operator/internal/pool"
)

// errObjectsLeft keeps the finalizer while objects of an instance remain.
// One sentence whatever remains, so that the status written with it does
// not change (and is not rewritten) as they go.
var errObjectsLeft = errors.New("waiting for the instance's objects to be gone")

// Teardown is the end of an instance's uninstall: what the release record
// does not name, or Helm does not wait for.
type Teardown struct {
	// Client reads what remains and deletes the pooled instance and the
	// namespace of its own.
	Client client.Client
	// Pools finds the pooled instance a Challenge claimed; nil for no pools.
	Pools *pool.Pools
	// NamespacePerInstance: each instance has a namespace of its own.
	NamespacePerInstance bool
	// Gateways: instances may have Gateway routes.
	Gateways bool
	// Indexed says Client is the manager's cache, which finds an instance's
	// objects by index (AddIndexes).
	Indexed bool
}

// Leftovers reports what remains of the instance of obj, a Challenge, after
// its uninstall, from the cache: the pooled instance it claimed, which it
// deletes; its workloads, their ReplicaSets and pods, whose termination the
// uninstall does not wait for, and, with a namespace per instance, its
// namespace, the one kind without an owner reference to the Challenge
// (cluster-scoped), which it deletes. Labels are no proof: anyone may label
// an object of theirs with an instance's labels. Only objects in the
// instance's namespace count, and only the Namespace of the instance's
// derived name is deleted.
func (t Teardown) Leftovers(ctx context.Context, obj client.Object) error {
	cl, pools := t.Client, t.Pools
	if pools != nil {
		ch, err := helmobject.Challenge(obj)
		if err != nil {
			return err
		}
		if left, err := pools.Release(ctx, ch); err != nil || left {
			return cmp.Or(err, errObjectsLeft)
		}
	}
	sel := client.MatchingLabels{ctfv1alpha1.InstanceLabel: obj.GetName(), ctfv1alpha1.InstanceNamespaceLabel: obj.GetNamespace()}
	where := client.InNamespace(obj.GetNamespace())
	if t.NamespacePerInstance {
		ch, err := helmobject.Challenge(obj)
		if err != nil {
			return err
		}
		own := identity.Namespace(ch)
		if left, err := deleteInstanceNamespace(ctx, cl, own, sel); err != nil || left {
			return cmp.Or(err, errObjectsLeft)
		}
		where = client.InNamespace(own)
	}
	opts := []client.ListOption{sel, where}
	if t.Indexed {
		opts = append(opts, client.MatchingFields{InstanceField: obj.GetName()})
	}
	for _, kind := range InstanceKinds(t.Gateways) {
		list := kind.List()
		if err := cl.List(ctx, list, opts...); err != nil {
			return fmt.Errorf("listing what remains of %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
		}
		if n := apimeta.LenList(list); n > 0 {
			log.FromContext(ctx).V(1).Info("waiting for the instance's objects to be gone", "left", n, "kind", fmt.Sprintf("%T", list))
			return errObjectsLeft
		}
	}
	return nil
}

// deleteInstanceNamespace deletes the namespace named name when it carries
// the instance's labels, and reports whether it is still there.
func deleteInstanceNamespace(ctx context.Context, cl client.Client, name string, sel client.MatchingLabels) (left bool, err error) {
	ns := &corev1.Namespace{}
	if err := cl.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	if !labels.SelectorFromSet(labels.Set(sel)).Matches(labels.Set(ns.Labels)) {
		return false, nil // not the instance's, whatever its name
	}
	if ns.DeletionTimestamp.IsZero() {
		if err := cl.Delete(ctx, ns); client.IgnoreNotFound(err) != nil {
			return true, fmt.Errorf("deleting namespace %s: %w", ns.Name, err)
		}
	}
	return true, nil
}
