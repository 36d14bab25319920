// Package pool keeps a warm pool of installed, Running instances per
// ChallengeTemplate and hands them to the Challenges that claim them.
//
// A pooled instance is a Challenge the operator creates in its
// --pool-namespace, labelled with its template, with a participant of its
// own (its name), so that quotas never see two pooled instances as one
// team's. A Challenge of a pooled template claims one when it is created:
// the claim is an update of the pooled Challenge (its claimant annotation),
// made with the resourceVersion it was read at, so two Challenges can never
// claim the same one. The claimant is then never installed itself: its
// status is the pooled instance's, and deleting it deletes the pooled one.
// A pooled instance is claimed once and never returns to the pool.
package pool

import (
	"cmp"
	"context"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/identity"
	"github.com/challenge-operator/challenge-operator/internal/metrics"
)

// ClaimantField indexes pooled Challenges by their claimant, "<namespace>/<name>".
const ClaimantField = "metadata.claimant"

// Pools claims pooled instances for Challenges and finds the one a
// Challenge claimed. A nil *Pools, or one without a Namespace, has no pools.
type Pools struct {
	// Namespace is where pooled Challenges live (--pool-namespace).
	Namespace string
	// Reader reads Challenges from the manager's cache, with the
	// ClaimantField index.
	Reader client.Reader
	// Client writes claims and deletes pooled Challenges.
	Client client.Client
	// Demand records every Challenge of a pooled template, which sizes the pools.
	Demand *Demand

	// claims remembers the claims this process made, by claimant UID: the
	// cache may not show a claim yet when the claimant is reconciled again.
	claims sync.Map
	// taken holds when this process claimed, or began to claim, each pooled
	// instance (by namespace/name): its cache may show it unclaimed for a
	// while yet, and a claim under way is no other claim's to try.
	taken   map[types.NamespacedName]time.Time
	takenMu sync.Mutex
}

// takenFor is how long a claim of this process is remembered: longer than
// any cache lag.
const takenFor = time.Minute

// take reserves key for a claim of this process, unless another claim of
// it holds key already, and forgets the old ones. Claims made at once then
// never try the same instance: the loser's update would be refused as a
// conflict, a write and a round trip lost to the burst.
func (p *Pools) take(key types.NamespacedName) bool {
	p.takenMu.Lock()
	defer p.takenMu.Unlock()
	now := time.Now()
	if p.taken == nil {
		p.taken = map[types.NamespacedName]time.Time{}
	}
	for k, at := range p.taken {
		if now.Sub(at) > takenFor {
			delete(p.taken, k)
		}
	}
	if _, ok := p.taken[key]; ok {
		return false
	}
	p.taken[key] = now
	return true
}

// release gives up a reservation whose claim did not happen.
func (p *Pools) release(key types.NamespacedName) {
	p.takenMu.Lock()
	defer p.takenMu.Unlock()
	delete(p.taken, key)
}

// isTaken tells whether this process claimed key lately.
func (p *Pools) isTaken(key types.NamespacedName) bool {
	p.takenMu.Lock()
	defer p.takenMu.Unlock()
	_, ok := p.taken[key]
	return ok
}

func (p *Pools) enabled() bool { return p != nil && p.Namespace != "" }

// Holds tells whether namespace is the pool namespace, where platforms
// create nothing: every Challenge there is the pools' business.
func (p *Pools) Holds(namespace string) bool { return p.enabled() && namespace == p.Namespace }

// IsPooled tells whether ch is a pooled instance: labelled with its own
// template and in the pool namespace.
func (p *Pools) IsPooled(ch *ctfv1alpha1.Challenge) bool {
	return p.Holds(ch.Namespace) && ch.Spec.Template != "" && ch.Labels[ctfv1alpha1.PoolLabel] == ch.Spec.Template
}

// Claimant returns the Challenge that claimed pooled, if any.
func Claimant(pooled client.Object) (key types.NamespacedName, uid types.UID, ok bool) {
	v := pooled.GetAnnotations()[ctfv1alpha1.ClaimantAnnotation]
	parts := strings.Split(v, "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return types.NamespacedName{}, "", false
	}
	return types.NamespacedName{Namespace: parts[0], Name: parts[1]}, types.UID(parts[2]), true
}

// IndexClaimant is the ClaimantField index function.
func IndexClaimant(o client.Object) []string {
	key, _, ok := Claimant(o)
	if !ok {
		return nil
	}
	return []string{key.String()}
}

// ClaimableField indexes pooled Challenges that may be claimed (Claimable,
// but for the template's generation) by "<template>/<generation>", the
// generation they were made for, and by that key and their shard
// (shardKey).
const ClaimableField = "metadata.claimable"

// claimShards is how many shards a template's claimable instances are
// indexed in besides all together: a claim lists its own shard first, an
// eighth of the pool, where listing all of it at every claim of a burst
// copied the pool 500 times (a tenth of the operator's CPU in a burst of
// claims), and all of them only when its shard has none it could take.
const claimShards = 8

// shardKey is the ClaimableField key of the shard of key that s (an
// instance's name, or a claimant's UID) falls in. FNV, not the CRC-32 that
// rotates a claimant's candidates (candidates): with one hash for both,
// the claimants of a shard would start at only an eighth of its instances
// whenever it held a multiple of 8.
func shardKey(key, s string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(s))
	return fmt.Sprintf("%s#%d", key, h.Sum32()%claimShards)
}

// IndexClaimable is the ClaimableField index function.
func IndexClaimable(o client.Object) []string {
	ch, ok := o.(*ctfv1alpha1.Challenge)
	if !ok {
		return nil
	}
	template := ch.Labels[ctfv1alpha1.PoolLabel]
	if template == "" || template != ch.Spec.Template || !unclaimedRunning(ch) {
		return nil
	}
	key := template + "/" + ch.Annotations[ctfv1alpha1.TemplateGenerationAnnotation]
	return []string{key, shardKey(key, ch.Name)}
}

// claimableKey is the ClaimableField key of tmpl's claimable instances:
// those made for its current generation.
func claimableKey(tmpl *ctfv1alpha1.ChallengeTemplate) string {
	return tmpl.Name + "/" + generationOf(tmpl)
}

// ClaimedBy is the participant whose Challenge claimed c, if c is a claimed
// pooled instance; "" otherwise.
func (p *Pools) ClaimedBy(c *ctfv1alpha1.Challenge) string {
	if _, _, claimed := Claimant(c); !claimed || !p.IsPooled(c) {
		return ""
	}
	return c.Annotations[ctfv1alpha1.ClaimantParticipantAnnotation]
}

// Of finds the pooled instance c claimed: ref is nil if c claimed none;
// pooled is nil if it claimed one that is gone.
func (p *Pools) Of(ctx context.Context, c *ctfv1alpha1.Challenge) (ref *ctfv1alpha1.PooledInstanceRef, pooled *ctfv1alpha1.Challenge, err error) {
	if !p.enabled() || p.IsPooled(c) {
		return nil, nil, nil
	}
	v, mine := p.claims.Load(c.UID)
	if mine {
		ref = v.(*ctfv1alpha1.PooledInstanceRef)
	} else if c.Status.PooledInstance != nil {
		ref = c.Status.PooledInstance
	}
	if ref == nil {
		// A claim made before a restart whose claimant's status was not written.
		var list ctfv1alpha1.ChallengeList
		key := types.NamespacedName{Namespace: c.Namespace, Name: c.Name}.String()
		if err := p.Reader.List(ctx, &list, client.InNamespace(p.Namespace), client.MatchingFields{ClaimantField: key}); err != nil {
			return nil, nil, fmt.Errorf("listing the pooled instance of %s: %w", key, err)
		}
		for i := range list.Items {
			if claimedBy(&list.Items[i], c) {
				return refTo(&list.Items[i]), &list.Items[i], nil
			}
		}
		return nil, nil, nil
	}
	pooled = &ctfv1alpha1.Challenge{}
	err = p.Reader.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, pooled)
	if err == nil && !claimedBy(pooled, c) {
		if _, _, claimed := Claimant(pooled); claimed || !mine {
			return ref, nil, nil // not c's: another was made under its name
		}
		// This process claimed it; the cache has not seen the claim yet.
	}
	if apierrors.IsNotFound(err) {
		return ref, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return ref, pooled, nil
}

// claimedBy tells whether pooled was claimed by c.
func claimedBy(pooled *ctfv1alpha1.Challenge, c *ctfv1alpha1.Challenge) bool {
	key, uid, ok := Claimant(pooled)
	return ok && uid == c.UID && key == client.ObjectKeyFromObject(c)
}

func refTo(pooled *ctfv1alpha1.Challenge) *ctfv1alpha1.PooledInstanceRef {
	return &ctfv1alpha1.PooledInstanceRef{Namespace: pooled.Namespace, Name: pooled.Name}
}

// Claim hands c one of its template's ready pooled instances, or returns nil
// when it may not claim (no pool; c's own install has begun) or the pool has
// none ready. Only a Challenge that has not been installed may claim: one
// that is new, or Queued.
func (p *Pools) Claim(ctx context.Context, c *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate) (*ctfv1alpha1.Challenge, error) {
	if !p.mayClaim(c, tmpl) {
		return nil, nil
	}
	// Demand counts a Challenge once: at its first reconcile, before the
	// operator has written any condition.
	first := len(c.Status.Conditions) == 0
	key := claimableKey(tmpl)
	tried := map[types.NamespacedName]bool{}
	for i, field := range []string{shardKey(key, string(c.UID)), key} {
		var list ctfv1alpha1.ChallengeList
		// Read-only: the cache's own objects; the one claimed is copied.
		// Only the claimable ones, by their index: in a burst, each claim
		// would otherwise copy the whole pool, claimed instances and all.
		if err := p.Reader.List(ctx, &list, client.InNamespace(p.Namespace), client.MatchingFields{ClaimableField: field}, client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("listing the pool of %s: %w", tmpl.Name, err)
		}
		if first && i == 0 {
			p.Demand.Add(tmpl.Name)
		}
		pooled, err := p.claimFrom(ctx, c, tmpl, list.Items, tried)
		if pooled != nil || err != nil {
			return pooled, err
		}
	}
	if first {
		metrics.ObserveClaim(tmpl.Name, false)
	}
	return nil, nil
}

// claimFrom hands c one of items, tmpl's pooled instances listed, that it
// has not tried yet, or returns nil when it got none of them.
func (p *Pools) claimFrom(ctx context.Context, c *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate, items []ctfv1alpha1.Challenge, tried map[types.NamespacedName]bool) (*ctfv1alpha1.Challenge, error) {
	order := candidates(items, tmpl, c.UID, func(key types.NamespacedName) bool { return tried[key] || p.isTaken(key) })
	for _, candidate := range order {
		key := client.ObjectKeyFromObject(candidate)
		tried[key] = true
		if !p.take(key) {
			continue // another claim of this process is on it
		}
		pooled := candidate.DeepCopy()
		MarkClaimed(pooled, c)
		err := p.Client.Update(ctx, pooled)
		if err != nil {
			// Still claimable unless a claim got there first: a write to it
			// since the cache's read (a conflict) may have left it unclaimed.
			p.release(key)
		}
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			continue // another claim, another write or a drain got there first
		}
		if err != nil {
			return nil, fmt.Errorf("claiming %s/%s: %w", pooled.Namespace, pooled.Name, err)
		}
		p.claims.Store(c.UID, refTo(pooled))
		metrics.ObserveClaim(tmpl.Name, true)
		return pooled, nil
	}
	return nil, nil
}

// mayClaim tells whether c may claim one of tmpl's pooled instances at all:
// tmpl has a pool, c is not a pooled instance itself, asks for the template
// as it is, and has not been installed (it is new, or Queued).
func (p *Pools) mayClaim(c *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate) bool {
	if !p.enabled() || tmpl == nil || tmpl.Spec.Pool == nil || p.IsPooled(c) || c.Status.StartedAt != nil || !plain(c) {
		return false
	}
	return c.Status.Phase == "" || c.Status.Phase == ctfv1alpha1.PhaseNone || c.Status.Phase == ctfv1alpha1.PhaseQueued
}

// candidates are the pooled instances of tmpl (listed: items) that the
// claimant whose UID is given tries, in order: the claimable ones this
// process has not taken lately, oldest first, rotated by the claimant's UID.
// They point into items: a Challenge is too large to copy at every step of
// a sort, once per claim of a burst.
func candidates(items []ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate, claimant types.UID, taken func(types.NamespacedName) bool) []*ctfv1alpha1.Challenge {
	candidates := make([]*ctfv1alpha1.Challenge, 0, len(items))
	for i := range items {
		if o := &items[i]; Claimable(o, tmpl) && !taken(client.ObjectKeyFromObject(o)) {
			candidates = append(candidates, o)
		}
	}
	slices.SortFunc(candidates, func(a, b *ctfv1alpha1.Challenge) int {
		return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), strings.Compare(a.Name, b.Name))
	})
	// Claims made at once start at different candidates: all starting at
	// the oldest would make the n-th of a burst lose n-1 conflicts first.
	if len(candidates) > 0 {
		start := rotation(claimant, len(candidates))
		candidates = slices.Concat(candidates[start:], candidates[:start])
	}
	return candidates
}

// rotation is where claimant starts among n candidates (n > 0).
func rotation(claimant types.UID, n int) int {
	return int(crc32.ChecksumIEEE([]byte(claimant)) % uint32(n))
}

// plain tells whether c asks for its template as it is, which a pooled
// instance is: a Challenge that overrides a value (or its image, ports,
// env, resources, exposure) is installed as it asks. Its own lifetime is
// its own affair.
func plain(c *ctfv1alpha1.Challenge) bool {
	s := &c.Spec
	return s.Image == "" && s.Ports == nil && s.Env == nil && s.Resources == nil && s.Expose == nil && s.Values == nil
}

// Claimable tells whether pooled may be claimed now: Running, unclaimed,
// not leaving, and made for tmpl's current generation.
func Claimable(pooled *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate) bool {
	return unclaimedRunning(pooled) && current(pooled, tmpl)
}

// unclaimedRunning tells whether pooled is Running, unclaimed and not
// leaving: claimable, whatever generation it was made for.
func unclaimedRunning(pooled *ctfv1alpha1.Challenge) bool {
	_, _, claimed := Claimant(pooled)
	return !claimed && pooled.DeletionTimestamp.IsZero() && pooled.Status.Phase == ctfv1alpha1.PhaseRunning
}

// current tells whether pooled was made for tmpl's current generation.
func current(pooled *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate) bool {
	return pooled.Annotations[ctfv1alpha1.TemplateGenerationAnnotation] == generationOf(tmpl)
}

// generationOf is tmpl's generation as its instances' annotation records it.
func generationOf(tmpl *ctfv1alpha1.ChallengeTemplate) string { return fmt.Sprint(tmpl.Generation) }

// MarkClaimed marks pooled as c's: what a claim's update writes. The
// template no longer owns it: deleting the template leaves a team's instance
// alone, as it does a fresh one.
func MarkClaimed(pooled *ctfv1alpha1.Challenge, c *ctfv1alpha1.Challenge) {
	if pooled.Annotations == nil {
		pooled.Annotations = map[string]string{}
	}
	pooled.Annotations[ctfv1alpha1.ClaimantAnnotation] = fmt.Sprintf("%s/%s/%s", c.Namespace, c.Name, c.UID)
	pooled.Annotations[ctfv1alpha1.ClaimantParticipantAnnotation] = c.Spec.Participant
	pooled.Labels[ctfv1alpha1.ClaimedLabel] = "true"
	pooled.OwnerReferences = nil
}

// Release deletes the pooled instance c claimed, when c is deleted, and
// tells whether it is still there.
func (p *Pools) Release(ctx context.Context, c *ctfv1alpha1.Challenge) (left bool, err error) {
	_, pooled, err := p.Of(ctx, c)
	if err != nil || pooled == nil {
		if err == nil {
			p.claims.Delete(c.UID)
		}
		return false, err
	}
	if pooled.DeletionTimestamp.IsZero() {
		if err := p.Client.Delete(ctx, pooled, client.Preconditions{UID: &pooled.UID}); client.IgnoreNotFound(err) != nil {
			return true, fmt.Errorf("deleting the pooled instance %s/%s: %w", pooled.Namespace, pooled.Name, err)
		}
	}
	return true, nil
}

// New is an unclaimed instance of tmpl in namespace, as the pool
// controller creates it: its participant is its own name, so that no quota
// counts two pooled instances as one team's. The template owns it until it
// is claimed.
func New(tmpl *ctfv1alpha1.ChallengeTemplate, namespace string) *ctfv1alpha1.Challenge {
	return identity.OperatorChallenge(tmpl, namespace, "pool", ctfv1alpha1.PoolLabel)
}
