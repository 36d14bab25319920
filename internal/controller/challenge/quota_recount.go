package challenge

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/challenge-operator/challenge-operator/internal/helmobject"
	"github.com/challenge-operator/challenge-operator/internal/identity"
)

// ReasonQuotaRecounted is the Event reason when the quota of an instance's
// namespace of its own is replaced to be counted again.
const ReasonQuotaRecounted = "QuotaRecounted"

// QuotaRecount gives back what the ResourceQuota of an instance's namespace
// of its own was charged for Services never stored. The API server charges
// a quota when it admits a create, before it stores the object, and gives
// nothing back when the create then fails: an operator killed while its
// creates were in flight leaves the quota charged for Services that do not
// exist. The quota controller counts again when an object it counts is
// deleted, or at its full resync (kube-controller-manager
// --resource-quota-sync-period, 5 min by default); until then every upgrade
// that creates a Service is refused ("exceeded quota"). It counts a new
// quota at once, so the charged quota is replaced by a copy of itself.
//
// Services are the one kind the quota counts that the operator creates; its
// pods are the ReplicaSet controller's. Between the deletion and the
// creation (milliseconds, or the next upgrade, which creates the quota the
// release lists, should the creation fail) the namespace has no quota: the
// instance has no credentials to create anything there, and what the
// operator creates passed the policy gate.
type QuotaRecount struct {
	// Live reads the quota and the Services from the API server: a cache
	// may not hold yet a Service the refused upgrade created.
	Live client.Reader
	// Client deletes and creates the quota.
	Client   client.Client
	Recorder events.EventRecorder
}

// Recount replaces the quota of the namespace of obj's (a Challenge's)
// instance when it counts more Services than the namespace holds.
func (q QuotaRecount) Recount(ctx context.Context, obj client.Object) error {
	ch, err := helmobject.Challenge(obj)
	if err != nil {
		return err
	}
	// The chart names the quota after the release, which is the Challenge's.
	key := client.ObjectKey{Namespace: identity.Namespace(ch), Name: ch.Name}
	quota := &corev1.ResourceQuota{}
	if err := q.Live.Get(ctx, key, quota); err != nil {
		return client.IgnoreNotFound(err)
	}
	charged, counted := quota.Status.Used[corev1.ResourceServices]
	if !counted {
		return nil // not counted yet, or Services not bounded
	}
	services := &corev1.ServiceList{}
	if err := q.Live.List(ctx, services, client.InNamespace(key.Namespace)); err != nil {
		return fmt.Errorf("counting the Services of namespace %s: %w", key.Namespace, err)
	}
	if charged.Value() <= int64(len(services.Items)) {
		return nil
	}
	// Only the quota judged: one the quota controller counted meanwhile is
	// no longer charged for what is not there.
	uid, version := quota.UID, quota.ResourceVersion
	if err := q.Client.Delete(ctx, quota, client.Preconditions{UID: &uid, ResourceVersion: &version}); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("deleting quota %s, charged for Services never stored: %w", key, err)
	}
	fresh := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Labels: quota.Labels,
			Annotations: quota.Annotations, OwnerReferences: quota.OwnerReferences},
		Spec: quota.Spec,
	}
	if err := q.Client.Create(ctx, fresh); err != nil {
		return fmt.Errorf("creating quota %s again, to be counted: %w", key, err)
	}
	log.FromContext(ctx).Info("replaced a quota charged for Services never stored", "quota", key,
		"charged", charged.Value(), "services", len(services.Items))
	if q.Recorder != nil {
		q.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, ReasonQuotaRecounted, "Recount",
			"the quota of namespace %s was charged for %d Services where %d exist (creates that never completed, as an operator stopped mid-install leaves); replaced to be counted again",
			key.Namespace, charged.Value(), len(services.Items))
	}
	return nil
}
