// Package informerstore reads single objects straight from the stores of
// the manager's synced informers. controller-runtime's cache asks an
// informer whether it has synced on every read, under the lock client-go's
// informer holds while it processes a batch of watch events
// (kubernetes/kubernetes#130767; client-go 1.36 can release it, behind
// UnlockWhileProcessingFIFO). In a burst of claims or installs, every read
// of a busy kind waited for that processing, and for the other reads: a
// goroutine dump of the operator showed thirty of them queued on it. An
// informer, once synced, stays synced, so this asks once per kind.
package informerstore

import (
	"context"
	"reflect"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Cache is a controller-runtime cache whose Get of a typed object reads its
// informer's store once the informer has synced. A miss, a Get with
// options, and every other read go to the cache as it is, which answers
// them as before (a miss as NotFound, a kind it does not hold yet by
// starting its informer).
type Cache struct {
	cache.Cache
	scheme *runtime.Scheme
	// stores holds, by kind, the store of each informer seen synced.
	stores sync.Map
}

// New wraps c, whose objects are of scheme's kinds.
func New(c cache.Cache, scheme *runtime.Scheme) *Cache {
	return &Cache{Cache: c, scheme: scheme}
}

// NewCache makes a manager's cache (ctrl.Options.NewCache).
func NewCache(config *rest.Config, opts cache.Options) (cache.Cache, error) {
	c, err := cache.New(config, opts)
	if err != nil {
		return nil, err
	}
	return New(c, opts.Scheme), nil
}

// Get reads key from its kind's store, as the cache would, or from the cache.
func (c *Cache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if len(opts) == 0 && c.fromStore(ctx, key, obj) {
		return nil
	}
	return c.Cache.Get(ctx, key, obj, opts...)
}

// fromStore copies the object at key into obj from its kind's synced
// store, and tells whether it did.
func (c *Cache) fromStore(ctx context.Context, key client.ObjectKey, obj client.Object) bool {
	gvk, store := c.store(ctx, obj)
	if store == nil {
		return false
	}
	storeKey := key.Name
	if key.Namespace != "" {
		storeKey = key.Namespace + "/" + key.Name
	}
	item, exists, err := store.GetByKey(storeKey)
	if err != nil || !exists {
		return false
	}
	found, ok := item.(runtime.Object)
	if !ok {
		return false
	}
	copied := reflect.ValueOf(found.DeepCopyObject())
	out := reflect.ValueOf(obj)
	if !copied.Type().AssignableTo(out.Type()) {
		return false
	}
	out.Elem().Set(copied.Elem())
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return true
}

// store is the synced store of obj's kind, nil if there is none yet or obj
// is not a typed object (unstructured and metadata-only objects have
// informers of their own).
func (c *Cache) store(ctx context.Context, obj client.Object) (schema.GroupVersionKind, toolscache.Indexer) {
	switch obj.(type) {
	case runtime.Unstructured, *metav1.PartialObjectMetadata:
		return schema.GroupVersionKind{}, nil
	}
	gvk, err := apiutil.GVKForObject(obj, c.scheme)
	if err != nil {
		return gvk, nil
	}
	if s, ok := c.stores.Load(gvk); ok {
		return gvk, s.(toolscache.Indexer)
	}
	informer, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		return gvk, nil
	}
	synced, ok := informer.(interface {
		GetIndexer() toolscache.Indexer
		HasSynced() bool
	})
	if !ok || !synced.HasSynced() {
		return gvk, nil
	}
	c.stores.Store(gvk, synced.GetIndexer())
	return gvk, synced.GetIndexer()
}
