package webhook

import (
	"context"
	"errors"
	"slices"

	jsonpatch "gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// CreationPath is where the mutating webhook is served.
const CreationPath = "/mutate-ctf-challenge-operator-io-v1alpha1-challenge"

// +kubebuilder:webhook:path=/mutate-ctf-challenge-operator-io-v1alpha1-challenge,mutating=true,failurePolicy=ignore,timeoutSeconds=5,sideEffects=None,groups=ctf.challenge-operator.io,resources=challenges,verbs=create,versions=v1alpha1,name=mchallenge.ctf.challenge-operator.io,admissionReviewVersions=v1,reinvocationPolicy=IfNeeded

// CreateValidator is what Creation asks of the validator.
type CreateValidator interface {
	ValidateCreate(ctx context.Context, ch *ctfv1alpha1.Challenge) (admission.Warnings, error)
}

// Creation admits a Challenge as it is created, in one call of the API
// server's where a validating webhook beside a mutating one took two (each
// measured at 18-23 ms of a create's answer in a burst, and a share of the
// API server's CPU): it refuses what the validator refuses, and sets the
// Helm reconciler's finalizer, which the reconciler otherwise adds with an
// update of its own before it installs anything. The reconciler still adds
// the finalizer, and the operator still refuses what it must, where the
// webhook did not run (it is off, failed, or the Challenge predates it).
//
// A mutating webhook runs before the API server's schema validation and
// before the mutating webhooks ordered after it; it asks to be called
// again if one of those changes the Challenge (reinvocationPolicy
// IfNeeded), and leaves a Challenge that does not decode to the schema's
// own, clearer refusal.
//
// It sends a patch of the finalizers alone, never the Challenge re-encoded,
// which would rewrite what the typed API normalises (quantities, times).
type Creation struct {
	// Decoder reads the Challenge, as controller-runtime's validating
	// webhooks do.
	Decoder admission.Decoder
	// Validator refuses what the operator would not install. Pooled
	// instances are the operator's own, made from their template: it checks
	// them itself (as the validating webhook leaves them out on update).
	Validator CreateValidator
	// Namespaces are those the operator reconciles Challenges in; empty,
	// all. A finalizer on a Challenge no reconciler removes would keep it
	// from being deleted.
	Namespaces []string
}

// Handle refuses a Challenge being created that the validator refuses,
// else adds the finalizer to it in a namespace the operator reconciles.
func (c *Creation) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create {
		return admission.Allowed("")
	}
	var ch ctfv1alpha1.Challenge
	if err := c.Decoder.Decode(req, &ch); err != nil {
		// Not a Challenge of the schema: its validation, next, says why.
		return admission.Allowed("")
	}
	var warnings admission.Warnings
	if _, pooled := ch.Labels[ctfv1alpha1.PoolLabel]; !pooled {
		var err error
		if warnings, err = c.Validator.ValidateCreate(admission.NewContextWithRequest(ctx, req), &ch); err != nil {
			return refused(err).WithWarnings(warnings...)
		}
	}
	return finalized(&ch, req.Namespace, c.Namespaces).WithWarnings(warnings...)
}

// refused is the answer that refuses a creation for err, with its status
// when it is an API error (a Forbidden naming the reason), as
// controller-runtime's validating webhooks answer.
func refused(err error) admission.Response {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		s := status.Status()
		return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &s}}
	}
	return admission.Denied(err.Error())
}

// finalized is the answer that adds the Helm reconciler's finalizer to ch,
// created in namespace, if the operator reconciles it (namespaces; empty,
// all).
func finalized(ch *ctfv1alpha1.Challenge, namespace string, namespaces []string) admission.Response {
	switch {
	case len(namespaces) > 0 && !slices.Contains(namespaces, namespace):
		return admission.Allowed("not reconciled by this operator")
	case slices.Contains(ch.Finalizers, ctfv1alpha1.UninstallFinalizer):
		return admission.Allowed("")
	case len(ch.Finalizers) == 0:
		return admission.Patched("", jsonpatch.NewOperation("add", "/metadata/finalizers", []string{ctfv1alpha1.UninstallFinalizer}))
	default:
		return admission.Patched("", jsonpatch.NewOperation("add", "/metadata/finalizers/-", ctfv1alpha1.UninstallFinalizer))
	}
}
