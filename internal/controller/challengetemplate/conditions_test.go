package challengetemplate

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
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
	"github.com/challenge-operator/challenge-operator/internal/controller"
	"github.com/challenge-operator/challenge-operator/internal/organisersecret"
)

// fakeScheme holds the kinds the reconcilers read and write.
func fakeScheme(g Gomega) *runtime.Scheme {
	scheme := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	g.Expect(ctfv1alpha1.AddToScheme(scheme)).To(Succeed())
	return scheme
}

// TestARefusedStatusWriteDoesNothing: a decision is acted on only once its
// status is written. The canary that ran is kept, and no Event is given,
// when the write is refused as a conflict (the template changed
// meanwhile); before, the canary was deleted first and the template,
// still Degraded, waited for a canary gone.
func TestARefusedStatusWriteDoesNothing(t *testing.T) {
	g := NewWithT(t)
	scheme := fakeScheme(g)
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
		WithIndex(&ctfv1alpha1.Challenge{}, controller.TemplateField, func(o client.Object) []string { return []string{o.(*ctfv1alpha1.Challenge).Spec.Template} }).
		WithInterceptorFuncs(interceptor.Funcs{SubResourceApply: func(context.Context, client.Client, string, runtime.ApplyConfiguration, ...client.SubResourceApplyOption) error {
			return apierrors.NewConflict(schema.GroupResource{Group: ctfv1alpha1.GroupVersion.Group, Resource: "challengetemplates"}, "web", nil)
		}}).Build()
	recorder := events.NewFakeRecorder(10)
	r := &TemplateConditionsReconciler{Client: cl, Status: &TemplateStatusWriter{Client: cl, Live: cl}, Check: func(*ctfv1alpha1.ChallengeTemplate) error { return nil }, Canaries: canaries, Recorder: recorder}

	result, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Name: "web"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(result.RequeueAfter).To(Equal(conflictRetry), "decided again from the template as it is")
	g.Expect(cl.Get(context.Background(), client.ObjectKeyFromObject(canary), &ctfv1alpha1.Challenge{})).To(Succeed(), "the canary that ran is kept")
	g.Expect(recorder.Events).To(BeEmpty())
}

// TestARefusedSolverStatusWriteAnnouncesNothing: a solver run's end is
// told (its Event, its count) only once its status is written. When the
// write is refused as a conflict, nothing is said, and the run is read
// again from its Job; before, each refused write told it once more.
func TestARefusedSolverStatusWriteAnnouncesNothing(t *testing.T) {
	g := NewWithT(t)
	scheme := fakeScheme(g)
	canaries := &containment.Canaries{Namespace: "ctf-pool"}
	tmpl := &ctfv1alpha1.ChallengeTemplate{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "uid-web", Generation: 1},
		Spec: ctfv1alpha1.ChallengeTemplateSpec{SolverCheck: &ctfv1alpha1.SolverCheck{Image: "registry.example/solver:1"}}}
	canary := canaries.NewSolver(tmpl)
	canary.Status.Phase = ctfv1alpha1.PhaseRunning
	canary.Status.Endpoint = &ctfv1alpha1.Endpoint{Host: "10.0.0.7", Port: 31337}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ctf-pool", Name: canary.Name + "-run-1",
		Labels: map[string]string{ctfv1alpha1.SolverLabel: canary.Name}}}
	job.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded"}}
	tmpl.Status.Solver = &ctfv1alpha1.SolverStatus{Canary: canary.Name, Job: job.Name, Runs: 1}
	cl := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tmpl, canary, job).WithStatusSubresource(tmpl, canary, job).
		WithInterceptorFuncs(interceptor.Funcs{SubResourceApply: func(context.Context, client.Client, string, runtime.ApplyConfiguration, ...client.SubResourceApplyOption) error {
			return apierrors.NewConflict(schema.GroupResource{Group: ctfv1alpha1.GroupVersion.Group, Resource: "challengetemplates"}, "web", nil)
		}}).Build()
	recorder := events.NewFakeRecorder(10)
	r := &SolverCheckReconciler{Client: cl, Status: &TemplateStatusWriter{Client: cl, Live: cl}, Live: cl, Organiser: organisersecret.Reader{Client: cl}, Canaries: canaries, Recorder: recorder}

	for range 2 {
		result, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Name: "web"}})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(result.RequeueAfter).To(Equal(conflictRetry), "read again from the template as it is")
	}
	g.Expect(recorder.Events).To(BeEmpty(), "the failed run is not told before it is recorded")
}
