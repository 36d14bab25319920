package action

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ReleaseField indexes the cached release records (the Secrets labelled
// owner=helm) by the name of their release.
const ReleaseField = "helm.release"

// IndexRecords registers ReleaseField with the manager's cache, on the
// records' metadata: the cache holds no record's data, about 21 KB each,
// which nothing reads from it (Helm reads records from the API server).
func IndexRecords(ctx context.Context, indexer client.FieldIndexer) error {
	return indexer.IndexField(ctx, RecordMetadata(), ReleaseField, func(o client.Object) []string {
		if l := o.GetLabels(); l["owner"] == "helm" && l["name"] != "" {
			return []string{l["name"]}
		}
		return nil
	})
}

// RecordMetadata is an empty release record's metadata, the form in which
// the cache holds records.
func RecordMetadata() *metav1.PartialObjectMetadata {
	record := &metav1.PartialObjectMetadata{}
	record.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	return record
}

// ListRecords lists the metadata of the records of release name in
// namespace from reader, a cache with ReleaseField indexed.
func ListRecords(ctx context.Context, reader client.Reader, namespace, name string, opts ...client.ListOption) ([]metav1.PartialObjectMetadata, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	opts = append([]client.ListOption{client.InNamespace(namespace), client.MatchingFields{ReleaseField: name}}, opts...)
	if err := reader.List(ctx, list, opts...); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// Records tells, from the manager's cache of release records, that a
// release has none: what the first reconcile of every new Challenge asks
// (the unlock, the reconciler's Get, Helm's install), and every reconcile of
// one that never had a release (a claimant, one queued or refused), which
// otherwise is a LIST of Secrets against the API server each time: for a
// claim, the one request that is neither the claim nor its status.
//
// Only that absence is answered, and only where it cannot be out of date: a
// release the cache holds a record of is read from the API server, as is
// one this process has written a record of since it was last uninstalled,
// whether or not the cache has shown that write yet. Release records are
// written by the operator's leader alone (as the memo and the unlock
// assume); one written by anyone else counts once the cache has it. If one
// arrives before that, Helm's install refuses to create the record over it
// (ErrReleaseExists), and the release is then refused for the rest of the
// reconcile (see memoDriver): the next one reads it from the API server.
type Records struct {
	// Reader is the manager's cache, with ReleaseField indexed.
	Reader client.Reader
	// written holds the releases (by namespace and name) this process wrote
	// a record of since their last uninstall.
	written sync.Map
}

// none tells whether the release name in namespace has no record: the
// cache holds none and this process wrote none since its uninstall. False
// whenever that is not known (no cache, a failed read).
func (r *Records) none(ctx context.Context, namespace, name string) bool {
	if r == nil || r.Reader == nil {
		return false
	}
	if _, ok := r.written.Load(types.NamespacedName{Namespace: namespace, Name: name}); ok {
		return false
	}
	records, err := ListRecords(ctx, r.Reader, namespace, name, client.UnsafeDisableDeepCopy)
	return err == nil && len(records) == 0
}

// writing records that this process is about to write a record of the
// release; the cache cannot answer for it until the release is uninstalled.
func (r *Records) writing(namespace, name string) {
	if r != nil {
		r.written.Store(types.NamespacedName{Namespace: namespace, Name: name}, struct{}{})
	}
}

// uninstalled records that the release has no records left: its uninstall
// deleted them, and whatever of it remained is gone.
func (r *Records) uninstalled(namespace, name string) {
	if r != nil {
		r.written.Delete(types.NamespacedName{Namespace: namespace, Name: name})
	}
}
