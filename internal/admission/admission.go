// Package admission decides whether a Challenge may have an instance now:
// served by a pooled instance it claims, installed, held back by its team's
// quota or budget, or queued for the cluster's capacity. It decides nothing about what
// an instance renders (package values does): a Challenge reaches admission
// only once its values composed, so a claim and a place in the queue go only
// to a Challenge whose install would be admitted. Its wake-ups live beside
// its rules (wakes.go): which events free a place or a budget, and which
// Challenges they wake.
package admission

import (
	"context"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/containment"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
	"github.com/challenge-operator/challenge-operator/internal/pool"
)

// Admission is every rule that decides whether a Challenge gets an
// instance now, in the order they apply.
type Admission struct {
	// Quota bounds a participant's instances; nil for none.
	Quota *Quota
	// Budget bounds what a participant's instances request together; nil
	// for none.
	Budget *Budget
	// Queue bounds the cluster's and a template's live instances; nil for none.
	Queue *Queue
	// Pools hands a Challenge of a pooled template a ready instance instead
	// of an install; nil for no pools.
	Pools *pool.Pools
	// Canaries are the operator's trials of a Degraded template, which no
	// bound holds back: they are how the hold is lifted.
	Canaries *containment.Canaries
}

// Served returns the error that keeps a Challenge which claimed a pooled
// instance from being installed itself (Claimed, or PooledInstanceGone once
// that instance is gone), nil for any other Challenge. It comes before the
// values: a claimant is served whatever its template has become since.
func (a Admission) Served(ctx context.Context, c *ctfv1alpha1.Challenge) error {
	ref, pooled, err := a.Pools.Of(ctx, c)
	if err != nil || ref == nil {
		return err
	}
	if pooled == nil {
		return lifecycle.PooledInstanceGone(ref)
	}
	return claimed(pooled)
}

// Admit decides whether c, an instance of tmpl whose values composed, may
// be installed now: nil when it may (or is installed already, unless its
// change would raise its requests past its team's budget), else a
// QuotaExceeded, BudgetExceeded, Claimed or Queued error. The team's bounds
// come first: a claim is a team's instance like any other, and a team over
// them is refused, never queued. A claim adds no instance to the cluster,
// so it goes ahead of the queue; a pooled instance, no team's until
// claimed, is not counted against a budget, and waits only for the
// cluster's bound (--max-instances), behind every team's start. A template
// paused by its solver check holds its teams' starts and claims; a
// Degraded one its new installs, pooled ones among them, while a claim of
// a pooled instance that runs goes ahead. The operator's canaries are no
// team's and held by nothing: the containment canary tries whether the
// template installs again, the solver's claims where there is a pool.
func (a Admission) Admit(ctx context.Context, c *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate) error {
	if a.Canaries.Is(c) || a.Pools.IsPooled(c) && lifecycle.Installed(&c.Status) {
		return nil
	}
	if lifecycle.Installed(&c.Status) {
		return a.Budget.AdmitInstalled(ctx, c, tmpl)
	}
	solver := a.Canaries.IsSolver(c)
	if !solver {
		if err := a.teamBounds(ctx, c, tmpl); err != nil {
			return err
		}
	}
	pooled, err := a.Pools.Claim(ctx, c, tmpl)
	if err != nil {
		return err
	}
	if pooled != nil {
		return claimed(pooled)
	}
	if solver {
		return nil
	}
	if err := containment.Hold(tmpl); err != nil {
		return err
	}
	if a.Pools.IsPooled(c) {
		// A pool fills within the cluster's bound alone: its template's
		// bound is its teams'.
		return a.Queue.Check(ctx, c, nil)
	}
	return a.Queue.Check(ctx, c, tmpl)
}

// teamBounds refuses c beyond its team's quota or budget, and holds a
// team's start or claim of a paused template.
func (a Admission) teamBounds(ctx context.Context, c *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate) error {
	if a.Quota != nil {
		if err := a.Quota.Check(ctx, c, tmpl); err != nil {
			a.Budget.Forget(c)
			return err
		}
	}
	if a.Pools.IsPooled(c) {
		return nil
	}
	if err := a.Budget.Admit(ctx, c, tmpl); err != nil {
		return err
	}
	return containment.Pause(tmpl)
}

// claimed is the error that keeps the Helm reconciler from installing
// anything for a Challenge served by a pooled instance.
func claimed(pooled *ctfv1alpha1.Challenge) error {
	return lifecycle.Errorf(lifecycle.ReasonClaimed, "served by %s/%s from the template's pool", pooled.Namespace, pooled.Name)
}
