package v1alpha1

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// ChallengeFrom reads obj as a Challenge: the object itself when it is typed,
// else decoded from its unstructured form, which is how the Helm reconciler
// hands a Challenge to its translator, hooks, post-renderer and finalizers.
// The one home of that conversion, here so that every package that meets
// such an object reads it the same way without importing another's.
func ChallengeFrom(obj runtime.Object) (*Challenge, error) {
	if ch, ok := obj.(*Challenge); ok {
		return ch, nil
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("unexpected object %T", obj)
	}
	ch := &Challenge{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, ch); err != nil {
		return nil, fmt.Errorf("decoding Challenge %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return ch, nil
}
