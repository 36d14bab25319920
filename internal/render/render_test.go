package render

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
)

// challenge is a Challenge of its own image, without a template, changed
// by mutate.
func challenge(mutate func(*ctfv1alpha1.ChallengeSpec)) *ctfv1alpha1.Challenge {
	c := &ctfv1alpha1.Challenge{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ctf"},
		Spec: ctfv1alpha1.ChallengeSpec{Participant: "team-1", Image: "registry.example/web:1",
			Ports: []ctfv1alpha1.ChallengePort{{Name: "http", Port: 8080, Protocol: ctfv1alpha1.ProtocolTCP}}},
	}
	if mutate != nil {
		mutate(&c.Spec)
	}
	return c
}

// asHelmHandsIt is c as the Helm reconciler hands it to the translator.
func asHelmHandsIt(t *testing.T, c *ctfv1alpha1.Challenge) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: m}
}

func TestTranslatorDecodesUnstructured(t *testing.T) {
	g := NewWithT(t)
	got, err := Translator{}.Translate(t.Context(), asHelmHandsIt(t, challenge(nil)))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(HaveKeyWithValue("participant", "team-1"))
}

// TestSpecErrorsAreTerminal: retrying cannot fix a spec error, so the
// reconcile is not retried with backoff; the watches wake it instead.
func TestSpecErrorsAreTerminal(t *testing.T) {
	g := NewWithT(t)
	c := challenge(func(s *ctfv1alpha1.ChallengeSpec) {
		s.Values = &ctfv1alpha1.Values{PodLabels: ctfv1alpha1.Metadata{"k8s-app": "kube-dns"}}
	})
	_, err := Translator{}.Translate(t.Context(), asHelmHandsIt(t, c))
	g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeTrue(), "got %v", err)
	g.Expect(lifecycle.IsReason(err, lifecycle.ReasonPolicyViolation)).To(BeTrue(), "the reason survives the wrapping")

	c = challenge(func(s *ctfv1alpha1.ChallengeSpec) { s.Template = "missing" })
	_, err = Translator{Reader: failingReader{}}.Translate(t.Context(), asHelmHandsIt(t, c))
	g.Expect(err).To(HaveOccurred())
	g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeFalse(), "a failed read is retried")
}

// failingReader fails every read, as an API server that is away would.
type failingReader struct{ client.Reader }

func (failingReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errors.New("connection refused")
}
