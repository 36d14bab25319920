package readthrough_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/challenge-operator/challenge-operator/internal/readthrough"
)

// reader answers every Get with err, naming itself in the object.
type reader struct {
	client.Reader
	name string
	err  error
}

func (r reader) Get(_ context.Context, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	obj.SetName(r.name)
	return r.err
}

func TestGetReadsThroughOnlyWhatTheCacheHasNotSeen(t *testing.T) {
	notFound := apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "p")
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "p", nil)
	for _, tc := range []struct {
		name    string
		r       readthrough.Reader
		want    string
		wantErr func(error) bool
	}{
		{"cached", readthrough.Reader{Reader: reader{name: "cache"}, Live: reader{name: "live"}}, "cache", nil},
		{"not yet seen", readthrough.Reader{Reader: reader{name: "cache", err: notFound}, Live: reader{name: "live"}}, "live", nil},
		{"gone everywhere", readthrough.Reader{Reader: reader{name: "cache", err: notFound}, Live: reader{name: "live", err: notFound}}, "live", apierrors.IsNotFound},
		{"other errors stay", readthrough.Reader{Reader: reader{name: "cache", err: forbidden}, Live: reader{name: "live"}}, "cache", apierrors.IsForbidden},
		{"no live reader", readthrough.Reader{Reader: reader{name: "cache", err: notFound}}, "cache", apierrors.IsNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{}
			err := tc.r.Get(context.Background(), client.ObjectKey{Name: "p"}, pod)
			if (tc.wantErr == nil) != (err == nil) || (tc.wantErr != nil && !tc.wantErr(err)) {
				t.Fatalf("error %v", err)
			}
			if pod.Name != tc.want {
				t.Fatalf("read from %s, want %s", pod.Name, tc.want)
			}
		})
	}
}
