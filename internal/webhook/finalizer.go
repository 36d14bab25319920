package webhook

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"

	jsonpatch "gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// FinalizerPath is where the mutating webhook is served.
const FinalizerPath = "/mutate-ctf-challenge-operator-io-v1alpha1-challenge"

// +kubebuilder:webhook:path=/mutate-ctf-challenge-operator-io-v1alpha1-challenge,mutating=true,failurePolicy=ignore,timeoutSeconds=5,sideEffects=None,groups=ctf.challenge-operator.io,resources=challenges,verbs=create,versions=v1alpha1,name=mchallenge.ctf.challenge-operator.io,admissionReviewVersions=v1

// Finalizer sets the Helm reconciler's finalizer on a Challenge as it is
// created, which the reconciler otherwise adds with an update of its own
// before it installs anything: a request of every install, and a write of
// the Challenge that the install's first status write then follows. The reconciler
// still adds it where the webhook did not (it is off, failed, or the
// Challenge predates it): the webhook ignores its failures.
//
// It sends a patch of the finalizers alone, never the Challenge re-encoded,
// which would rewrite what the typed API normalises (quantities, times).
type Finalizer struct {
	// Namespaces are those the operator reconciles Challenges in; empty,
	// all. A finalizer on a Challenge no reconciler removes would keep it
	// from being deleted.
	Namespaces []string
}

// Handle adds the finalizer to a Challenge being created in a namespace
// the operator reconciles.
func (f *Finalizer) Handle(_ context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create {
		return admission.Allowed("")
	}
	if len(f.Namespaces) > 0 && !slices.Contains(f.Namespaces, req.Namespace) {
		return admission.Allowed("not reconciled by this operator")
	}
	var obj metav1.PartialObjectMetadata
	if err := json.Unmarshal(req.Object.Raw, &obj); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	switch {
	case slices.Contains(obj.Finalizers, ctfv1alpha1.UninstallFinalizer):
		return admission.Allowed("")
	case len(obj.Finalizers) == 0:
		return admission.Patched("", jsonpatch.NewOperation("add", "/metadata/finalizers", []string{ctfv1alpha1.UninstallFinalizer}))
	default:
		return admission.Patched("", jsonpatch.NewOperation("add", "/metadata/finalizers/-", ctfv1alpha1.UninstallFinalizer))
	}
}
