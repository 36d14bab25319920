package action

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/challenge-operator/challenge-operator/test/controlplane"
)

// laggingCache is a cache that has not shown any record yet.
type laggingCache struct{ client.Reader }

func (laggingCache) List(context.Context, client.ObjectList, ...client.ListOption) error { return nil }

// TestRecordsAnswerOnlyAKnownAbsence: a reconcile's storage reads a release
// the cache knows has no record without a request, and every other release
// from the API server: one the cache holds a record of, and one this
// process wrote a record of, until its uninstall. A record the cache had not
// shown, met when Helm creates the release's first record, fails every
// action on the release for the rest of the reconcile, so that the failed
// install's rollback deletes nothing; the next reconcile reads it.
func TestRecordsAnswerOnlyAKnownAbsence(t *testing.T) {
	ctx := context.Background()
	cfg, _ := controlplane.StartAPIServer(t)
	const ns = "records"
	inner, counter := secretsDriver(t, cfg, ns)
	plain := storage.Init(inner)

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := cache.New(cfg, cache.Options{Scheme: scheme, ByObject: map[client.Object]cache.ByObject{
		&corev1.Secret{}: {Label: labels.SelectorFromSet(labels.Set{"owner": "helm"})},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := IndexRecords(ctx, c); err != nil {
		t.Fatal(err)
	}
	cacheCtx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { _ = c.Start(cacheCtx) }()
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("the cache did not sync")
	}
	records := &Records{Reader: c}
	cached := func(name string, want int) {
		t.Helper()
		NewWithT(t).Eventually(func(g Gomega) {
			list, err := ListRecords(ctx, c, ns, name)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(list).To(HaveLen(want), "records of %s in the cache", name)
		}, 10*time.Second, 20*time.Millisecond).Should(Succeed())
	}
	// reads runs f on a new reconcile's storage and returns the requests it sent.
	reads := func(f func(*storage.Storage)) int {
		before := counter.get(http.MethodGet)
		f(storage.Init(newMemoDriver(ctx, inner, ns, records)))
		return counter.get(http.MethodGet) - before
	}

	if err := plain.Create(newRelease("held", 1, release.StatusDeployed)); err != nil {
		t.Fatal(err)
	}
	cached("held", 1)
	if n := reads(func(s *storage.Storage) {
		if rel, err := s.Last("held"); err != nil || rel.Version != 1 {
			t.Errorf("a release the cache holds a record of: %v, %v", rel, err)
		}
	}); n != 1 {
		t.Errorf("a release the cache holds a record of took %d reads, want 1", n)
	}

	if n := reads(func(s *storage.Storage) {
		if _, err := s.History("new"); !errors.Is(err, driver.ErrReleaseNotFound) {
			t.Errorf("a release with no record: %v, want not found", err)
		}
		if err := s.Create(newRelease("new", 1, release.StatusDeployed)); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("a release the cache knows has no record took %d reads, want 0", n)
	}
	// Written by this process: read live, whether the cache shows it or not.
	if n := reads(func(s *storage.Storage) {
		if rel, err := s.Last("new"); err != nil || rel.Version != 1 {
			t.Errorf("a release this process wrote: %v, %v", rel, err)
		}
	}); n != 1 {
		t.Errorf("a release this process wrote took %d reads, want 1", n)
	}
	// Its uninstall deletes its records: once the cache has seen that, its
	// absence is known again.
	if _, err := plain.Delete("new", 1); err != nil {
		t.Fatal(err)
	}
	records.uninstalled(ns, "new")
	cached("new", 0)
	if n := reads(func(s *storage.Storage) { _, _ = s.History("new") }); n != 0 {
		t.Errorf("an uninstalled release took %d reads, want 0", n)
	}

	t.Run("a record the cache had not shown", func(t *testing.T) { unseenRecordIsNeverActedOn(ctx, t, inner, ns) })
}

// unseenRecordIsNeverActedOn: Helm's install, told by a cache that has not
// shown the record that there is none, fails to create it; every action on
// the release fails for the rest of the reconcile, and the next one reads it.
func unseenRecordIsNeverActedOn(ctx context.Context, t *testing.T, inner driver.Driver, ns string) {
	plain := storage.Init(inner)
	if err := plain.Create(newRelease("unseen", 1, release.StatusPendingInstall)); err != nil {
		t.Fatal(err)
	}
	lagging := &Records{Reader: laggingCache{}}
	s := storage.Init(newMemoDriver(ctx, inner, ns, lagging))
	if _, err := s.History("unseen"); !errors.Is(err, driver.ErrReleaseNotFound) {
		t.Fatalf("the lagging cache's answer: %v", err)
	}
	if err := s.Create(newRelease("unseen", 1, release.StatusPendingInstall)); !errors.Is(err, errUnseenRecord) {
		t.Errorf("creating over a record the cache had not shown: %v, want %v", err, errUnseenRecord)
	}
	if _, err := s.History("unseen"); !errors.Is(err, errUnseenRecord) {
		t.Errorf("reading it after: %v, want %v", err, errUnseenRecord)
	}
	rel := newRelease("unseen", 1, release.StatusUninstalling)
	if err := s.Update(rel); !errors.Is(err, errUnseenRecord) {
		t.Errorf("updating it after: %v, want %v", err, errUnseenRecord)
	}
	if _, err := s.Delete("unseen", 1); !errors.Is(err, errUnseenRecord) {
		t.Errorf("deleting it after: %v, want %v", err, errUnseenRecord)
	}
	if rel, err := plain.Get("unseen", 1); err != nil || rel.Info.Status != release.StatusPendingInstall {
		t.Errorf("the record is untouched: %v, %v", rel, err)
	}
	// The next reconcile reads it: the attempt counts as a write.
	next := storage.Init(newMemoDriver(ctx, inner, ns, lagging))
	if rel, err := next.Last("unseen"); err != nil || rel.Info.Status != release.StatusPendingInstall {
		t.Errorf("the next reconcile's read: %v, %v", rel, err)
	}
}
