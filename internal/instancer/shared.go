package instancer

import (
	"context"
	"net/http"

	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// A shared template (spec.sharing Shared) has one instance, which the
// organiser starts in the instancer's namespace and nobody renews: every
// team sees it, the same address on every page, and no team starts, stops
// or renews it.

var (
	errShared = &apiError{Status: http.StatusConflict, Code: "shared",
		Message: "This challenge is shared: one instance, started by the organisers, serves every team."}
	errSharedNotStarted = &apiError{Status: http.StatusNotFound, Code: "not_found",
		Message: "The organisers have not started this shared challenge yet."}
)

// sharedInstance is t's one instance in the instancer's namespace, the
// organiser's (pickShared).
func (s *Server) sharedInstance(ctx context.Context, t *ctfv1alpha1.ChallengeTemplate) (*ctfv1alpha1.Challenge, *apiError) {
	var list ctfv1alpha1.ChallengeList
	if err := s.Client.List(ctx, &list, client.InNamespace(s.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, s.internal(ctx, err)
	}
	best := pickShared(list.Items, t.Name)
	if best == nil {
		return nil, errSharedNotStarted
	}
	return best.DeepCopy(), nil
}

// pickShared is the instance of template among items every team is shown:
// the Running one if any, else the oldest not leaving; never one of the
// operator's own (a solver check's or containment's canary, a pooled
// instance), which may share the namespace and run beside the organiser's.
// A label forged on a Challenge only hides that Challenge.
func pickShared(items []ctfv1alpha1.Challenge, template string) *ctfv1alpha1.Challenge {
	var best *ctfv1alpha1.Challenge
	for i := range items {
		ch := &items[i]
		if ch.Spec.Template != template || ch.DeletionTimestamp != nil || operatorsOwn(ch) {
			continue
		}
		running := ch.Status.Phase == ctfv1alpha1.PhaseRunning
		if best == nil || (running && best.Status.Phase != ctfv1alpha1.PhaseRunning) ||
			(running == (best.Status.Phase == ctfv1alpha1.PhaseRunning) && ch.CreationTimestamp.Before(&best.CreationTimestamp)) {
			best = ch
		}
	}
	return best
}

// operatorsOwn tells the operator's own instances by their labels.
func operatorsOwn(ch *ctfv1alpha1.Challenge) bool {
	return ch.Labels[ctfv1alpha1.SolverCanaryLabel] != "" || ch.Labels[ctfv1alpha1.CanaryLabel] != "" || ch.Labels[ctfv1alpha1.PoolLabel] != ""
}

// sharedView is the shared instance as every team sees it: no expiry, no
// renewals, whatever the organiser gave it.
func sharedView(ch *ctfv1alpha1.Challenge) Instance {
	v := instanceView(ch, nil)
	v.ExpiresAt, v.RenewalsLeft = nil, nil
	return v
}
