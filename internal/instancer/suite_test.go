package instancer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/challenge-operator/challenge-operator/internal/instancer"
	"github.com/challenge-operator/challenge-operator/internal/operator"
	"github.com/challenge-operator/challenge-operator/internal/token"
	"github.com/challenge-operator/challenge-operator/test/controlplane"
	"github.com/challenge-operator/challenge-operator/test/harness"
	"github.com/challenge-operator/challenge-operator/test/operatorbuild"
)

const (
	timeout  = harness.Timeout
	interval = harness.Interval
	// instancesNamespace is where the instancer creates Challenges.
	instancesNamespace = "ctf"
	startsPerMinute    = 3
	// audience is the instancer's own: tokens for another are refused.
	audience = "instancer-test"
)

var (
	h   *harness.Harness
	k8s client.Client
	// api and api2 are the two replicas of the instancer under test, each
	// `challenge-operator instancer` run as a process of its own.
	api, api2 *replica
	// newServer returns an in-process instancer like the replicas whose
	// cache reads go through wrap: tests make it lag.
	newServer func(wrap func(reader client.Reader) client.Reader) *instancer.Server
	// newCountedServer returns an in-process instancer like newServer whose
	// every request to the API server (its cache's excepted) is counted.
	newCountedServer func(opts instancer.Options) (*instancer.Server, *atomic.Int64)
	keys             = token.Keys{"2026": []byte("an instancer key of at least thirty-two bytes")}
	// platformKeys sign the platform's calls: a directory of their own.
	platformKeys = token.Keys{"ctfd": []byte("the platform's key, thirty-two bytes or more")}
	// instancerBin is the operator's binary, built from this checkout.
	instancerBin string
	// instancerKubeconfig acts as the instancer's ServiceAccount.
	instancerKubeconfig string
	keyDir              string
	platformKeyDir      string
	flagKeyFile         string
	workDir             string
)

// instancerAccount is the instancer's identity: a ServiceAccount in the
// namespace it serves, as config/instancer installs it.
var instancerAccount = types.NamespacedName{Namespace: instancesNamespace, Name: "instancer"}

// TestMain starts the control plane and the operator (as its service
// account), builds the operator's binary and runs its instancer subcommand
// twice, as two replicas, as the instancer's own ServiceAccount bound to
// the roles `make manifests` generates for it and nothing else: a right it
// lacks fails the tests, and so does any "forbidden" in the replicas' logs.
func TestMain(m *testing.M) {
	os.Exit(harness.Run(m, harness.Options{
		AsServiceAccount: true,
		Operator:         operator.Options{MaxConcurrentReconciles: 4, FlagCodec: harness.FlagCodec()},
		AfterTests:       stopReplicas,
	}, &h, func() {
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
	cfg, err := bindInstancerRoles(ctx)
	if err != nil {
		return err
	}
	if workDir, err = os.MkdirTemp("", "instancer-"); err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "instancer replicas' logs:", workDir)
	keyDir = filepath.Join(workDir, "keys")
	if err := os.Mkdir(keyDir, 0o700); err != nil {
		return err
	}
	for kid, key := range keys {
		if err := os.WriteFile(filepath.Join(keyDir, kid), key, 0o600); err != nil {
			return err
		}
	}
	platformKeyDir = filepath.Join(workDir, "platform-keys")
	if err := os.Mkdir(platformKeyDir, 0o700); err != nil {
		return err
	}
	for kid, key := range platformKeys {
		if err := os.WriteFile(filepath.Join(platformKeyDir, kid), key, 0o600); err != nil {
			return err
		}
	}
	flagKeyFile = filepath.Join(workDir, "flag-key")
	if err := os.WriteFile(flagKeyFile, harness.FlagKey, 0o600); err != nil {
		return err
	}
	if err := writeKubeconfig(); err != nil {
		return err
	}
	if instancerBin, err = operatorbuild.Binary(); err != nil {
		return err
	}
	if api, err = startReplica("a"); err != nil {
		return err
	}
	if api2, err = startReplica("b"); err != nil {
		return err
	}
	return inProcess(ctx, cfg)
}

// inProcess sets newServer: an instancer in the test's process, acting as
// the instancer's ServiceAccount, for the tests that swap its cache.
func inProcess(ctx context.Context, cfg *rest.Config) error {
	informers, err := cache.New(cfg, cache.Options{Scheme: k8s.Scheme(),
		DefaultNamespaces: map[string]cache.Config{instancesNamespace: {}}})
	if err != nil {
		return err
	}
	go func() { _ = informers.Start(ctx) }()
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
			Namespace: instancesNamespace, KeyDir: keyDir, PlatformKeyDir: platformKeyDir, StartsPerMinute: startsPerMinute,
			Cooldown: time.Minute, Audience: audience,
		}}
	}
	newCountedServer = func(opts instancer.Options) (*instancer.Server, *atomic.Int64) {
		var n atomic.Int64
		counted := rest.CopyConfig(cfg)
		counted.Wrap(func(rt http.RoundTripper) http.RoundTripper {
			return roundTripFunc(func(r *http.Request) (*http.Response, error) {
				n.Add(1)
				return rt.RoundTrip(r)
			})
		})
		live, err := client.New(counted, client.Options{Scheme: k8s.Scheme()})
		if err != nil {
			panic(err)
		}
		cl, err := client.New(counted, client.Options{Scheme: k8s.Scheme(), Cache: &client.CacheOptions{Reader: informers}})
		if err != nil {
			panic(err)
		}
		opts.Namespace, opts.KeyDir, opts.Audience = instancesNamespace, keyDir, audience
		return &instancer.Server{Client: cl, APIReader: live, Informers: informers, Options: opts}, &n
	}
	return nil
}

// roundTripFunc is a function as an http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// bindInstancerRoles creates the instancer's ServiceAccount and binds the
// generated config/instancer/role.yaml to it as config/instancer does: its
// Role in the instances' namespace, its ClusterRole cluster-wide. It returns
// a config acting as it.
func bindInstancerRoles(ctx context.Context) (*rest.Config, error) {
	data, err := os.ReadFile(filepath.Join(controlplane.RepoRoot(), "config", "instancer", "role.yaml"))
	if err != nil {
		return nil, err
	}
	subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: instancerAccount.Name, Namespace: instancerAccount.Namespace}}
	objs := []client.Object{&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: instancerAccount.Name, Namespace: instancerAccount.Namespace}}}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var kind struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &kind); err != nil {
			return nil, err
		}
		switch kind.Kind {
		case "ClusterRole":
			role := &rbacv1.ClusterRole{}
			if err := yaml.Unmarshal([]byte(doc), role); err != nil {
				return nil, err
			}
			objs = append(objs, role, &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "instancer-test"},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
				Subjects:   subject,
			})
		case "Role":
			role := &rbacv1.Role{}
			if err := yaml.Unmarshal([]byte(doc), role); err != nil {
				return nil, err
			}
			role.Namespace = instancesNamespace // kustomize sets the install's
			objs = append(objs, role, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "instancer-test", Namespace: instancesNamespace},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
				Subjects:   subject,
			})
		case "":
		default:
			return nil, fmt.Errorf("config/instancer/role.yaml: unexpected %s", kind.Kind)
		}
	}
	if len(objs) != 5 {
		return nil, fmt.Errorf("config/instancer/role.yaml: want a Role and a ClusterRole, got %d objects", len(objs)-1)
	}
	for _, obj := range objs {
		if err := k8s.Create(ctx, obj); err != nil {
			return nil, err
		}
	}
	cfg := rest.CopyConfig(h.Cluster.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: instancerUser()}
	return cfg, nil
}

func instancerUser() string {
	return "system:serviceaccount:" + instancerAccount.Namespace + ":" + instancerAccount.Name
}

// writeKubeconfig writes the replicas' kubeconfig: the admin's, impersonating
// the instancer's ServiceAccount.
func writeKubeconfig() error {
	kubeconfig, err := clientcmd.LoadFromFile(h.Cluster.Kubeconfig)
	if err != nil {
		return err
	}
	for _, user := range kubeconfig.AuthInfos {
		user.Impersonate = instancerUser()
	}
	instancerKubeconfig = filepath.Join(workDir, "instancer.kubeconfig")
	return clientcmd.WriteToFile(*kubeconfig, instancerKubeconfig)
}

// replica is one process of the instancer, on ports it keeps across restarts.
type replica struct {
	name string
	// URL is where it serves the page and the API; metricsURL its metrics.
	URL        string
	metricsURL string
	addr       string
	probeAddr  string
	// extra are flags after the usual ones (the last of a flag wins).
	extra   []string
	process *controlplane.Process
	runs    int
}

// replicas are every replica started, checked and stopped after the tests.
var replicas []*replica

// startReplica runs one replica of the instancer and waits until it is ready.
func startReplica(name string, extra ...string) (*replica, error) {
	var addrs [3]string
	for i := range addrs {
		var err error
		if addrs[i], err = controlplane.FreeAddress(); err != nil {
			return nil, err
		}
	}
	r := &replica{name: name, URL: "http://" + addrs[0], addr: addrs[0], probeAddr: addrs[1], metricsURL: "http://" + addrs[2] + "/metrics",
		// Plain HTTP: internal/serving tests the secure endpoint both processes share.
		extra: append([]string{"--metrics-bind-address=" + addrs[2], "--metrics-secure=false"}, extra...)}
	replicas = append(replicas, r)
	return r, r.start()
}

func (r *replica) start() error {
	r.runs++
	cmd := exec.Command(instancerBin, append([]string{"instancer",
		"--bind-address=" + r.addr,
		"--health-probe-bind-address=" + r.probeAddr,
		"--namespace=" + instancesNamespace,
		"--key-dir=" + keyDir,
		"--starts-per-minute=" + strconv.Itoa(startsPerMinute),
		"--cooldown=1m",
		"--audience=" + audience,
		"--platform-key-dir=" + platformKeyDir,
		"--flag-key-file=" + flagKeyFile,
	}, r.extra...)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+instancerKubeconfig)
	p, err := controlplane.StartProcess(cmd, r.log(r.runs))
	if err != nil {
		return err
	}
	r.process = p
	err = wait.PollUntilContextTimeout(context.Background(), interval, timeout, true, func(context.Context) (bool, error) {
		if !p.Running() {
			return false, fmt.Errorf("instancer replica %s exited; see %s", r.name, p.Log)
		}
		res, err := http.Get("http://" + r.probeAddr + "/readyz")
		if err != nil {
			return false, nil //nolint:nilerr // not listening yet: poll again
		}
		_ = res.Body.Close()
		return res.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("instancer replica %s not ready (log %s): %w", r.name, p.Log, err)
	}
	return nil
}

func (r *replica) log(run int) string {
	return filepath.Join(workDir, fmt.Sprintf("instancer-%s-%d.log", r.name, run))
}

// restart kills the replica as a crash would (SIGKILL) and starts it again:
// whatever it held in memory is gone.
func (r *replica) restart(t *testing.T) {
	t.Helper()
	r.process.Kill()
	if err := r.start(); err != nil {
		t.Fatal(err)
	}
}

// stopReplicas kills every replica, removes the binary (the logs stay) and
// fails the run if a replica was refused anything by the API server.
func stopReplicas() error {
	for _, r := range replicas {
		r.process.Kill()
	}
	operatorbuild.Remove()
	for _, r := range replicas {
		for run := 1; run <= r.runs; run++ {
			data, err := os.ReadFile(r.log(run))
			if err != nil {
				return err
			}
			for _, line := range strings.Split(string(data), "\n") {
				if strings.Contains(line, "forbidden") {
					return fmt.Errorf("the instancer was refused a right it needs: %s", line)
				}
			}
		}
	}
	return nil
}

// mint returns a valid token of team.
func mint(t *testing.T, team string) string {
	t.Helper()
	raw, err := token.MintFor(keys, "", team, audience, time.Hour, time.Now())
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

// callAt is call to the instancer at base; a body of bytes is sent as it
// is (a platform call is signed for its very bytes), any other as JSON.
// Every answer is checked against openapi.json (instancer.CheckAnswer).
func callAt(t *testing.T, base, tok, method, path string, body any, out any) int {
	t.Helper()
	var sent []byte
	if raw, ok := body.([]byte); ok {
		sent = raw
	} else if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		sent = data
	}
	req, res, data := send(t, http.DefaultClient, base, tok, method, path, sent, body != nil)
	instancer.CheckAnswer(t, req, sent, res, data)
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: %d, not JSON: %s", method, path, res.StatusCode, data)
		}
	}
	return res.StatusCode
}

// send sends method path at base with body (JSON, when withBody) as the
// holder of tok ("" for none), through c, and returns the request, the
// answer and its bytes, whatever they are.
func send(t *testing.T, c *http.Client, base, tok, method, path string, body []byte, withBody bool) (*http.Request, *http.Response, []byte) {
	t.Helper()
	var reader io.Reader
	if withBody {
		reader = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, base+path, reader)
	if err != nil {
		t.Fatal(err)
	}
	if withBody {
		req.Header.Set("Content-Type", "application/json") // as the page sends it
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return req, res, data
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

// nameOf is the name the instancer gives team's instance of template.
func nameOf(template, team string) string {
	return instancer.InstanceName(instancer.NameKey(keys), template, team)
}
