package challenge

import (
	"context"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// Rollouts remembers, for the Deployments a Helm upgrade has just changed,
// what the API server held right after it, until the cache holds that or
// later. A cache that lags behind the upgrade holds the Deployment as it
// was before, done rolling out: kstatus reads it as Current, and a status
// computed from it would flash Running for the new generation before the
// rollout shows (the Running, Pending, Running, Pending, Running a loaded
// machine recorded); or, when the rollout was over by the live read, the
// new generation's first states, which would turn that Running back into
// Pending. Until the cache catches up, the Deployment read live stands in
// for it.
type Rollouts struct {
	// Live reads Deployments from the API server.
	Live client.Reader
	// seen holds the live Deployments by namespace/name, with when they
	// were read.
	seen sync.Map
}

// rolloutRead is a Deployment read live after an upgrade.
type rolloutRead struct {
	dep *appsv1.Deployment
	at  time.Time
}

// rolloutLag bounds how long a live read stands in: far longer than any
// cache lag, and a Deployment gone meanwhile is not kept forever.
const rolloutLag = time.Minute

// Expect reads inst's Deployments live, right after an upgrade of it, and
// remembers them.
func (r *Rollouts) Expect(ctx context.Context, namespace string, inst *ctfv1alpha1.Challenge) error {
	if r == nil || r.Live == nil {
		return nil
	}
	var list appsv1.DeploymentList
	if err := r.Live.List(ctx, &list, client.InNamespace(namespace), client.MatchingLabels{ctfv1alpha1.InstanceLabel: inst.Name}); err != nil {
		return fmt.Errorf("reading the Deployments of %s/%s after its upgrade: %w", inst.Namespace, inst.Name, err)
	}
	now := time.Now()
	r.seen.Range(func(k, v any) bool {
		if now.Sub(v.(rolloutRead).at) > rolloutLag {
			r.seen.Delete(k)
		}
		return true
	})
	for i := range list.Items {
		dep := list.Items[i]
		r.seen.Store(types.NamespacedName{Namespace: dep.Namespace, Name: dep.Name}, rolloutRead{dep: &dep, at: now})
	}
	return nil
}

// Fresh replaces each cached Deployment older than the one read live after
// an upgrade with the live one, and forgets those the cache has caught up
// with.
func (r *Rollouts) Fresh(cached []appsv1.Deployment) []appsv1.Deployment {
	if r == nil {
		return cached
	}
	for i := range cached {
		key := types.NamespacedName{Namespace: cached[i].Namespace, Name: cached[i].Name}
		v, ok := r.seen.Load(key)
		if !ok {
			continue
		}
		if live := v.(rolloutRead); older(&cached[i], live.dep) && time.Since(live.at) <= rolloutLag {
			cached[i] = *live.dep
		} else {
			r.seen.CompareAndDelete(key, v)
		}
	}
	return cached
}

// older tells whether the cache's Deployment precedes the one read live: an
// older generation, or the same one at an earlier resourceVersion. The
// generation alone is not enough: on a loaded machine the rollout can be
// over by the time the live read is made (Current), while the cache still
// walks through the new generation's first states (not yet observed, no
// replica updated); believed again at the same generation, it turned the
// Running just written back into Pending (Running, Pending, Running,
// Pending, Running). Resource versions of one resource compare as integers
// (k8s.io/apimachinery's resourceversion); where one does not parse, the
// generation decides alone.
func older(cached, live *appsv1.Deployment) bool {
	if cached.Generation != live.Generation {
		return cached.Generation < live.Generation
	}
	c, err := resourceversion.CompareResourceVersion(cached.ResourceVersion, live.ResourceVersion)
	return err == nil && c < 0
}
