package action

import (
	"context"
	"net/http"
	"reflect"
	"strconv"
	"sync"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/challenge-operator/challenge-operator/test/controlplane"
)

// requestCounter counts an API client's requests by method.
type requestCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

func (c *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		c.mu.Lock()
		c.counts[req.Method]++
		c.mu.Unlock()
		return rt.RoundTrip(req)
	})
}

func (c *requestCounter) get(method string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[method]
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// secretsDriver returns a Secrets driver in a new namespace ns and the
// counter of its requests.
func secretsDriver(t *testing.T, cfg *rest.Config, ns string) (*driver.Secrets, *requestCounter) {
	t.Helper()
	counter := &requestCounter{counts: map[string]int{}}
	counted := rest.CopyConfig(cfg)
	counted.WrapTransport = counter.wrap
	cs, err := kubernetes.NewForConfig(counted)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return driver.NewSecrets(cs.CoreV1().Secrets(ns)), counter
}

func newRelease(name string, version int, status release.Status) *release.Release {
	return &release.Release{Name: name, Namespace: "memo", Version: version,
		Info:   &release.Info{Status: status},
		Chart:  &chart.Chart{Metadata: &chart.Metadata{Name: "challenge", Version: "0.1.0"}},
		Labels: map[string]string{"hash": "h" + strconv.Itoa(version)}}
}

// TestMemoDriverAnswersLikeTheSecretsDriver checks every read a reconcile
// makes against the Secrets driver itself on the same records, and counts
// what reached the API server: one LIST per release however often it is
// read, and a live read again after a write.
func TestMemoDriverAnswersLikeTheSecretsDriver(t *testing.T) {
	cfg, _ := controlplane.StartAPIServer(t)
	inner, counter := secretsDriver(t, cfg, "memo")
	plain := storage.Init(inner)
	for _, rel := range []*release.Release{
		newRelease("a", 1, release.StatusSuperseded), newRelease("a", 2, release.StatusDeployed), newRelease("b", 1, release.StatusFailed),
	} {
		if err := plain.Create(rel); err != nil {
			t.Fatal(err)
		}
	}
	memo := storage.Init(newMemoDriver(context.Background(), inner, "memo", nil))

	type read struct {
		name string
		f    func(*storage.Storage) (any, error)
	}
	reads := []read{
		{"Last a", func(s *storage.Storage) (any, error) { return s.Last("a") }},
		{"Deployed a", func(s *storage.Storage) (any, error) { return s.Deployed("a") }},
		{"History a", func(s *storage.Storage) (any, error) { return s.History("a") }},
		{"Get a 1", func(s *storage.Storage) (any, error) { return s.Get("a", 1) }},
		{"Get a 3", func(s *storage.Storage) (any, error) { return s.Get("a", 3) }},
		{"Deployed b", func(s *storage.Storage) (any, error) { return s.Deployed("b") }},
		{"Last b", func(s *storage.Storage) (any, error) { return s.Last("b") }},
		{"History c", func(s *storage.Storage) (any, error) { return s.History("c") }},
		{"superseded a", func(s *storage.Storage) (any, error) {
			return s.Query(map[string]string{"name": "a", "owner": "helm", "status": "superseded"})
		}},
		{"custom label", func(s *storage.Storage) (any, error) {
			return s.Query(map[string]string{"name": "a", "owner": "helm", "hash": "h2"})
		}},
	}
	check := func(t *testing.T) {
		t.Helper()
		for _, r := range reads {
			want, wantErr := r.f(plain)
			got, err := r.f(memo)
			if (wantErr == nil) != (err == nil) || (wantErr != nil && wantErr.Error() != err.Error()) {
				t.Errorf("%s: error %v, the Secrets driver's %v", r.name, err, wantErr)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: %+v, the Secrets driver's %+v", r.name, got, want)
			}
		}
	}

	before := counter.get(http.MethodGet)
	check(t)
	// Each read of the plain storage is one request (a LIST or a GET); the
	// memo read each of a, b and c's histories once.
	memoReads := counter.get(http.MethodGet) - before - len(reads)
	if memoReads != 3 {
		t.Errorf("the memo made %d reads for %d reads of 3 releases, want 3", memoReads, len(reads))
	}

	// A release changed in place and not written back stays as stored.
	last, err := memo.Last("a")
	if err != nil {
		t.Fatal(err)
	}
	last.SetStatus(release.StatusFailed, "changed, never written")
	last.Labels["hash"] = "changed"
	check(t)

	// A write is read back live.
	last, _ = memo.Last("a")
	last.SetStatus(release.StatusSuperseded, "")
	if err := memo.Update(last); err != nil {
		t.Fatal(err)
	}
	if err := memo.Create(newRelease("a", 3, release.StatusDeployed)); err != nil {
		t.Fatal(err)
	}
	before = counter.get(http.MethodGet)
	check(t)
	if got := counter.get(http.MethodGet) - before - len(reads); got != 1 {
		t.Errorf("after writing a, the memo made %d reads, want 1 (a's history again)", got)
	}
	if rel, err := memo.Deployed("a"); err != nil || rel.Version != 3 {
		t.Errorf("after the upgrade, deployed is %v (%v), want version 3", rel, err)
	}
}
