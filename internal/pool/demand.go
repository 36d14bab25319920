package pool

import (
	"sync"
	"time"
)

// demandWindow is how far back demand counts: a pool holds as many
// instances as the busiest minute of that window asked for.
const demandWindow = 5

// Demand counts, per template, the Challenges created in each of the last
// few minutes, claimed or not. It lives in memory: after a restart pools
// start again from their min and grow with the first claims.
type Demand struct {
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Changed, when set, hears the template of every Challenge counted: its
	// pool may have to grow.
	Changed func(template string)

	mu      sync.Mutex
	minutes map[string]*[demandWindow]bucket
	last    time.Time
	// held is when each piece of the pools' work held back (Hold) was
	// first held.
	held map[string]time.Time
}

type bucket struct {
	minute int64
	n      int32
}

// Clock is the pools' time: Now, or time.Now when it is nil. The pool
// controller reads openings' windows with it, so that a test that moves
// the demand's clock moves the openings' too.
func (d *Demand) Clock() time.Time {
	if d != nil && d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

func (d *Demand) now() int64 { return d.Clock().Unix() / 60 }

// Busy is how long to wait until quiet has passed since the last
// Challenge counted; 0 once it has.
func (d *Demand) Busy(quiet time.Duration) time.Duration {
	if d == nil {
		return 0
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.last.IsZero() {
		return 0
	}
	return max(0, quiet-d.Clock().Sub(d.last))
}

// Hold is how long the pools' work named key should still wait, so that
// teams asking for instances are served by the API server alone: until
// quiet has passed since the last Challenge counted, at most patience after
// key was first held. 0 means run it now; key is then forgotten and, when
// it comes back busy, waits afresh. since is when key was first held (zero
// if it never was): work that follows from it (a refill's installs after
// its creates) is held no longer in all (Waited).
func (d *Demand) Hold(key string, quiet, patience time.Duration) (wait time.Duration, since time.Time) {
	if d == nil {
		return 0, time.Time{}
	}
	busy := d.Busy(quiet)
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.Clock()
	since, held := d.held[key]
	if busy > 0 {
		if !held {
			since = now
			if d.held == nil {
				d.held = map[string]time.Time{}
			}
			d.held[key] = since
		}
		if left := patience - now.Sub(since); left > 0 {
			return min(busy, left), since
		}
	}
	delete(d.held, key)
	return 0, since
}

// Waited records that the work named key has waited since then already, if
// it was held back for less: the work that called for it (Hold's since).
func (d *Demand) Waited(key string, since time.Time) {
	if d == nil || since.IsZero() {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.held == nil {
		d.held = map[string]time.Time{}
	}
	if at, ok := d.held[key]; !ok || since.Before(at) {
		d.held[key] = since
	}
}

// Add counts one Challenge of template now.
func (d *Demand) Add(template string) {
	if d == nil {
		return
	}
	m := d.now()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.minutes == nil {
		d.minutes = map[string]*[demandWindow]bucket{}
	}
	w := d.minutes[template]
	if w == nil {
		w = &[demandWindow]bucket{}
		d.minutes[template] = w
	}
	b := &w[m%demandWindow]
	if b.minute != m {
		*b = bucket{minute: m}
	}
	b.n++
	d.last = d.Clock()
	if d.Changed != nil {
		d.Changed(template)
	}
}

// Peak is the most Challenges of template created in one minute of the window.
func (d *Demand) Peak(template string) int32 {
	if d == nil {
		return 0
	}
	m := d.now()
	d.mu.Lock()
	defer d.mu.Unlock()
	var peak int32
	if w := d.minutes[template]; w != nil {
		for _, b := range w {
			if m-b.minute < demandWindow {
				peak = max(peak, b.n)
			}
		}
	}
	return peak
}

// Target is how many unclaimed instances a pool of min..max keeps now.
func (d *Demand) Target(template string, minSize, maxSize int32) int32 {
	return min(max(d.Peak(template), minSize), maxSize)
}
