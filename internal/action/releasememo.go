package action

import (
	"context"
	"errors"
	"fmt"
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
	// ctx, namespace and records answer a release's first read when the
	// cache knows it has no record (Records), without a LIST; nil records
	// always read.
	ctx       context.Context
	namespace string
	records   *Records
	// presumed holds the releases whose absence came from records, and
	// unseen those of them whose record creation found one already there:
	// a record the cache had not shown. Every read and write of an unseen
	// release fails for the rest of the reconcile, so that nothing (the
	// failed install's rollback least of all) acts on a history it has not
	// read; the next reconcile reads it from the API server.
	presumed, unseen map[string]bool
}

// newMemoDriver memoizes inner's reads until the driver is dropped, which
// is at the end of the reconcile that asked for it. records, when not nil,
// answers for releases of namespace that have no record.
func newMemoDriver(ctx context.Context, inner driver.Driver, namespace string, records *Records) *memoDriver {
	return &memoDriver{Driver: inner, history: map[string][]*release.Release{}, ctx: ctx, namespace: namespace, records: records,
		presumed: map[string]bool{}, unseen: map[string]bool{}}
}

// errUnseenRecord is the error of every action on a release whose record
// the cache had not shown when the release was presumed to have none.
var errUnseenRecord = errors.New("the release has a record the operator's cache had not shown yet; it is read again on the next reconcile")

// Query answers a query by release name (and owner, status, version or a
// custom label) from the release's history; other queries go to the driver.
func (d *memoDriver) Query(labels map[string]string) ([]*release.Release, error) {
	name, ok := labels["name"]
	if !ok || labels["owner"] != "helm" {
		return d.Driver.Query(labels)
	}
	if err := d.refuseUnseen(name); err != nil {
		return nil, err
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
	if err := d.refuseUnseen(name); ok && err != nil {
		return nil, err
	}
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
	name, err := d.writing(key, true)
	if err != nil {
		return err
	}
	err = d.Driver.Create(key, rls)
	if errors.Is(err, driver.ErrReleaseExists) && d.presumed[name] {
		d.unseen[name] = true
		return d.refuseUnseen(name)
	}
	return err
}

func (d *memoDriver) Update(key string, rls *release.Release) error {
	if _, err := d.writing(key, true); err != nil {
		return err
	}
	return d.Driver.Update(key, rls)
}

func (d *memoDriver) Delete(key string) (*release.Release, error) {
	if _, err := d.writing(key, false); err != nil {
		return nil, err
	}
	return d.Driver.Delete(key)
}

// writing forgets the history of the release key belongs to before a
// write, and tells records when the write stores a record; it refuses a
// write to an unseen release.
func (d *memoDriver) writing(key string, stores bool) (name string, err error) {
	name, _, ok := parseKey(key)
	if err := d.refuseUnseen(name); ok && err != nil {
		return name, err
	}
	if ok && stores {
		d.records.writing(d.namespace, name)
	}
	d.forget(key)
	return name, nil
}

// refuseUnseen is the error of every action on the release name once its
// record was found unseen; nil before.
func (d *memoDriver) refuseUnseen(name string) error {
	if !d.unseen[name] {
		return nil
	}
	return fmt.Errorf("release %s: %w", name, errUnseenRecord)
}

// load reads the release's whole history once.
func (d *memoDriver) load(name string) ([]*release.Release, error) {
	if h, ok := d.history[name]; ok {
		return h, nil
	}
	if d.records.none(d.ctx, d.namespace, name) {
		d.presumed[name] = true
		d.history[name] = []*release.Release{}
		return d.history[name], nil
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
// release's records once (memoDriver), and not at all where records knows
// the release has none (nil records: always).
func MemoizedStorage(mapper helmclient.ObjectToStorageDriverMapper, records *Records) helmclient.ObjectToStorageDriverMapper {
	return func(ctx context.Context, obj client.Object, cfg *rest.Config) (driver.Driver, error) {
		d, err := mapper(ctx, obj, cfg)
		if err != nil {
			return nil, err
		}
		return newMemoDriver(ctx, d, obj.GetNamespace(), records), nil
	}
}
