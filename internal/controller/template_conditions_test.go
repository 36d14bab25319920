package controller

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/containment"
)

// TestARefusedStatusWriteDoesNothing: a decision is acted on only once its
// status is written. The canary that ran is kept, and no Event is given,
// when the write is refused as a conflict (the template changed
// meanwhile); before, the canary was deleted first and the template,
// still Degraded, waited for a canary gone.
func TestARefusedStatusWriteDoesNothing(t *testing.T) {
	g := NewWithT(t)
	scheme := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	g.Expect(ctfv1alpha1.AddToScheme(scheme)).To(Succeed())
	canaries := &containment.Canaries{Namespace: "ctf-pool"}
	tmpl := &ctfv1alpha1.ChallengeTemplate{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "uid-web", Generation: 2}}
	tmpl.Status.Conditions = []metav1.Condition{{Type: containment.ConditionDegraded, Status: metav1.ConditionTrue,
		Reason: containment.ReasonInstancesFailing, ObservedGeneration: 2, LastTransitionTime: metav1.Now()}}
	canary := canaries.New(tmpl)
	canary.Annotations[ctfv1alpha1.TemplateGenerationAnnotation] = "2"
	canary.CreationTimestamp = metav1.Now()
	canary.Status.Phase = ctfv1alpha1.PhaseRunning
	tmpl.Status.Health = &ctfv1alpha1.TemplateHealth{Canary: canary.Name, NextCanaryAt: ptr.To(metav1.NewTime(time.Now().Add(time.Minute)))}
	cl := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tmpl, canary).WithStatusSubresource(tmpl, canary).
		WithIndex(&ctfv1alpha1.Challenge{}, TemplateField, func(o client.Object) []string { return []string{o.(*ctfv1alpha1.Challenge).Spec.Template} }).
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
			return apierrors.NewConflict(schema.GroupResource{Group: ctfv1alpha1.GroupVersion.Group, Resource: "challengetemplates"}, "web", nil)
		}}).Build()
	recorder := events.NewFakeRecorder(10)
	r := &TemplateConditionsReconciler{Client: cl, Check: func(*ctfv1alpha1.ChallengeTemplate) error { return nil }, Canaries: canaries, Recorder: recorder}

	result, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Name: "web"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(result.RequeueAfter).To(Equal(conflictRetry), "decided again from the template as it is")
	g.Expect(cl.Get(context.Background(), client.ObjectKeyFromObject(canary), &ctfv1alpha1.Challenge{})).To(Succeed(), "the canary that ran is kept")
	g.Expect(recorder.Events).To(BeEmpty())
}
