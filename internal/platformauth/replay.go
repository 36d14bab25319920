package platformauth

import (
	"cmp"
	"container/heap"
	"fmt"
	"sync"
	"time"
)

// DefaultReplayCapacity is how many unexpired tokens a ReplayCache holds
// unless told otherwise. Each is held until it expires, so with the default
// two-minute lifetime it admits some 800 calls a second, sustained, in a
// few tens of megabytes at most (a jti is at most 128 bytes).
const DefaultReplayCapacity = 100_000

// ReplayCache remembers the jti of each accepted platform token until the
// token expires, so that each is accepted once by this process (a server of
// several replicas records the calls it acts on where all of them look:
// see VerifyCall). It is bounded: when it
// holds its capacity of unexpired tokens, new calls are refused
// (ErrReplayCacheFull) rather than memory grown. Safe for concurrent use;
// the zero value is an empty cache of DefaultReplayCapacity.
type ReplayCache struct {
	capacity int

	mu sync.Mutex
	// expiry is each remembered jti's token expiry.
	expiry map[string]time.Time
	// queue holds the same entries, soonest expiry first, so that pruning
	// looks only at what has expired.
	queue expiryQueue
	// latest is the latest time any call was verified at. Entries are
	// pruned, and expiry judged, against it rather than each call's own
	// time, so a clock that steps back cannot revive a pruned jti.
	latest time.Time
}

// NewReplayCache returns an empty replay memory of capacity tokens;
// DefaultReplayCapacity when capacity is not positive.
func NewReplayCache(capacity int) *ReplayCache {
	return &ReplayCache{capacity: max(capacity, 0)}
}

// Len is how many tokens the cache remembers, expired ones not yet pruned
// included: a gauge for the instancer's metrics.
func (c *ReplayCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.expiry)
}

// admit records jti, whose token expires at exp, as used at now; it refuses
// a jti already recorded, an expiry the cache's clock has passed, and a new
// entry beyond capacity.
func (c *ReplayCache) admit(jti string, exp, now time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now.After(c.latest) {
		c.latest = now
	}
	if !exp.After(c.latest) {
		return fmt.Errorf("%w: by the latest time a call was verified at", ErrExpired)
	}
	c.prune()
	if _, seen := c.expiry[jti]; seen {
		return ErrReplayed
	}
	capacity := cmp.Or(c.capacity, DefaultReplayCapacity)
	if len(c.expiry) >= capacity {
		return fmt.Errorf("%w: %d unexpired tokens", ErrReplayCacheFull, capacity)
	}
	if c.expiry == nil {
		c.expiry = map[string]time.Time{}
	}
	c.expiry[jti] = exp
	heap.Push(&c.queue, expiring{jti: jti, exp: exp})
	return nil
}

// prune forgets every jti whose token has expired by latest: such a token
// is refused as expired before its jti is looked at.
func (c *ReplayCache) prune() {
	for len(c.queue) > 0 && !c.queue[0].exp.After(c.latest) {
		e := heap.Pop(&c.queue).(expiring)
		delete(c.expiry, e.jti)
	}
}

// expiring is one remembered jti and its token's expiry.
type expiring struct {
	jti string
	exp time.Time
}

// expiryQueue is a min-heap of expiring entries by expiry (container/heap).
type expiryQueue []expiring

func (q expiryQueue) Len() int           { return len(q) }
func (q expiryQueue) Less(i, j int) bool { return q[i].exp.Before(q[j].exp) }
func (q expiryQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }

// Push appends x, for container/heap.
func (q *expiryQueue) Push(x any) { *q = append(*q, x.(expiring)) }

// Pop removes the last entry, for container/heap.
func (q *expiryQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}
