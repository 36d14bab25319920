package instancer

import (
	"context"
	"sync"

	"golang.org/x/time/rate"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/readthrough"
)

// Per team and replica, the reads of the API server that cache misses may
// cost: enough for a Renew or a Stop right after a Start (the cache lags the
// create), while a loop of requests on an absent instance is answered from
// the cache (200 such requests cost 200 reads before).
const (
	liveReadsPerSecond = 2
	liveReadsBurst     = 6
)

// liveReads hands out each team's read-through reader.
type liveReads struct {
	live client.Reader

	mu      sync.Mutex
	perTeam map[string]*rate.Limiter
}

// reader reads from cache, and from the API server what cache has not seen
// while team's budget of live reads lasts.
func (l *liveReads) reader(cache client.Reader, team string) client.Reader {
	if l.live == nil {
		return cache
	}
	l.mu.Lock()
	limiter, ok := l.perTeam[team]
	if !ok {
		if l.perTeam == nil {
			l.perTeam = map[string]*rate.Limiter{}
		}
		limiter = rate.NewLimiter(liveReadsPerSecond, liveReadsBurst)
		l.perTeam[team] = limiter
	}
	l.mu.Unlock()
	return readthrough.Reader{Reader: cache, Live: budgeted{Reader: l.live, limiter: limiter}}
}

// budgeted reads while its limiter allows, else answers NotFound, as the
// cache did.
type budgeted struct {
	client.Reader
	limiter *rate.Limiter
}

func (b budgeted) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if !b.limiter.Allow() {
		return apierrors.NewNotFound(ctfv1alpha1.GroupVersion.WithResource("challenges").GroupResource(), key.Name)
	}
	return b.Reader.Get(ctx, key, obj, opts...)
}
