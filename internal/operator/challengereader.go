package operator

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// challengeGVK is the kind the Helm reconciler reconciles.
var challengeGVK = ctfv1alpha1.GroupVersion.WithKind("Challenge")

// typedChallenges serves the Helm reconciler's reads of Challenges, which it
// makes as unstructured objects, from the typed informer the Go controllers
// share: an unstructured informer of its own would hold every Challenge a
// second time, in the larger form of nested maps (a third of the operator's
// heap per resident instance, measured). The typed API is generated from the
// same schema the API server prunes to, so the conversion keeps every field
// it stores, though times only to the second: the reconciler's one write of
// the object itself goes out as a patch of its finalizers
// (challenge.StatusClient.Update), never the converted whole. Other reads,
// lists among them (the reconciler makes none), pass through.
type typedChallenges struct{ client.Reader }

func (r typedChallenges) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || u.GroupVersionKind() != challengeGVK {
		return r.Reader.Get(ctx, key, obj, opts...)
	}
	var ch ctfv1alpha1.Challenge
	if err := r.Reader.Get(ctx, key, &ch, opts...); err != nil {
		return err
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&ch)
	if err != nil {
		return err
	}
	u.SetUnstructuredContent(content)
	u.SetGroupVersionKind(challengeGVK)
	return nil
}
