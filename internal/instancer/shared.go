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

// sharedInstance is t's one instance in the instancer's namespace, whoever
// made it: the Running one if any, else the oldest not leaving.
func (s *Server) sharedInstance(ctx context.Context, t *ctfv1alpha1.ChallengeTemplate) (*ctfv1alpha1.Challenge, *apiError) {
	var list ctfv1alpha1.ChallengeList
	if err := s.Client.List(ctx, &list, client.InNamespace(s.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, s.internal(ctx, err)
	}
	var best *ctfv1alpha1.Challenge
	for i := range list.Items {
		ch := &list.Items[i]
		if ch.Spec.Template != t.Name || ch.DeletionTimestamp != nil {
			continue
		}
		running := ch.Status.Phase == ctfv1alpha1.PhaseRunning
		if best == nil || (running && best.Status.Phase != ctfv1alpha1.PhaseRunning) ||
			(running == (best.Status.Phase == ctfv1alpha1.PhaseRunning) && ch.CreationTimestamp.Before(&best.CreationTimestamp)) {
			best = ch
		}
	}
	if best == nil {
		return nil, errSharedNotStarted
	}
	return best.DeepCopy(), nil
}

// sharedView is the shared instance as every team sees it: no expiry, no
// renewals, whatever the organiser gave it.
func sharedView(ch *ctfv1alpha1.Challenge) Instance {
	v := instanceView(ch, nil)
	v.ExpiresAt, v.RenewalsLeft = nil, nil
	return v
}
