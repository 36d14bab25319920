package render

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/admission"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
	"github.com/challenge-operator/challenge-operator/internal/policy"
	"github.com/challenge-operator/challenge-operator/internal/values"
)

// errAdmissionAsked marks a render that consulted admission.
var errAdmissionAsked = errors.New("admission consulted")

// templateOnly serves one template and fails every list: the quota's.
type templateOnly struct {
	client.Reader
	tmpl *ctfv1alpha1.ChallengeTemplate
}

func (r templateOnly) Get(_ context.Context, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	r.tmpl.DeepCopyInto(obj.(*ctfv1alpha1.ChallengeTemplate))
	return nil
}

func (templateOnly) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errAdmissionAsked
}

// TestRefusedBeforeAdmission: a template beyond the ceilings (a component's
// replicas above policy.maxReplicas, a scratch above the disk ceiling) is
// an Error at once, before admission gives it a place in the quota, the
// queue or a pooled instance it would then refuse.
func TestRefusedBeforeAdmission(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec func(*ctfv1alpha1.ChallengeTemplateSpec)
	}{
		{"a component's replicas above the ceiling", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
			s.Components = []ctfv1alpha1.Component{{Name: "worker", Image: "w:1", Replicas: ptr.To[int32](3)}}
		}},
		{"a scratch above the disk ceiling", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
			size := ctfv1alpha1.Quantity("2Gi")
			s.Scratch = []ctfv1alpha1.ScratchMount{{Path: "/data", SizeLimit: &size}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			tmpl := &ctfv1alpha1.ChallengeTemplate{ObjectMeta: metav1.ObjectMeta{Name: "web"},
				Spec: ctfv1alpha1.ChallengeTemplateSpec{Image: "web:1", Ports: []ctfv1alpha1.ChallengePort{{Name: "http", Port: 8080}}}}
			tc.spec(&tmpl.Spec)
			r := templateOnly{tmpl: tmpl}
			tr := Translator{Reader: r, OrganiserReader: r, Admission: admission.Admission{Quota: &admission.Quota{Reader: r}},
				Rules: values.Rules{Limits: policy.Limits{MaxReplicas: 1, EphemeralStorage: resource.MustParse("1Gi")}}}
			c := challenge(func(s *ctfv1alpha1.ChallengeSpec) {
				*s = ctfv1alpha1.ChallengeSpec{Participant: "team-1", Template: "web"}
			})
			_, err := tr.Render(t.Context(), asHelmHandsIt(t, c))
			g.Expect(err).NotTo(MatchError(errAdmissionAsked), "refused before admission")
			g.Expect(lifecycle.IsReason(err, lifecycle.ReasonPolicyViolation)).To(BeTrue(), "got %v", err)
		})
	}
}
