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

// Event reasons on a pooled template.
const (
	ReasonRefilled = "PoolRefilled"
	ReasonShrunk   = "PoolShrunk"
	ReasonReplaced = "PoolReplaced"
)

// Plan is what one reconcile of a pool does, decided from what it read
// alone, so that every case is table-tested without an API server. The pool
// controller carries it out in the order of its fields.
type Plan struct {
	// Claimed are the claimed pooled instances: each is deleted if its
	// claimant is gone, which only a read of the claimant tells (Orphaned).
	Claimed []*ctfv1alpha1.Challenge
	// Replace deletes the unclaimed instances made for an older generation
	// of the template, or all of them when it has no pool any more.
	Replace Removal
	// Add is how many unclaimed instances to create.
	Add int32
	// Shrink deletes the surplus when demand fell.
	Shrink Removal
	// Status is the template's status.pool once the pool is resized; nil
	// when the template has no pool.
	Status *ctfv1alpha1.PoolStatus
	// Standing is the template's status.pool as the pool stands, before
	// any of the plan's changes: what it says while they wait (nil when the
	// template has no pool).
	Standing *ctfv1alpha1.PoolStatus
	// RequeueAfter is when to look again (0: not before an event): demand
	// above the pool's min ages out minute by minute.
	RequeueAfter time.Duration
}

// Removal is a batch of unclaimed pooled instances to delete and the Event
// that says why (its Note a format for their count).
type Removal struct {
	Pooled       []*ctfv1alpha1.Challenge
	Reason, Note string
}

// Plan decides how to bring tmpl's pool to target unclaimed instances,
// from its Challenges as listed (items, which it never modifies). Leaving
// ones and those not pooled are not its business; claimed ones are never
// resized, only checked for a claimant; unclaimed ones of an older
// generation are replaced. target counts only when tmpl has a pool.
func (p *Pools) Plan(tmpl *ctfv1alpha1.ChallengeTemplate, items []ctfv1alpha1.Challenge, target int32) Plan {
	var plan Plan
	var unclaimed, stale []*ctfv1alpha1.Challenge
	for i := range items {
		pooled := &items[i]
		if !pooled.DeletionTimestamp.IsZero() || !p.IsPooled(pooled) {
			continue
		}
		if _, _, claimed := Claimant(pooled); claimed {
			plan.Claimed = append(plan.Claimed, pooled)
			continue
		}
		if tmpl.Spec.Pool == nil || !current(pooled, tmpl) {
			stale = append(stale, pooled)
			continue
		}
		unclaimed = append(unclaimed, pooled)
	}
	plan.Replace = Removal{Pooled: stale, Reason: ReasonReplaced, Note: noteReplaced}
	if tmpl.Spec.Pool == nil {
		plan.Replace.Note = noteNoPool
		return plan
	}
	size := int32(len(unclaimed))
	plan.Standing = &ctfv1alpha1.PoolStatus{Size: size, Ready: countClaimable(unclaimed, tmpl), Target: target}
	// held is how many unclaimed instances the pool holds once grown or shrunk.
	held := size
	switch {
	case size < target:
		plan.Add = target - size
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
		plan.Shrink = Removal{Pooled: unclaimed[:size-target], Reason: ReasonShrunk, Note: noteShrunk}
		unclaimed = unclaimed[size-target:]
		held = target
	}
	plan.Status = &ctfv1alpha1.PoolStatus{Size: held, Ready: countClaimable(unclaimed, tmpl), Target: target}
	if target > tmpl.Spec.Pool.Min {
		// Demand ages out minute by minute: look again then.
		plan.RequeueAfter = time.Minute
	}
	return plan
}

// countClaimable is how many of pooled may be claimed now.
func countClaimable(pooled []*ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate) int32 {
	var n int32
	for _, ch := range pooled {
		if Claimable(ch, tmpl) {
			n++
		}
	}
	return n
}

// Orphaned tells whether a claimed pooled instance's claimant, whose UID the
// claim names, is gone: not found (nil), or another Challenge made since
// under its name.
func Orphaned(claimantUID types.UID, found *ctfv1alpha1.Challenge) bool {
	return found == nil || found.UID != claimantUID
}
