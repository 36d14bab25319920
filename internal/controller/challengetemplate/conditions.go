package challengetemplate

import (
	"context"
	"errors"
	"fmt"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/containment"
	"github.com/challenge-operator/challenge-operator/internal/controller"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
	"github.com/challenge-operator/challenge-operator/internal/metrics"
)

// The template's conditions.
const (
	// TemplateAccepted: within the cluster admin's bounds; its reason and
	// message, when False, are the refusal every instance would get.
	TemplateAccepted = "Accepted"
	// TemplateReady: accepted, and, with a pool, an instance ready to claim.
	TemplateReady = "Ready"
	// TemplateStalled mirrors a refusal for kstatus (and Argo CD): a
	// template its instances cannot be installed from is Failed, not
	// InProgress.
	TemplateStalled = "Stalled"
)

// TemplateConditionsReconciler writes each template's conditions, with the
// generation they are for, so that an organiser sees on the template itself
// what would otherwise show only on each team's Challenge: Accepted (within
// the admin's bounds), Degraded (its newest instances keep failing, so its
// new starts wait) and Ready. While a template is Degraded it tries canary
// instances of the operator's own (package containment decides when). It
// computes the template's conditions but SolverHealthy, status.health and
// status.observedGeneration, which Status writes.
type TemplateConditionsReconciler struct {
	Client client.Client
	// Status reads the template and writes what was decided.
	Status *TemplateStatusWriter
	// Check refuses a template its instances could not be installed from
	// (values.Rules.CheckTemplate), naming the flag.
	Check func(*ctfv1alpha1.ChallengeTemplate) error
	// Canaries are where a Degraded template's canaries run; nil for none.
	Canaries *containment.Canaries
	Recorder events.EventRecorder
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// +kubebuilder:rbac:groups=ctf.challenge-operator.io,resources=challenges,verbs=create;delete

// Reconcile writes one template's conditions, and creates or deletes its canary.
func (r *TemplateConditionsReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return r.Status.Decide(ctx, req.NamespacedName, metrics.ForgetTemplateHealth, r.decide)
}

// decide sets tmpl's conditions, health and observed generation from its
// instances. What is done about its health comes once they are written: a
// decision made from a template that changed meanwhile is made again, and
// one whose canary was deleted (it ran) is never lost to a refused write
// (the status would wait for a canary gone).
func (r *TemplateConditionsReconciler) decide(ctx context.Context, tmpl *ctfv1alpha1.ChallengeTemplate) (TemplateDecision, error) {
	var list ctfv1alpha1.ChallengeList
	// Read-only: the cache's own objects.
	if err := r.Client.List(ctx, &list, client.MatchingFields{controller.TemplateField: tmpl.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return TemplateDecision{}, err
	}
	health := containment.Decide(tmpl, list.Items, r.Canaries, r.now())
	apimeta.SetStatusCondition(&tmpl.Status.Conditions, health.Degraded)
	for _, c := range TemplateConditions(tmpl, r.Check(tmpl)) {
		apimeta.SetStatusCondition(&tmpl.Status.Conditions, c)
	}
	if !apimeta.IsStatusConditionFalse(tmpl.Status.Conditions, TemplateAccepted) {
		apimeta.RemoveStatusCondition(&tmpl.Status.Conditions, TemplateStalled)
	}
	tmpl.Status.ObservedGeneration = tmpl.Generation
	tmpl.Status.Health = &health.Health
	then := func(ctx context.Context, _ bool) error {
		if err := r.applyCanaries(ctx, tmpl, health); err != nil {
			return err
		}
		metrics.ObserveTemplateHealth(tmpl.Name, containment.Degraded(tmpl), health.Ran)
		if health.Event != nil {
			r.Recorder.Eventf(tmpl, nil, health.Event.Type, health.Event.Reason, "Contain", "%s", health.Event.Message)
		}
		return nil
	}
	return TemplateDecision{Result: ctrl.Result{RequeueAfter: health.RequeueAfter}, Then: then}, nil
}

// applyCanaries deletes the canaries the decision is done with and
// creates the one it tries.
func (r *TemplateConditionsReconciler) applyCanaries(ctx context.Context, tmpl *ctfv1alpha1.ChallengeTemplate, d containment.Decision) error {
	for _, ch := range d.Delete {
		if err := r.Client.Delete(ctx, ch.DeepCopy(), client.Preconditions{UID: &ch.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting canary %s/%s of %s: %w", ch.Namespace, ch.Name, tmpl.Name, err)
		}
	}
	if d.Create != nil {
		if err := r.Client.Create(ctx, d.Create); err != nil {
			return fmt.Errorf("creating a canary of %s: %w", tmpl.Name, err)
		}
	}
	return nil
}

func (r *TemplateConditionsReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// TemplateConditions are tmpl's conditions when its check says refused
// (nil: accepted): Accepted, Ready, and Stalled while refused.
func TemplateConditions(tmpl *ctfv1alpha1.ChallengeTemplate, refused error) []metav1.Condition {
	gen := tmpl.Generation
	cond := func(t string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
		return metav1.Condition{Type: t, Status: status, Reason: reason, Message: message, ObservedGeneration: gen}
	}
	if refused != nil {
		reason := "Invalid"
		var re *lifecycle.ReasonedError
		message := refused.Error()
		if errors.As(refused, &re) {
			reason, message = re.Reason, re.Message
		}
		return []metav1.Condition{
			cond(TemplateAccepted, metav1.ConditionFalse, reason, message),
			cond(TemplateReady, metav1.ConditionFalse, "NotAccepted", "no instance can be installed from it: "+message),
			cond(TemplateStalled, metav1.ConditionTrue, reason, message),
		}
	}
	out := []metav1.Condition{cond(TemplateAccepted, metav1.ConditionTrue, "WithinBounds", "the template is within the operator's bounds")}
	if containment.Degraded(tmpl) {
		return append(out, cond(TemplateReady, metav1.ConditionFalse, containment.ConditionDegraded, "its new starts wait: "+
			apimeta.FindStatusCondition(tmpl.Status.Conditions, containment.ConditionDegraded).Message))
	}
	if containment.Paused(tmpl) {
		return append(out, cond(TemplateReady, metav1.ConditionFalse, "SolverFailing", "its teams' new starts and claims wait: "+
			apimeta.FindStatusCondition(tmpl.Status.Conditions, containment.ConditionSolverHealthy).Message))
	}
	if tmpl.Spec.Pool != nil && (tmpl.Status.Pool == nil || tmpl.Status.Pool.Ready == 0) {
		return append(out, cond(TemplateReady, metav1.ConditionFalse, "PoolFilling", "no pooled instance is ready to claim yet"))
	}
	return append(out, cond(TemplateReady, metav1.ConditionTrue, "Ready", "teams' instances can be served"))
}

// SetupWithManager watches templates (their pool's status among them) and
// their instances' outcomes.
func (r *TemplateConditionsReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("challengetemplate-conditions").
		For(&ctfv1alpha1.ChallengeTemplate{}).
		Watches(&ctfv1alpha1.Challenge{}, controller.Settled(templateOf, controller.TemplateSettle), builder.WithPredicates(outcomeChanged)).
		Complete(r)
}

// outcomeChanged passes the changes a template's health depends on: an
// instance coming or going, its phase, its first Running.
var outcomeChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, okOld := e.ObjectOld.(*ctfv1alpha1.Challenge)
		cur, okCur := e.ObjectNew.(*ctfv1alpha1.Challenge)
		return !okOld || !okCur || old.Status.Phase != cur.Status.Phase || !old.Status.ReadyAt.Equal(cur.Status.ReadyAt)
	},
}
