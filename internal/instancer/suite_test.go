package instancer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/challenge-operator/challenge-operator/internal/instancer"
	"github.com/challenge-operator/challenge-operator/internal/operator"
	"github.com/challenge-operator/challenge-operator/internal/testcluster"
	"github.com/challenge-operator/challenge-operator/internal/testharness"
	"github.com/challenge-operator/challenge-operator/internal/token"
)

const (
	timeout  = testharness.Timeout
	interval = testharness.Interval
	// instancesNamespace is where the instancer creates Challenges.
	instancesNamespace = "ctf"
	startsPerMinute    = 3
)

var (
	h   *testharness.Harness
	k8s client.Client
	// api is the instancer under test, served over HTTP.
	api *httptest.Server
	// newServer returns an instancer like api's whose cache reads go
	// through wrap: tests make it lag.
	newServer func(wrap func(cache client.Reader) client.Reader) *instancer.Server
	keys      = token.Keys{"2026": []byte("an instancer key of at least thirty-two bytes")}
)

// TestMain starts the control plane, the operator (as its service account)
// and the instancer, as its own service account bound to the ClusterRole
// `make manifests` generates for it and nothing else: a right it lacks
// fails the tests.
func TestMain(m *testing.M) {
	os.Exit(testharness.Run(m, testharness.Options{AsServiceAccount: true, Operator: operator.Options{MaxConcurrentReconciles: 4}}, &h, func() {
		k8s = h.Client
		if err := startInstancer(); err != nil {
			fmt.Fprintln(os.Stderr, "starting the instancer:", err)
			os.Exit(1)
		}
	}))
}

func startInstancer() error {
	ctx := context.Background()
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: instancesNamespace,
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}}); err != nil {
		return err
	}
	cfg, err := bindInstancerRole(ctx)
	if err != nil {
		return err
	}
	informers, err := cache.New(cfg, cache.Options{Scheme: k8s.Scheme()})
	if err != nil {
		return err
	}
	go func() { _ = informers.Start(ctx) }()
	dir, err := os.MkdirTemp("", "instancer-keys-")
	if err != nil {
		return err
	}
	for kid, key := range keys {
		if err := os.WriteFile(filepath.Join(dir, kid), key, 0o600); err != nil {
			return err
		}
	}
	live, err := client.New(cfg, client.Options{Scheme: k8s.Scheme()})
	if err != nil {
		return err
	}
	newServer = func(wrap func(client.Reader) client.Reader) *instancer.Server {
		var reader client.Reader = informers
		if wrap != nil {
			reader = wrap(informers)
		}
		cl, err := client.New(cfg, client.Options{Scheme: k8s.Scheme(), Cache: &client.CacheOptions{Reader: reader}})
		if err != nil {
			panic(err)
		}
		return &instancer.Server{Client: cl, APIReader: live, Informers: informers, Options: instancer.Options{
			Namespace: instancesNamespace, KeyDir: dir, StartsPerMinute: startsPerMinute, Cooldown: time.Minute,
		}}
	}
	api = httptest.NewServer(newServer(nil).Handler())
	return nil
}

// bindInstancerRole creates the instancer's ServiceAccount, binds the
// generated config/instancer/role.yaml to it, and returns a config acting as it.
func bindInstancerRole(ctx context.Context) (*rest.Config, error) {
	data, err := os.ReadFile(filepath.Join(testcluster.RepoRoot(), "config", "instancer", "role.yaml"))
	if err != nil {
		return nil, err
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.Unmarshal(data, role); err != nil {
		return nil, err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "instancer", Namespace: instancesNamespace}}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "instancer-test"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: sa.Namespace}},
	}
	for _, obj := range []client.Object{role, sa, binding} {
		if err := k8s.Create(ctx, obj); err != nil {
			return nil, err
		}
	}
	cfg := rest.CopyConfig(h.Cluster.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + sa.Namespace + ":" + sa.Name}
	return cfg, nil
}

// mint returns a valid token of team.
func mint(t *testing.T, team string) string {
	t.Helper()
	raw, err := token.Mint(keys, "", team, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// call sends a request to api as the holder of tok and decodes a JSON answer into out (when not nil).
func call(t *testing.T, tok, method, path string, body any, out any) int {
	t.Helper()
	return callAt(t, api.URL, tok, method, path, body, out)
}

// callAt is call to the instancer at base.
func callAt(t *testing.T, base, tok, method, path string, body any, out any) int {
	t.Helper()
	var reader io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		reader = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, base+path, reader)
	if err != nil {
		t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %d, not JSON: %s", method, path, res.StatusCode, data)
		}
	}
	return res.StatusCode
}

// apiError is the API's error body.
type apiError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// uniqueName returns a name no other test uses.
func uniqueName(prefix string) string {
	return fmt.Sprintf("%s%d", prefix, time.Now().UnixNano()%1_000_000)
}

func instancePath(template string) string { return "/api/v1/instances/" + template }
