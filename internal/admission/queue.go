package admission

import (
	"context"
	"fmt"
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/containment"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
	"github.com/challenge-operator/challenge-operator/internal/pool"
)

// Queue bounds live instances: at most MaxInstances in the cluster (the
// operator's --max-instances) and a template's maxInstances of it. A
// Challenge beyond them waits, Queued, and is installed in creation order
// as instances go: deleting and re-creating one puts it at the back.
type Queue struct {
	// Reader lists Challenges, usually the manager's cache.
	Reader client.Reader
	// MaxInstances bounds the cluster's live instances; 0 means no bound.
	MaxInstances int32
	// Pools tells pooled instances, which the cluster's bound counts as
	// instances and a template's bound does not: an unclaimed one is no
	// team's, and a claimed one counts there as its claimant.
	Pools *pool.Pools
	// Canaries tells the operator's canaries (containment's and the solver
	// check's), which take no place under their template's bound (a shared
	// template's one instance, a per-team one's maxInstances) and wait for
	// none (Admit queues none of them); the cluster's bound counts them.
	Canaries *containment.Canaries
}

// Position is c's place in the queue, 1 being next, or 0 when it may be
// installed now.
func (q *Queue) Position(ctx context.Context, c *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate) (int32, error) {
	if !q.MayWait(c, tmpl) {
		return 0, nil
	}
	var list ctfv1alpha1.ChallengeList
	if err := q.Reader.List(ctx, &list); err != nil {
		return 0, fmt.Errorf("listing Challenges for the queue: %w", err)
	}
	pos := clusterPosition(c, list.Items, q.MaxInstances, q.Pools.IsPooled)
	// A template's bound counts its teams' Challenges, claimants among
	// them, not its pool nor the operator's canaries.
	teams := slices.DeleteFunc(list.Items, func(o ctfv1alpha1.Challenge) bool { return q.Pools.IsPooled(&o) || q.Canaries.IsAny(&o) })
	return max(pos, QueuePosition(c, tmpl, teams, 0)), nil
}

// MayWait tells whether c, an instance of tmpl (nil for none), may have to
// wait in the queue: a bound applies to it, the cluster's or its
// template's. An instance no bound applies to is installed at once.
func (q *Queue) MayWait(c *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate) bool {
	return q != nil && (q.MaxInstances != 0 || templateLimit(tmpl) != 0) && !q.Canaries.IsAny(c)
}

// clusterPosition is c's place under the cluster's bound, maxInstances:
// every instance counts, a pooled one, claimed or not, among them (a pool
// the organiser sizes cannot step past the admin's bound), and not the
// Challenge a pooled one serves, which adds none. A team's Challenge
// waiting goes ahead of a pooled one waiting to fill a pool, whenever
// each was created: a pool's refill never delays a team's start.
func clusterPosition(c *ctfv1alpha1.Challenge, all []ctfv1alpha1.Challenge, maxInstances int32, pooled func(*ctfv1alpha1.Challenge) bool) int32 {
	cPooled := pooled(c)
	instances := func(o *ctfv1alpha1.Challenge) bool { return o.Status.PooledInstance == nil }
	waitsAhead := func(o *ctfv1alpha1.Challenge) bool {
		if oPooled := pooled(o); oPooled != cPooled {
			return cPooled
		}
		return before(o, c)
	}
	return placeUnder(c, all, maxInstances, instances, waitsAhead)
}

// placeUnder is c's place under one bound, limit live instances (0: none)
// of those among all that counts keeps: the installed ones take their
// places first, then the waiting ones waitsAhead puts before c; one that
// failed to install waits for a fix, not for capacity, and holds none.
func placeUnder(c *ctfv1alpha1.Challenge, all []ctfv1alpha1.Challenge, limit int32, counts, waitsAhead func(*ctfv1alpha1.Challenge) bool) int32 {
	if limit == 0 {
		return 0
	}
	var live, ahead int32
	for i := range all {
		o := &all[i]
		if o.UID == c.UID || !o.DeletionTimestamp.IsZero() || !counts(o) {
			continue
		}
		switch {
		case lifecycle.Installed(&o.Status):
			live++
		case o.Status.Phase != ctfv1alpha1.PhaseError && waitsAhead(o):
			ahead++
		}
	}
	return max(0, live+ahead-limit+1)
}

// Check returns a Queued error while c must wait.
func (q *Queue) Check(ctx context.Context, c *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate) error {
	pos, err := q.Position(ctx, c, tmpl)
	if err != nil || pos == 0 {
		return err
	}
	return lifecycle.Errorf(lifecycle.ReasonQueued, "position %d: waiting for capacity (--max-instances %d, the template's maxInstances %s)",
		pos, q.MaxInstances, describeLimit(tmpl))
}

func describeLimit(tmpl *ctfv1alpha1.ChallengeTemplate) string {
	switch {
	case tmpl != nil && tmpl.Spec.IsShared():
		return "1: it is shared, one instance for every team"
	case tmpl == nil || tmpl.Spec.MaxInstances == nil:
		return "unset"
	}
	return fmt.Sprint(*tmpl.Spec.MaxInstances)
}

// QueuePosition decides c's place from every Challenge (c may be among
// them): for each bound, the instances live (installed, not leaving) take
// their places first, then the waiting ones in creation order; c's place
// is the furthest it is from either bound's free capacity.
func QueuePosition(c *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate, all []ctfv1alpha1.Challenge, maxInstances int32) int32 {
	everyone := func(*ctfv1alpha1.Challenge) bool { return true }
	sameTemplate := func(o *ctfv1alpha1.Challenge) bool { return o.Spec.Template == c.Spec.Template }
	createdBefore := func(o *ctfv1alpha1.Challenge) bool { return before(o, c) }
	return max(placeUnder(c, all, maxInstances, everyone, createdBefore), placeUnder(c, all, templateLimit(tmpl), sameTemplate, createdBefore))
}

// templateLimit is how many live instances tmpl may have: one when it is
// shared (a second waits until the first is gone), else its maxInstances.
func templateLimit(tmpl *ctfv1alpha1.ChallengeTemplate) int32 {
	switch {
	case tmpl != nil && tmpl.Spec.IsShared():
		return 1
	case tmpl == nil || tmpl.Spec.MaxInstances == nil:
		return 0
	}
	return *tmpl.Spec.MaxInstances
}
