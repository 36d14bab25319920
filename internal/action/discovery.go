package action

import (
	"sync"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/kube"
)

// discoveryTTL is how long the API server's answers to Helm's discovery
// stand: its version and groups change with an upgrade of the control plane
// or a CRD installed, which the chart's kubeVersion constraint reads at most
// this late (the chart reads no .Capabilities).
const discoveryTTL = time.Minute

// discoveryMemo answers, for every reconcile's Helm actions, what Helm
// asks the API server afresh in each one: whether it is reachable (GET
// /version before each Get, Install and Upgrade, four times per install)
// and its capabilities (the version once more, then /api and /apis, after
// invalidating the discovery cache all reconciles share). That was six of
// an install's 23 requests, for answers that change with a control-plane
// upgrade. Each is asked again once it is discoveryTTL old, so an
// unreachable API server still fails the reconcile that finds it so, and
// every other request of the action fails on it anyway.
type discoveryMemo struct {
	now func() time.Time

	mu sync.Mutex
	// caps are the capabilities Helm last computed, at capsAt.
	caps   *chartutil.Capabilities
	capsAt time.Time
	// reachedAt is when the API server last answered Helm's reachability check.
	reachedAt time.Time
}

func newDiscoveryMemo() *discoveryMemo { return &discoveryMemo{now: time.Now} }

// fill (as learn, a no-op on a nil memo) gives cfg, a reconcile's fresh configuration, the capabilities
// last computed while they are fresh (Helm computes them itself otherwise,
// and learn keeps them), and a kube client whose reachability check is
// answered while the last one is fresh.
func (m *discoveryMemo) fill(cfg *action.Configuration) {
	if m == nil {
		return
	}
	m.mu.Lock()
	if m.caps != nil && m.fresh(m.capsAt) {
		cfg.Capabilities = m.caps.Copy()
	}
	m.mu.Unlock()
	// Wrapped as the concrete client, so that what Helm asks of its
	// optional interfaces (deletion propagation, waits) still reaches it.
	if kc, ok := cfg.KubeClient.(*kube.Client); ok {
		cfg.KubeClient = &reachableClient{Client: kc, memo: m}
	}
}

// learn keeps the capabilities Helm computed in cfg during an action,
// unless fresh ones are kept already.
func (m *discoveryMemo) learn(cfg *action.Configuration) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if cfg.Capabilities != nil && (m.caps == nil || !m.fresh(m.capsAt)) {
		m.caps, m.capsAt = cfg.Capabilities.Copy(), m.now()
	}
}

// fresh tells whether an answer given at t still stands. Called with mu held.
func (m *discoveryMemo) fresh(t time.Time) bool { return m.now().Sub(t) < discoveryTTL }

// reachableClient is Helm's kube client, whose reachability check is
// answered by the memo while the last one is fresh.
type reachableClient struct {
	*kube.Client
	memo *discoveryMemo
}

// IsReachable asks the API server only when its last answer is stale.
func (c *reachableClient) IsReachable() error {
	c.memo.mu.Lock()
	reached := !c.memo.reachedAt.IsZero() && c.memo.fresh(c.memo.reachedAt)
	c.memo.mu.Unlock()
	if reached {
		return nil
	}
	if err := c.Client.IsReachable(); err != nil {
		return err
	}
	c.memo.mu.Lock()
	c.memo.reachedAt = c.memo.now()
	c.memo.mu.Unlock()
	return nil
}
