// Package readthrough reads from a cache, and from the API server what the
// cache has not seen yet: a cache lags the writes that just happened, and
// code acting on an object it (or a client) just created must find it.
package readthrough

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Reader lists and gets from the embedded cache; a Get the cache answers
// NotFound goes to Live. A nil Live reads only the cache.
type Reader struct {
	client.Reader
	Live client.Reader
}

// Get reads key from the cache, else from Live.
func (r Reader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := r.Reader.Get(ctx, key, obj, opts...)
	if apierrors.IsNotFound(err) && r.Live != nil {
		return r.Live.Get(ctx, key, obj, opts...)
	}
	return err
}
