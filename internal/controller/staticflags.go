package controller

import (
	"context"
	"slices"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/ctfflag"
	"github.com/challenge-operator/challenge-operator/internal/flagtag"
)

// StaticFlagsReconciler publishes in each template's status the digests of
// its static named flags (flagtag.StaticDigest): the instancer, which reads
// no Secret, verifies submissions against them. The organiser's Secrets are
// read uncached and again every staticFlagsRefresh, so that a changed flag
// is published within it.
type StaticFlagsReconciler struct {
	Client client.Client
	// Organiser reads the organiser's Secrets, uncached.
	Organiser client.Reader
	Codec     *flagtag.Codec
	// FlagSecretNamespaces are where templates may read flags from.
	FlagSecretNamespaces []string
}

// staticFlagsRefresh is how often a template's static flags are read again.
const staticFlagsRefresh = time.Minute

// Reconcile publishes one template's static flags' digests.
func (r *StaticFlagsReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	tmpl := &ctfv1alpha1.ChallengeTemplate{}
	if err := r.Client.Get(ctx, req.NamespacedName, tmpl); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	var digests []ctfv1alpha1.StaticFlagDigest
	for i := range tmpl.Spec.Flags {
		f := &tmpl.Spec.Flags[i]
		if f.Static == nil || !slices.Contains(r.FlagSecretNamespaces, f.Static.Namespace) {
			continue // the render says why
		}
		value, err := ctfflag.ResolveNamed(ctx, r.Organiser, r.Codec, tmpl, f, "")
		if err != nil {
			// Never the value: ResolveNamed names the Secret and key.
			logf.FromContext(ctx).Info("a static flag's digest is not published", "template", tmpl.Name, "flag", f.Name, "reason", err.Error())
			continue
		}
		digests = append(digests, ctfv1alpha1.StaticFlagDigest{Name: f.Name, Digest: r.Codec.StaticDigest(tmpl.Name, f.Name, value)})
	}
	var result ctrl.Result
	if len(digests) > 0 || slices.ContainsFunc(tmpl.Spec.Flags, func(f ctfv1alpha1.NamedFlag) bool { return f.Static != nil }) {
		result.RequeueAfter = staticFlagsRefresh
	}
	if slices.Equal(digests, tmpl.Status.StaticFlags) {
		return result, nil
	}
	patch := client.MergeFrom(tmpl.DeepCopy())
	tmpl.Status.StaticFlags = digests
	return result, client.IgnoreNotFound(r.Client.Status().Patch(ctx, tmpl, patch))
}

// SetupWithManager watches templates.
func (r *StaticFlagsReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("challengetemplate-static-flags").
		For(&ctfv1alpha1.ChallengeTemplate{}).
		Complete(r)
}
