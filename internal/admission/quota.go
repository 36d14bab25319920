package admission

import (
	"context"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
)

// ParticipantField indexes Challenges by spec.participant in the manager's cache.
const ParticipantField = "spec.participant"

// Quota limits active instances per participant: at most Max overall (the
// template's limit when it sets one) and one per template. Challenges are
// admitted in creation order, so two created at once never both slip through.
type Quota struct {
	// Reader lists Challenges; it must have the ParticipantField index.
	Reader client.Reader
	// DefaultMax is the operator-wide cap; 0 means none.
	DefaultMax int32
}

// Check returns a QuotaExceeded error if c may not be installed.
func (q *Quota) Check(ctx context.Context, c *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate) error {
	var list ctfv1alpha1.ChallengeList
	if err := q.Reader.List(ctx, &list, client.MatchingFields{ParticipantField: c.Spec.Participant}); err != nil {
		return fmt.Errorf("listing Challenges of participant %s: %w", c.Spec.Participant, err)
	}
	return CheckQuota(c, tmpl, list.Items, q.DefaultMax)
}

// CheckQuota decides the quota from the participant's Challenges (c may be among them).
func CheckQuota(c *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate, others []ctfv1alpha1.Challenge, defaultMax int32) error {
	if installedAsListed(c, others) {
		return nil
	}
	limit := defaultMax
	if tmpl != nil && tmpl.Spec.MaxInstancesPerParticipant != nil {
		limit = *tmpl.Spec.MaxInstancesPerParticipant
	}
	var ahead int32
	for i := range others {
		o := &others[i]
		if o.UID == c.UID || !o.DeletionTimestamp.IsZero() || o.Spec.Participant != c.Spec.Participant {
			continue
		}
		// An installed instance always counts; the others queue in creation order.
		if !lifecycle.Installed(&o.Status) && !before(o, c) {
			continue
		}
		if c.Spec.Template != "" && o.Spec.Template == c.Spec.Template {
			return lifecycle.Errorf(lifecycle.ReasonQuotaExceeded, "participant %s already has an instance of %s: %s/%s",
				c.Spec.Participant, c.Spec.Template, o.Namespace, o.Name)
		}
		ahead++
	}
	if limit > 0 && ahead >= limit {
		return lifecycle.Errorf(lifecycle.ReasonQuotaExceeded, "participant %s already has %d active instances, the limit is %d",
			c.Spec.Participant, ahead, limit)
	}
	return nil
}

// before orders Challenges by creation, then namespace and name; a Challenge
// not yet created (at admission) comes after every existing one.
func before(a, b *ctfv1alpha1.Challenge) bool {
	if b.CreationTimestamp.IsZero() {
		return true
	}
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}

// installedAsListed tells whether c is installed as items, its
// participant's Challenges read now, show it: c's own copy may have been
// read before its install (by the Helm reconcile that follows it). An
// installed instance is never refused by a team's bounds.
func installedAsListed(c *ctfv1alpha1.Challenge, items []ctfv1alpha1.Challenge) bool {
	for i := range items {
		if items[i].UID == c.UID {
			return lifecycle.Installed(&items[i].Status)
		}
	}
	return false
}
