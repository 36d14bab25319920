// Package helmobject reads the objects the embedded Helm reconciler hands
// over (unstructured, or typed from the operator's own client) as the API's
// types: the one home of that conversion, so that the translator, the hooks,
// the post-renderer and the finalizers read a Challenge the same way without
// importing one another.
package helmobject

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// Challenge reads obj as a Challenge: the object itself when it is typed,
// else decoded from its unstructured form, which is how the Helm reconciler
// hands a Challenge to its translator, hooks, post-renderer and finalizers.
func Challenge(obj runtime.Object) (*ctfv1alpha1.Challenge, error) {
	if ch, ok := obj.(*ctfv1alpha1.Challenge); ok {
		return ch, nil
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("unexpected object %T", obj)
	}
	ch := &ctfv1alpha1.Challenge{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, ch); err != nil {
		return nil, fmt.Errorf("decoding Challenge %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return ch, nil
}
