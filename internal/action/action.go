// Package action gives the Helm reconciler its Helm action clients: releases
// left pending by a crash are unlocked before anything else touches them, and
// an uninstall is over only when every object of the release is gone.
package action

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/postrender"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/challenge-operator/challenge-operator/internal/policy"
)

// ReasonReleaseUnlocked is the Event reason when a stale pending release is unlocked.
const ReasonReleaseUnlocked = "ReleaseUnlocked"

// ReasonRecordRefused is the Event reason when a stored release record lists
// what the instance may not have, and the operator does not act on it. The
// Event is the one sign of it while the Challenge is being deleted.
const ReasonRecordRefused = "ReleaseRecordRefused"

// ClientGetter wraps helm-operator-plugins' getter.
type ClientGetter struct {
	inner       helmclient.ActionClientGetter
	recorder    events.EventRecorder
	inFlight    *inFlight
	uninstalled uninstalled
	installing  installing
	discovery   *discoveryMemo
	// Leftovers, when set, runs after every uninstall, whether the release
	// was found or not (the namespace controller or the garbage collector may
	// delete the record first): it removes what the release record no longer
	// names and reports an error while anything of the instance remains, which
	// keeps the finalizer, so the uninstall is tried again.
	Leftovers func(ctx context.Context, obj client.Object) error
	// RenderInputs, when set, names what besides the chart and the values a
	// render depends on (a template's generation, the policy in force). A
	// release stores the hash of all three (RenderHashLabel), and a dry-run
	// upgrade of a deployed release with the same hash is skipped.
	RenderInputs func(ctx context.Context, obj client.Object) (string, error)
	// CheckRecord, when set, judges a stored release record before the
	// operator acts on it: with applies, before drift repair applies its
	// manifest (the whole policy gate, as for a render); otherwise before an
	// upgrade or uninstall deletes what it lists (the objects must be the
	// instance's own). A record is a Secret in the Challenge's namespace:
	// whoever may write Secrets there can forge one.
	CheckRecord func(ctx context.Context, obj client.Object, manifest string, applies bool) error
	// Records, when set, is the index of release records the storage
	// driver answers absences from (MemoizedStorage): it learns here that
	// an uninstall left a release without records.
	Records *Records
	// Existence, when set, answers installs' existence checks from the
	// cache; its RestConfig must then be the action configs' client rest
	// config mapper.
	Existence *Existence
	// RecountQuota, when set, runs after an upgrade or a drift repair a
	// quota refused: a quota charged for creates that were never stored
	// refuses what it should admit until it is counted again. The action
	// is tried again (the reconciler's backoff) against the quota counted.
	RecountQuota func(ctx context.Context, obj client.Object) error
	// PostRenderer, when set, is the one post-renderer of obj's installs
	// and upgrades, in place of helm-operator-plugins' chain (its
	// AppendPostRenderers, then its owner post-renderer): it must write the
	// owner references itself.
	PostRenderer func(obj client.Object) postrender.PostRenderer
}

// NewClientGetter returns a getter whose uninstalls delete the release's
// objects without waiting for them: Leftovers then keeps the finalizer, and
// the reconcile comes back, until they are gone, so no worker is held while
// pods terminate. The deletion propagates in the background: a foreground
// one makes the garbage collector and the Deployment controller read and
// write every object of the chain several times (three quarters of a
// teardown's API requests, measured), for an order Leftovers checks anyway.
// Its clients never run chart hooks (install, upgrade, rollback, uninstall):
// the chart has none, and a hook is the one thing Helm would apply without
// post-rendering it, so no value can smuggle an object past the policy gate
// as a hook. Nor do they validate the manifest against the API server's
// OpenAPI document: the API server validates every object it is sent anyway,
// and that client-side check fetched and parsed the document on every
// install and upgrade, two thirds of the operator's CPU in a burst. Their
// reachability check and capabilities are asked of the API server once a
// minute, not in every action (discoveryMemo).
func NewClientGetter(cfg helmclient.ActionConfigGetter, recorder events.EventRecorder, opts ...helmclient.ActionClientGetterOption) (*ClientGetter, error) {
	opts = append([]helmclient.ActionClientGetterOption{
		helmclient.AppendUninstallOptions(func(u *action.Uninstall) error {
			u.Wait = false
			u.DeletionPropagation = "background"
			u.DisableHooks = true
			return nil
		}),
		helmclient.AppendInstallFailureUninstallOptions(func(u *action.Uninstall) error {
			u.DisableHooks = true
			return nil
		}),
		// A failed upgrade is not rolled back: a rollback applies a stored
		// record, which anyone who may write Secrets in the namespace can
		// forge, without the policy gate. The failed release is upgraded
		// again by the next reconcile, from the last deployed one.
		helmclient.AppendUpgradeFailureRollbackOptions(func(r *action.Rollback) error {
			r.DisableHooks = true
			r.DryRun = true
			return nil
		}),
		helmclient.AppendInstallOptions(func(i *action.Install) error {
			i.DisableHooks = true
			i.DisableOpenAPIValidation = true
			return nil
		}),
		helmclient.AppendUpgradeOptions(func(u *action.Upgrade) error {
			u.DisableHooks = true
			u.DisableOpenAPIValidation = true
			return nil
		}),
	}, opts...)
	inner, err := helmclient.NewActionClientGetter(cfg, opts...)
	if err != nil {
		return nil, err
	}
	return &ClientGetter{inner: inner, recorder: recorder, inFlight: &inFlight{names: map[string]bool{}}, discovery: newDiscoveryMemo()}, nil
}

// uninstalled remembers, by Challenge UID, the releases this process has
// uninstalled while the Challenge waits for its objects to go: the next
// teardown reconciles know the release is gone without listing Secrets.
type uninstalled struct{ uids sync.Map }

func (u *uninstalled) has(obj client.Object) bool {
	_, ok := u.uids.Load(obj.GetUID())
	return ok
}

// installing remembers, by "namespace/name", the Challenges whose install is
// running or failed last. A failed install is rolled back: its objects and
// its release record are deleted, and those deletions must not start the next
// attempt at once, or an install that cannot succeed (a quota, a full node
// port range) creates and deletes its objects in a hot loop; the reconciler's
// backoff, or a change to the Challenge, brings the next attempt.
type installing struct{ keys sync.Map }

// InstallFailing tells whether the last install of the Challenge key
// ("namespace/name") is running or failed, so that deleting what it created
// is no reason to reconcile it again.
func (g *ClientGetter) InstallFailing(key string) bool {
	_, ok := g.installing.keys.Load(key)
	return ok
}

// ActionClientFor returns the action client for obj after unlocking its
// release if a crashed operation left it pending.
func (g *ClientGetter) ActionClientFor(ctx context.Context, obj client.Object) (helmclient.ActionInterface, error) {
	ctx, check := g.Existence.begin(ctx)
	ac, err := g.inner.ActionClientFor(ctx, obj)
	if err != nil {
		return nil, err
	}
	g.discovery.fill(ac.Config())
	key := obj.GetNamespace() + "/" + obj.GetName()
	if err := g.unlockStale(ctx, ac, key, obj); err != nil {
		return nil, err
	}
	tc := &trackedClient{ActionInterface: ac, key: key, inFlight: g.inFlight, ctx: ctx, obj: obj, leftovers: g.Leftovers,
		uninstalled: &g.uninstalled, installing: &g.installing, checkRecord: g.CheckRecord, recorder: g.recorder, discovery: g.discovery,
		records: g.Records, check: check, recountQuota: g.RecountQuota}
	if g.PostRenderer != nil {
		tc.postRenderer = g.PostRenderer(obj)
	}
	if g.RenderInputs != nil {
		if tc.renderInputs, err = g.RenderInputs(ctx, obj); err != nil {
			return nil, err
		}
		tc.hashing = true
	}
	return tc, nil
}

// unlockStale marks a pending release that no operation of this process owns
// as failed, as Flux's helm-controller does with its Locked state: Helm refuses
// every action on a pending release, and a failed one is simply upgraded.
// Reconciles of one Challenge never overlap and only the leader reconciles,
// so a pending release nobody here is working on was left by a crash.
func (g *ClientGetter) unlockStale(ctx context.Context, ac helmclient.ActionInterface, key string, obj client.Object) error {
	if obj.GetDeletionTimestamp() != nil {
		return nil // an uninstall does not mind a pending release
	}
	rel, err := ac.Config().Releases.Last(obj.GetName())
	if err != nil || !rel.Info.Status.IsPending() || g.inFlight.has(key) {
		return nil //nolint:nilerr // no release, or none readable: nothing to unlock (the action reports a read failure itself)
	}
	from := rel.Info.Status
	rel.SetStatus(release.StatusFailed, fmt.Sprintf("unlocked by challenge-operator: release was left %s with no operation in progress", from))
	if err := ac.Config().Releases.Update(rel); err != nil {
		return fmt.Errorf("unlocking release %s left %s: %w", key, from, err)
	}
	log.FromContext(ctx).Info("unlocked stale pending release", "release", key, "status", from, "version", rel.Version)
	g.recorder.Eventf(obj, nil, corev1.EventTypeWarning, ReasonReleaseUnlocked, "Unlock",
		"release revision %d was left %s by an interrupted operation; marked failed so it can be upgraded", rel.Version, from)
	return nil
}

// trackedClient records which releases have an operation in progress.
type trackedClient struct {
	helmclient.ActionInterface
	key          string
	inFlight     *inFlight
	ctx          context.Context
	obj          client.Object
	leftovers    func(ctx context.Context, obj client.Object) error
	uninstalled  *uninstalled
	installing   *installing
	checkRecord  func(ctx context.Context, obj client.Object, manifest string, applies bool) error
	recorder     events.EventRecorder
	discovery    *discoveryMemo
	records      *Records
	check        *installCheck
	recountQuota func(ctx context.Context, obj client.Object) error
	// postRenderer, when set, replaces the getter's chain of post-renderers.
	postRenderer postrender.PostRenderer
	// hashing is on when renderInputs were given.
	hashing      bool
	renderInputs string
}

func (c *trackedClient) Install(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.InstallOption) (*release.Release, error) {
	defer c.inFlight.start(c.key)()
	if c.hashing {
		hash, err := renderHash(chrt, vals, c.renderInputs)
		if err != nil {
			return nil, err
		}
		opts = append(opts, func(i *action.Install) error { i.Labels = withLabel(i.Labels, hash); return nil })
	}
	if c.postRenderer != nil {
		opts = append(opts, helmclient.WithInstallPostRenderer(c.postRenderer))
	}
	// Marked before Helm creates anything: the rollback of a failed install
	// deletes while it runs.
	c.installing.keys.Store(c.key, struct{}{})
	if checked, err := checkValues(chrt, vals); checked {
		if err != nil {
			return nil, redacted(err, vals)
		}
		opts = append(opts, func(i *action.Install) error { i.SkipSchemaValidation = true; return nil })
	}
	var rel *release.Release
	var err error
	c.check.during(func() { rel, err = c.ActionInterface.Install(name, namespace, chrt, vals, opts...) })
	c.discovery.learn(c.Config())
	if err == nil {
		c.installing.keys.Delete(c.key)
	}
	if err != nil && c.check.provedWrong() {
		err = errors.Join(err, c.purge(name))
	}
	return rel, redacted(err, vals)
}

// purge deletes what is left of the records of a failed install that found
// an object presumed absent (Existence). Its rollback deleted them unless
// one of its deletions failed, and such a record lists an object that is
// not the release's: an upgrade would take it over, an uninstall delete it.
func (c *trackedClient) purge(name string) error {
	rels, err := c.history(name)
	if err != nil {
		return fmt.Errorf("reading the records of release %s after its failed install: %w", name, err)
	}
	for _, rel := range rels {
		if _, err := c.Config().Releases.Delete(rel.Name, rel.Version); err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
			return fmt.Errorf("deleting record %d of release %s after its failed install: %w", rel.Version, name, err)
		}
	}
	return nil
}

// Upgrade upgrades, or answers a dry run for an unchanged render with the
// deployed release itself.
func (c *trackedClient) Upgrade(name, namespace string, chrt *chart.Chart, vals map[string]interface{}, opts ...helmclient.UpgradeOption) (*release.Release, error) {
	if c.hashing {
		hash, err := renderHash(chrt, vals, c.renderInputs)
		if err != nil {
			return nil, err
		}
		if isDryRun(opts) {
			if last := unchangedRelease(c.Config(), name, hash); last != nil {
				return last, nil
			}
		} else {
			opts = append(opts, func(u *action.Upgrade) error { u.Labels = withLabel(u.Labels, hash); return nil })
		}
	}
	if checked, err := checkValues(chrt, vals); checked {
		if err != nil {
			return nil, redacted(err, vals)
		}
		opts = append(opts, func(u *action.Upgrade) error { u.SkipSchemaValidation = true; return nil })
	}
	if c.postRenderer != nil {
		opts = append(opts, helmclient.WithUpgradePostRenderer(c.postRenderer))
	}
	if !isDryRun(opts) {
		// Helm deletes what the current record lists and the new one does not.
		if err := c.checkRecords(name); err != nil {
			return nil, err
		}
	}
	defer c.inFlight.start(c.key)()
	rel, err := c.ActionInterface.Upgrade(name, namespace, chrt, vals, opts...)
	c.discovery.learn(c.Config())
	return rel, redacted(c.quotaRefused(err), vals)
}

// Get answers that a release this process uninstalled is gone.
func (c *trackedClient) Get(name string, opts ...helmclient.GetOption) (*release.Release, error) {
	if c.uninstalled.has(c.obj) {
		return nil, driver.ErrReleaseNotFound
	}
	return c.ActionInterface.Get(name, opts...)
}

// Uninstall removes the release, then whatever of the instance the release
// record no longer names.
func (c *trackedClient) Uninstall(name string, opts ...helmclient.UninstallOption) (*release.UninstallReleaseResponse, error) {
	defer c.inFlight.start(c.key)()
	c.installing.keys.Delete(c.key)
	var resp *release.UninstallReleaseResponse
	err := driver.ErrReleaseNotFound
	if !c.uninstalled.has(c.obj) {
		// Helm deletes what the last record lists.
		if cerr := c.checkRecords(name); cerr != nil {
			return nil, cerr
		}
		resp, err = c.ActionInterface.Uninstall(name, opts...)
	}
	if (err != nil && !errors.Is(err, driver.ErrReleaseNotFound)) || c.leftovers == nil {
		return resp, err
	}
	if lerr := c.leftovers(c.ctx, c.obj); lerr != nil {
		c.uninstalled.uids.Store(c.obj.GetUID(), struct{}{})
		return resp, lerr
	}
	// Nothing is left: the finalizer goes, and so does the Challenge.
	c.uninstalled.uids.Delete(c.obj.GetUID())
	c.records.uninstalled(c.obj.GetNamespace(), name)
	return resp, err
}

// Reconcile repairs drift by applying the last record's manifest, once the
// policy gate has judged it: the record is not necessarily the operator's.
func (c *trackedClient) Reconcile(rel *release.Release) error {
	if c.checkRecord != nil {
		if err := c.checkRecord(c.ctx, c.obj, rel.Manifest, true); err != nil {
			return c.refused("Repair", rel, err)
		}
	}
	return c.quotaRefused(c.ActionInterface.Reconcile(rel))
}

// quotaRefused lets RecountQuota look at the quota of an action a quota
// refused. A failed install needs none: its rollback deletes the instance's
// namespace, and the quota with it.
func (c *trackedClient) quotaRefused(err error) error {
	if c.recountQuota == nil || !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "exceeded quota") {
		return err
	}
	if rerr := c.recountQuota(c.ctx, c.obj); rerr != nil {
		return errors.Join(err, rerr)
	}
	return err
}

// checkRecords refuses every record of the release that lists an object not
// the instance's own, before an upgrade or uninstall deletes what records
// list. All of them, not only the last: an upgrade starts from the last
// deployed one.
func (c *trackedClient) checkRecords(name string) error {
	if c.checkRecord == nil {
		return nil
	}
	rels, err := c.history(name)
	if err != nil {
		return fmt.Errorf("reading the records of release %s: %w", name, err)
	}
	for _, rel := range rels {
		if err := c.checkRecord(c.ctx, c.obj, rel.Manifest, false); err != nil {
			return c.refused("Delete", rel, err)
		}
	}
	return nil
}

// history returns every record of the release, none when it has none.
func (c *trackedClient) history(name string) ([]*release.Release, error) {
	rels, err := c.Config().Releases.History(name)
	if errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, nil
	}
	return rels, err
}

// refused reports a release record the operator does not act on. An error
// that is no verdict on the record (its template is gone, the cache did not
// answer) is returned as it is: the record was not judged, and the error's
// own reason is the instance's.
func (c *trackedClient) refused(op string, rel *release.Release, err error) error {
	var violation *policy.Violation
	if !errors.As(err, &violation) {
		return err
	}
	err = fmt.Errorf("refusing release record %s version %d: %w", rel.Name, rel.Version, err)
	c.recorder.Eventf(c.obj, nil, corev1.EventTypeWarning, ReasonRecordRefused, op, "%s", err)
	return err
}

// inFlight is the set of releases with an operation running in this process.
type inFlight struct {
	mu    sync.Mutex
	names map[string]bool
}

func (f *inFlight) start(key string) (done func()) {
	f.mu.Lock()
	f.names[key] = true
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		delete(f.names, key)
		f.mu.Unlock()
	}
}

func (f *inFlight) has(key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.names[key]
}
