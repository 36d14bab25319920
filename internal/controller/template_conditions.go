package controller

import (
	"context"
	"errors"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
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

// TemplateConditionsReconciler writes each template's Accepted and Ready
// conditions, with the generation they are for, so that an organiser sees
// a template beyond the admin's bounds on the template itself rather than
// on each team's Challenge.
type TemplateConditionsReconciler struct {
	Client client.Client
	// Check refuses a template its instances could not be installed from
	// (values.Translator.CheckTemplate), naming the flag.
	Check func(*ctfv1alpha1.ChallengeTemplate) error
}

// Reconcile writes one template's conditions.
func (r *TemplateConditionsReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	tmpl := &ctfv1alpha1.ChallengeTemplate{}
	if err := r.Client.Get(ctx, req.NamespacedName, tmpl); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := tmpl.DeepCopy()
	for _, c := range TemplateConditions(tmpl, r.Check(tmpl)) {
		apimeta.SetStatusCondition(&tmpl.Status.Conditions, c)
	}
	if !apimeta.IsStatusConditionFalse(tmpl.Status.Conditions, TemplateAccepted) {
		apimeta.RemoveStatusCondition(&tmpl.Status.Conditions, TemplateStalled)
	}
	tmpl.Status.ObservedGeneration = tmpl.Generation
	if equalStatus(before, tmpl) {
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, client.IgnoreNotFound(r.Client.Status().Patch(ctx, tmpl, client.MergeFrom(before)))
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
	if tmpl.Spec.Pool != nil && (tmpl.Status.Pool == nil || tmpl.Status.Pool.Ready == 0) {
		return append(out, cond(TemplateReady, metav1.ConditionFalse, "PoolFilling", "no pooled instance is ready to claim yet"))
	}
	return append(out, cond(TemplateReady, metav1.ConditionTrue, "Ready", "teams' instances can be served"))
}

// equalStatus tells whether a and b have the same conditions (but for their
// transition times, which SetStatusCondition keeps) and observed generation.
func equalStatus(a, b *ctfv1alpha1.ChallengeTemplate) bool {
	if a.Status.ObservedGeneration != b.Status.ObservedGeneration || len(a.Status.Conditions) != len(b.Status.Conditions) {
		return false
	}
	for _, c := range b.Status.Conditions {
		old := apimeta.FindStatusCondition(a.Status.Conditions, c.Type)
		if old == nil || old.Status != c.Status || old.Reason != c.Reason || old.Message != c.Message || old.ObservedGeneration != c.ObservedGeneration {
			return false
		}
	}
	return true
}

// SetupWithManager watches templates (their pool's status among them).
func (r *TemplateConditionsReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("challengetemplate-conditions").
		For(&ctfv1alpha1.ChallengeTemplate{}).
		Complete(r)
}
