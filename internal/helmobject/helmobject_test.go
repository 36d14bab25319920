package helmobject

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// TestChallenge: a typed Challenge is read as itself, an unstructured one
// as the Helm reconciler hands it over is decoded, and anything else, or an
// object that does not decode, is an error naming it.
func TestChallenge(t *testing.T) {
	typed := &ctfv1alpha1.Challenge{ObjectMeta: metav1.ObjectMeta{Namespace: "teams", Name: "web-team1"}, Spec: ctfv1alpha1.ChallengeSpec{Template: "web"}}
	tests := []struct {
		name    string
		obj     runtime.Object
		want    *ctfv1alpha1.Challenge
		same    bool
		wantErr string
	}{
		{name: "typed, as itself", obj: typed, want: typed, same: true},
		{name: "unstructured, decoded", obj: &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": ctfv1alpha1.GroupVersion.String(), "kind": "Challenge",
			"metadata": map[string]any{"namespace": "teams", "name": "web-team1"},
			"spec":     map[string]any{"template": "web"},
		}}, want: &ctfv1alpha1.Challenge{
			TypeMeta:   metav1.TypeMeta{APIVersion: ctfv1alpha1.GroupVersion.String(), Kind: "Challenge"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "teams", Name: "web-team1"}, Spec: ctfv1alpha1.ChallengeSpec{Template: "web"},
		}},
		{name: "unstructured that does not decode", obj: &unstructured.Unstructured{Object: map[string]any{
			"metadata": map[string]any{"namespace": "teams", "name": "web-team1"},
			"spec":     map[string]any{"template": 7},
		}}, wantErr: "decoding Challenge teams/web-team1"},
		{name: "another kind", obj: &corev1.Pod{}, wantErr: "unexpected object *v1.Pod"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := Challenge(tt.obj)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
			if tt.same {
				g.Expect(got).To(BeIdenticalTo(tt.want), "a typed Challenge is not copied")
			}
		})
	}
}
