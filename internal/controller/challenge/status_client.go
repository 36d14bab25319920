package challenge

import (
	"context"
	"encoding/json"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// StatusClient is the client given to the Helm reconciler. helm-operator-plugins
// rebuilds status as {conditions, deployedRelease} and writes it whole, which
// would erase phase and endpoint; routing that write through the StatusWriter
// makes every status the reconciler writes complete.
type StatusClient struct {
	client.Client
	Writer *StatusWriter
}

// Get reads as the embedded client does, but a Get into a Challenge the
// caller holds (its UID set) is not found once its name holds another
// Challenge. After removing its finalizer, the Helm reconciler polls Get of
// the Challenge it held until that is not found, for up to 30 s
// (WithWaitForDeletionTimeout), and a name's next Challenge waits behind that
// worker: one deleted and created again under the same name, as a team
// restarting its instance, would otherwise sit at None for the whole wait.
func (c *StatusClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	held := obj.GetUID()
	if err := c.Client.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	if held != "" && obj.GetUID() != held && isChallenge(obj) {
		return apierrors.NewNotFound(ctfv1alpha1.GroupVersion.WithResource("challenges").GroupResource(), key.Name)
	}
	return nil
}

// isChallenge tells a Challenge, typed or unstructured.
func isChallenge(obj client.Object) bool {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.GroupVersionKind() == ctfv1alpha1.GroupVersion.WithKind("Challenge")
	}
	_, ok := obj.(*ctfv1alpha1.Challenge)
	return ok
}

// Update writes only the finalizers of an unstructured Challenge, the one
// change the Helm reconciler makes with an update (its own finalizer, added
// before an install and removed after an uninstall), as a merge patch at the
// resourceVersion it read. It reads Challenges converted from the typed
// cache, whose times are whole seconds: sent back whole, a renewedAt stored
// with a fraction would move back, which the API server refuses.
func (c *StatusClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || u.GroupVersionKind() != ctfv1alpha1.GroupVersion.WithKind("Challenge") {
		return c.Client.Update(ctx, obj, opts...)
	}
	from := u.GetResourceVersion()
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": u.GetFinalizers(), "resourceVersion": from}})
	if err != nil {
		return err
	}
	if err := c.Patch(ctx, u, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return err
	}
	if u.GetDeletionTimestamp() != nil && len(u.GetFinalizers()) == 0 {
		// The last finalizer went: the Challenge is gone, no status follows
		// to use the step, and its delete event may already have been handled
		// (Forget), so a record would outlive it.
		return nil
	}
	c.Writer.FinalizersWritten(client.ObjectKeyFromObject(u), from, u.GetResourceVersion())
	return nil
}

// Status returns a writer that completes Challenge statuses before writing them.
func (c *StatusClient) Status() client.SubResourceWriter {
	return &challengeStatus{SubResourceWriter: c.Client.Status(), writer: c.Writer}
}

type challengeStatus struct {
	client.SubResourceWriter
	writer *StatusWriter
}

// Update completes the status of an unstructured Challenge; other objects pass through.
func (s *challengeStatus) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || u.GroupVersionKind() != ctfv1alpha1.GroupVersion.WithKind("Challenge") {
		return s.SubResourceWriter.Update(ctx, obj, opts...)
	}
	return s.writer.updateFromHelm(ctx, u)
}
