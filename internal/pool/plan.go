package pool

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// Notes of the Events on a pooled template, formats for a count.
const (
	noteReplaced = "replaced %d unclaimed pooled instances made for an older version of the template"
	noteNoPool   = "deleted %d unclaimed pooled instances: the template has no pool any more"
	noteShrunk   = "shrank by %d unclaimed pooled instances as demand fell"
)

// poolPlan is what one reconcile of a pool does, decided from what it read
// alone, so that every case is table-tested without an API server.
// Reconcile carries it out in the order of its fields.
type poolPlan struct {
	// claimed are the claimed pooled instances: each is deleted if its
	// claimant is gone, which only a read of the claimant tells.
	claimed []*ctfv1alpha1.Challenge
	// replace deletes the unclaimed instances made for an older generation
	// of the template, or all of them when it has no pool any more.
	replace removal
	// add is how many unclaimed instances to create.
	add int32
	// shrink deletes the surplus when demand fell.
	shrink removal
	// status is the template's status.pool once the pool is resized; nil
	// when the template has no pool.
	status *ctfv1alpha1.PoolStatus
	// requeueAfter is when to look again (0: not before an event): demand
	// above the pool's min ages out minute by minute.
	requeueAfter time.Duration
}

// removal is a batch of unclaimed pooled instances to delete and the Event
// that says why (its note a format for their count).
type removal struct {
	pooled       []*ctfv1alpha1.Challenge
	reason, note string
}

// planPool decides how to bring tmpl's pool to target unclaimed instances,
// from its Challenges as listed (items, which it never modifies). Leaving
// ones and those not pooled are not its business; claimed ones are never
// resized, only checked for a claimant; unclaimed ones of an older
// generation are replaced. target counts only when tmpl has a pool.
func (p *Pools) planPool(tmpl *ctfv1alpha1.ChallengeTemplate, items []ctfv1alpha1.Challenge, target int32) poolPlan {
	var plan poolPlan
	var unclaimed, stale []*ctfv1alpha1.Challenge
	for i := range items {
		pooled := &items[i]
		if !pooled.DeletionTimestamp.IsZero() || !p.IsPooled(pooled) {
			continue
		}
		if _, _, claimed := Claimant(pooled); claimed {
			plan.claimed = append(plan.claimed, pooled)
			continue
		}
		if tmpl.Spec.Pool == nil || !current(pooled, tmpl) {
			stale = append(stale, pooled)
			continue
		}
		unclaimed = append(unclaimed, pooled)
	}
	plan.replace = removal{pooled: stale, reason: ReasonReplaced, note: noteReplaced}
	if tmpl.Spec.Pool == nil {
		plan.replace.note = noteNoPool
		return plan
	}
	size := int32(len(unclaimed))
	// held is how many unclaimed instances the pool holds once grown or shrunk.
	held := size
	switch {
	case size < target:
		plan.add = target - size
		held = target
	case size > target:
		// The ones furthest from ready go first, then the newest.
		slices.SortFunc(unclaimed, func(a, b *ctfv1alpha1.Challenge) int {
			if ra, rb := a.Status.Phase == ctfv1alpha1.PhaseRunning, b.Status.Phase == ctfv1alpha1.PhaseRunning; ra != rb {
				if ra {
					return 1
				}
				return -1
			}
			return b.CreationTimestamp.Compare(a.CreationTimestamp.Time)
		})
		plan.shrink = removal{pooled: unclaimed[:size-target], reason: ReasonShrunk, note: noteShrunk}
		unclaimed = unclaimed[size-target:]
		held = target
	}
	var ready int32
	for _, pooled := range unclaimed {
		if Claimable(pooled, tmpl) {
			ready++
		}
	}
	plan.status = &ctfv1alpha1.PoolStatus{Size: held, Ready: ready, Target: target}
	if target > tmpl.Spec.Pool.Min {
		// Demand ages out minute by minute: look again then.
		plan.requeueAfter = time.Minute
	}
	return plan
}

// orphaned tells whether a claimed pooled instance's claimant, whose UID the
// claim names, is gone: not found (nil), or another Challenge made since
// under its name.
func orphaned(claimantUID types.UID, found *ctfv1alpha1.Challenge) bool {
	return found == nil || found.UID != claimantUID
}
