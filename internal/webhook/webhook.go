// Package webhook refuses at admission what the operator would otherwise
// refuse later with phase Error: duplicate, over-quota and over-budget
// instances, values a template does not allow, reserved label and
// annotation keys, lifetimes over its maximum; on creation and on every
// update, of every Challenge but the pooled instances (the operator made
// them, and checks them itself). A Challenge's creation goes through one
// mutating webhook (Creation), which also sets the Helm reconciler's
// finalizer; its updates through a validating one. Both are optional: the
// operator reaches the same verdicts, and adds its finalizer, without them.
package webhook

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlwebhook "sigs.k8s.io/controller-runtime/pkg/webhook"
	webhookadmission "sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/admission"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
	"github.com/challenge-operator/challenge-operator/internal/values"
)

// ChallengeValidator validates Challenges against their template, the
// operator's value policy and the quotas.
type ChallengeValidator struct {
	// Reader reads templates and Challenges (the manager's cache, with the participant index).
	Reader client.Reader
	// Quota is the same quota the operator applies.
	Quota *admission.Quota
	// Budget is the same team budget the operator applies; nil for none.
	Budget *admission.Budget
	// Settings are the operator's own, so that admission and rendering agree.
	Settings values.Settings
}

// +kubebuilder:webhook:path=/validate-ctf-challenge-operator-io-v1alpha1-challenge,mutating=false,failurePolicy=ignore,timeoutSeconds=5,sideEffects=None,groups=ctf.challenge-operator.io,resources=challenges,verbs=update,versions=v1alpha1,name=vchallenge.ctf.challenge-operator.io,admissionReviewVersions=v1

// ValidateCreate refuses a Challenge the operator would not install: the
// creation webhook asks it (Creation).
func (v *ChallengeValidator) ValidateCreate(ctx context.Context, ch *ctfv1alpha1.Challenge) (webhookadmission.Warnings, error) {
	tmpl, warnings, err := v.compose(ctx, ch)
	if err != nil || tmpl == nil && ch.Spec.Template != "" {
		return warnings, err
	}
	if err := v.Quota.Check(ctx, ch, tmpl); err != nil {
		return nil, refusal(ch, err)
	}
	if err := v.Budget.Check(ctx, ch, tmpl); err != nil {
		return nil, refusal(ch, err)
	}
	return nil, nil
}

// ValidateUpdate refuses a change the operator would not roll out: the same
// value checks as at creation (the participant and template cannot change,
// so the quota and budget verdicts stand).
func (v *ChallengeValidator) ValidateUpdate(ctx context.Context, _, ch *ctfv1alpha1.Challenge) (webhookadmission.Warnings, error) {
	if !ch.DeletionTimestamp.IsZero() {
		return nil, nil // the finalizer's removal must never be refused
	}
	_, warnings, err := v.compose(ctx, ch)
	return warnings, err
}

// compose runs the translator's checks on ch; tmpl is nil when ch has no
// template or it does not exist yet (allowed: the Challenge waits in
// Error/TemplateNotFound until it appears).
func (v *ChallengeValidator) compose(ctx context.Context, ch *ctfv1alpha1.Challenge) (*ctfv1alpha1.ChallengeTemplate, webhookadmission.Warnings, error) {
	var tmpl *ctfv1alpha1.ChallengeTemplate
	if ch.Spec.Template != "" {
		tmpl = &ctfv1alpha1.ChallengeTemplate{}
		err := v.Reader.Get(ctx, client.ObjectKey{Name: ch.Spec.Template}, tmpl)
		switch {
		case apierrors.IsNotFound(err):
			return nil, webhookadmission.Warnings{fmt.Sprintf("ChallengeTemplate %q does not exist yet", ch.Spec.Template)}, nil
		case err != nil:
			return nil, nil, err
		}
	}
	if _, err := values.Compose(ch, tmpl, v.Settings); err != nil {
		return nil, nil, refusal(ch, err)
	}
	return tmpl, nil, nil
}

// ValidateDelete accepts every deletion.
func (v *ChallengeValidator) ValidateDelete(context.Context, *ctfv1alpha1.Challenge) (webhookadmission.Warnings, error) {
	return nil, nil
}

// refusal turns a spec error into a Forbidden admission error naming the reason.
func refusal(ch *ctfv1alpha1.Challenge, err error) error {
	var re *lifecycle.ReasonedError
	if errors.As(err, &re) {
		return apierrors.NewForbidden(ctfv1alpha1.GroupVersion.WithResource("challenges").GroupResource(), ch.Name, err)
	}
	return err
}

// Setup registers the creation webhook and the validating one (updates)
// with the manager's webhook server; namespaces are those the operator
// reconciles Challenges in (empty: all).
func Setup(mgr ctrl.Manager, quota *admission.Quota, budget *admission.Budget, settings values.Settings, namespaces []string) error {
	validator := &ChallengeValidator{Reader: mgr.GetClient(), Quota: quota, Budget: budget, Settings: settings}
	mgr.GetWebhookServer().Register(CreationPath, &ctrlwebhook.Admission{Handler: &Creation{
		Decoder: webhookadmission.NewDecoder(mgr.GetScheme()), Validator: validator, Namespaces: namespaces}})
	return builder.WebhookManagedBy(mgr, &ctfv1alpha1.Challenge{}).WithValidator(validator).Complete()
}
