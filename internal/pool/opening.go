package pool

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// The CRD's defaults of an opening's window; only an object the API server
// has not defaulted (a test's) goes without them.
const (
	defaultFillBefore = 15 * time.Minute
	defaultHoldFor    = 30 * time.Minute
)

// Event reasons of an opening, on its template.
const (
	ReasonOpening     = "PoolOpening"
	ReasonOpeningOver = "PoolOpeningOver"
)

// Notes of the opening's Events.
const (
	noteOpening      = "growing the pool to %d for the opening at %s"
	noteOpeningOver  = "the opening at %s is past: the pool goes back to its demand"
	noteOpeningMoved = "the opening at %s was moved or removed: the pool goes back to its demand"
)

// Opening is where a moment falls in a pool's opening window,
// [time-fillBefore, time+holdFor).
type Opening struct {
	// At is the opening's time in UTC, to the second (as the status stores it);
	// zero without an opening.
	At time.Time
	// Open tells whether the moment is inside the window.
	Open bool
	// Size is the unclaimed instances the pool holds at least while Open.
	Size int32
	// Next is how long until the window's next edge: its start before it,
	// its end inside it; 0 after it or without an opening, when no edge is
	// left to wake for.
	Next time.Duration
}

// OpeningAt is spec's opening as it stands at now.
func OpeningAt(spec *ctfv1alpha1.PoolSpec, now time.Time) Opening {
	if spec == nil || spec.Opening == nil {
		return Opening{}
	}
	o := spec.Opening
	at := o.Time.UTC().Truncate(time.Second)
	start, end := at.Add(-durationOr(o.FillBefore, defaultFillBefore)), at.Add(durationOr(o.HoldFor, defaultHoldFor))
	switch {
	case now.Before(start):
		return Opening{At: at, Next: start.Sub(now)}
	case now.Before(end):
		return Opening{At: at, Open: true, Size: o.Size, Next: end.Sub(now)}
	}
	return Opening{At: at}
}

func durationOr(d *metav1.Duration, otherwise time.Duration) time.Duration {
	if d == nil {
		return otherwise
	}
	return d.Duration
}

// Target is the pool's target given its demand's (normal): at least Size
// inside the window, normal outside it.
func (o Opening) Target(normal int32) int32 {
	if !o.Open {
		return normal
	}
	return max(normal, o.Size)
}

// Held is what status.pool.opening says of o: its time inside the window,
// nil outside.
func (o Opening) Held() *metav1.Time {
	if !o.Open {
		return nil
	}
	return &metav1.Time{Time: o.At}
}

// Announcement is the Event that says an opening's window started or ended.
type Announcement struct {
	Reason, Note string
	// Of is the time of the opening it is about.
	Of time.Time
}

// Announce is the Event a reconcile that holds the pool for o gives, given
// the opening the status last held (held, status.pool.opening) and the
// pool's new target: PoolOpening when a window starts, PoolOpeningOver when
// the one held ends, or was moved or removed; nil when neither.
func (o Opening) Announce(held *metav1.Time, target int32) *Announcement {
	switch {
	case o.Open && (held == nil || !held.Time.Equal(o.At)):
		return &Announcement{ReasonOpening, fmt.Sprintf(noteOpening, target, stamp(o.At)), o.At}
	case o.Open || held == nil:
		return nil
	case held.Time.Equal(o.At):
		return &Announcement{ReasonOpeningOver, fmt.Sprintf(noteOpeningOver, stamp(held.Time)), held.UTC()}
	}
	return &Announcement{ReasonOpeningOver, fmt.Sprintf(noteOpeningMoved, stamp(held.Time)), held.UTC()}
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
