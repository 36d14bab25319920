package action

import (
	"context"
	"errors"
	"maps"
	"strconv"
	"strings"

	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// memoDriver answers the reads of one reconcile's Helm actions from the
// first read of each release's history: a reconcile asks for the same
// records three to five times (unlocking a stale release, the reconciler's
// Get, its release state, Helm's own History and Deployed), each a LIST of
// Secrets. Reconciles of one Challenge never overlap and only the leader
// reconciles, so nothing else writes the records while one runs. Any write
// forgets the release's history, so a read after it is live again.
type memoDriver struct {
	driver.Driver
	// history holds, by release name, every record as the inner driver's
	// Query returned it; a name present with no records has none.
	history map[string][]*release.Release
}

// newMemoDriver memoizes inner's reads until the driver is dropped, which
// is at the end of the reconcile that asked for it.
func newMemoDriver(inner driver.Driver) *memoDriver {
	return &memoDriver{Driver: inner, history: map[string][]*release.Release{}}
}

// Query answers a query by release name (and owner, status, version or a
// custom label) from the release's history; other queries go to the driver.
func (d *memoDriver) Query(labels map[string]string) ([]*release.Release, error) {
	name, ok := labels["name"]
	if !ok || labels["owner"] != "helm" {
		return d.Driver.Query(labels)
	}
	history, err := d.load(name)
	if err != nil {
		return nil, err
	}
	var out []*release.Release
	for _, rel := range history {
		if matches(rel, labels) {
			out = append(out, copyRelease(rel, rel.Labels))
		}
	}
	if len(out) == 0 {
		return nil, driver.ErrReleaseNotFound
	}
	return out, nil
}

// Get answers from the release's history once it was read, as the Secrets
// driver would (custom labels only); otherwise from the driver.
func (d *memoDriver) Get(key string) (*release.Release, error) {
	name, version, ok := parseKey(key)
	history, loaded := d.history[name]
	if !ok || !loaded {
		return d.Driver.Get(key)
	}
	for _, rel := range history {
		if rel.Version == version {
			return copyRelease(rel, customLabels(rel.Labels)), nil
		}
	}
	return nil, driver.ErrReleaseNotFound
}

func (d *memoDriver) Create(key string, rls *release.Release) error {
	d.forget(key)
	return d.Driver.Create(key, rls)
}

func (d *memoDriver) Update(key string, rls *release.Release) error {
	d.forget(key)
	return d.Driver.Update(key, rls)
}

func (d *memoDriver) Delete(key string) (*release.Release, error) {
	d.forget(key)
	return d.Driver.Delete(key)
}

// load reads the release's whole history once.
func (d *memoDriver) load(name string) ([]*release.Release, error) {
	if h, ok := d.history[name]; ok {
		return h, nil
	}
	h, err := d.Driver.Query(map[string]string{"name": name, "owner": "helm"})
	if err != nil && !errors.Is(err, driver.ErrReleaseNotFound) {
		return nil, err
	}
	if h == nil {
		h = []*release.Release{}
	}
	d.history[name] = h
	return h, nil
}

// forget drops the history of the release key belongs to, or every
// history when the key is not a release's.
func (d *memoDriver) forget(key string) {
	if name, _, ok := parseKey(key); ok {
		delete(d.history, name)
		return
	}
	clear(d.history)
}

// keyPrefix starts the name of every release record ("sh.helm.release.v1.NAME.vVERSION").
const keyPrefix = "sh.helm.release.v1."

func parseKey(key string) (name string, version int, ok bool) {
	tail, found := strings.CutPrefix(key, keyPrefix)
	i := strings.LastIndex(tail, ".v")
	if !found || i <= 0 {
		return "", 0, false
	}
	version, err := strconv.Atoi(tail[i+2:])
	if err != nil {
		return "", 0, false
	}
	return tail[:i], version, true
}

// matches tells whether the Secret holding rel carries every label: the
// driver's own (name, owner, status, version) and the release's custom ones
// (the Secrets driver's Query keeps them all in rel.Labels).
func matches(rel *release.Release, labels map[string]string) bool {
	for k, v := range labels {
		if rel.Labels[k] != v {
			return false
		}
	}
	return true
}

// customLabels leaves out the labels the Secrets driver sets itself, as its Get does.
func customLabels(labels map[string]string) map[string]string {
	out := maps.Clone(labels)
	for _, k := range driver.GetSystemLabels() {
		delete(out, k)
	}
	return out
}

// copyRelease returns rel with its own Info and labels: Helm changes a
// release's status in place before writing it back, and a change that is
// not written must not reach the next read.
func copyRelease(rel *release.Release, labels map[string]string) *release.Release {
	c := *rel
	if rel.Info != nil {
		info := *rel.Info
		c.Info = &info
	}
	c.Labels = maps.Clone(labels)
	return &c
}

// MemoizedStorage wraps a storage driver mapper so that each driver it
// returns, one per action configuration and so per reconcile, reads each
// release's records once (memoDriver).
func MemoizedStorage(mapper helmclient.ObjectToStorageDriverMapper) helmclient.ObjectToStorageDriverMapper {
	return func(ctx context.Context, obj client.Object, cfg *rest.Config) (driver.Driver, error) {
		d, err := mapper(ctx, obj, cfg)
		if err != nil {
			return nil, err
		}
		return newMemoDriver(d), nil
	}
}
