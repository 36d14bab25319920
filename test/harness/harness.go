// Package harness runs the operator on the local control plane for
// integration tests: one Harness per test package, started from TestMain.
package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/yaml"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/flagtag"
	"github.com/challenge-operator/challenge-operator/internal/operator"
	"github.com/challenge-operator/challenge-operator/test/builders"
	"github.com/challenge-operator/challenge-operator/test/controlplane"
)

// Polling of Eventually in integration tests.
const (
	Timeout  = 30 * time.Second
	Interval = 50 * time.Millisecond
)

// OrganiserNamespace holds the organiser's Secrets (flag keys): the only
// namespace the operator under test reads flag Secrets from.
const OrganiserNamespace = "ctf-organiser"

// OrganiserSecret is a Secret of the organiser's, marked as such, in
// OrganiserNamespace: what templates may read flags and secretEnv from.
func OrganiserSecret(name string, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: OrganiserNamespace, Labels: map[string]string{ctfv1alpha1.OrganiserSecretLabel: "true"}},
		Data:       data,
	}
}

// IngressDomain is the organiser domain Ingress hosts must be under in tests.
const IngressDomain = "ctf.example"

// Harness is a control plane with the operator running against it.
type Harness struct {
	Cluster *controlplane.Cluster
	Client  client.Client
	// LogFile is where the operator logs.
	LogFile string
	// Requests counts the API requests of the operator, across restarts.
	Requests *Requests

	nsCount atomic.Int32
	// root, opts and stop let Restart start a fresh operator.
	root string
	opts Options
	stop func()
}

// Options configure the operator; WatchesFile is filled in.
type Options struct {
	Operator operator.Options
	// AsServiceAccount runs the operator as its own service account, bound to
	// the ClusterRoles `make manifests` generates (plus the namespace-per-instance
	// role when that mode is on), rather than as the cluster admin: a right
	// missing from the RBAC fails the suite.
	AsServiceAccount bool
	// ValidatingWebhooks and MutatingWebhooks are installed and served by
	// the operator (its Webhook option is on with either).
	ValidatingWebhooks []*admissionregistrationv1.ValidatingWebhookConfiguration
	MutatingWebhooks   []*admissionregistrationv1.MutatingWebhookConfiguration
	// GatewayAPI installs the Gateway API's standard CRDs, from its Go module.
	GatewayAPI bool
	// AfterTests, when set, runs once the tests are done, before the operator
	// and the control plane stop (a process the package started ends there:
	// an API server with open watches takes its full timeout to stop); an
	// error fails the run.
	AfterTests func() error
}

// GatewayAPICRDs is the directory of the Gateway API's standard CRDs in the
// module the operator builds with, so the tests install exactly the API its
// types describe.
func GatewayAPICRDs() (string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "sigs.k8s.io/gateway-api")
	cmd.Dir = controlplane.RepoRoot()
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("locating the Gateway API module: %w", err)
	}
	return filepath.Join(strings.TrimSpace(string(out)), "config", "crd", "standard"), nil
}

// Run starts the cluster and the operator, runs the tests and stops both.
// It is meant to be TestMain's body: os.Exit(harness.Run(m, opts, &h, ready)),
// where ready (may be nil) runs once h is set, before the tests.
func Run(m *testing.M, opts Options, h **Harness, ready func()) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	root := controlplane.RepoRoot()
	crds := []string{filepath.Join(root, "config", "crd", "bases")}
	if opts.GatewayAPI {
		dir, err := GatewayAPICRDs()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		crds = append(crds, dir)
	}
	cluster, err := controlplane.Start(ctx, controlplane.Options{
		CRDDirectoryPaths:  crds,
		ValidatingWebhooks: opts.ValidatingWebhooks,
		MutatingWebhooks:   opts.MutatingWebhooks,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting control plane:", err)
		return 1
	}
	defer cluster.Stop()
	*h = &Harness{Cluster: cluster, LogFile: filepath.Join(cluster.LogDir, "operator.log"), Requests: newRequests(), root: root, opts: opts}
	if err := (*h).start(); err != nil {
		fmt.Fprintln(os.Stderr, "starting operator:", err)
		return 1
	}
	// Stop the operator before the control plane: an API server with open
	// watches takes its full timeout to stop.
	defer func() { (*h).stop() }()
	fmt.Fprintln(os.Stderr, "control plane and operator logs:", cluster.LogDir)
	if ready != nil {
		ready()
	}
	code := m.Run()
	if opts.AfterTests != nil {
		if err := opts.AfterTests(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = max(code, 1)
		}
	}
	if forbidden := (*h).forbidden(); code == 0 && forbidden != "" {
		fmt.Fprintln(os.Stderr, "the operator was refused a right it needs:", forbidden)
		return 1
	}
	return code
}

// forbidden returns the first line of the operator's log where the API
// server refused it something.
func (h *Harness) forbidden() string {
	data, err := os.ReadFile(h.LogFile)
	if err != nil {
		return err.Error()
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, "forbidden: User") && strings.Contains(line, "system:serviceaccount:") {
			return line
		}
	}
	return ""
}

// Restart stops the operator and starts a fresh one, with empty caches, as
// after a crash or an upgrade.
func (h *Harness) Restart() error {
	h.stop()
	return h.start()
}

// Stop stops the operator until Start; the control plane runs on.
func (h *Harness) Stop() { h.stop(); h.stop = func() {} }

// Start starts a fresh operator after Stop.
func (h *Harness) Start() error { return h.start() }

func (h *Harness) start() error {
	ctx, cancel := context.WithCancel(context.Background())
	stopped, err := h.startOperator(ctx, h.opts)
	if err != nil {
		cancel()
		return err
	}
	h.stop = func() { cancel(); <-stopped }
	return nil
}

func (h *Harness) startOperator(ctx context.Context, opts Options) (stopped <-chan struct{}, err error) {
	logFile, err := os.OpenFile(h.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	logger := zap.New(zap.WriteTo(logFile), zap.UseDevMode(true))
	ctrl.SetLogger(logger)
	klog.SetLogger(logger)

	scheme, err := operator.NewScheme()
	if err != nil {
		return nil, err
	}
	host, port, certDir := h.Cluster.Webhook()
	cfg := h.Cluster.Config
	if opts.AsServiceAccount {
		if cfg, err = BindServiceAccount(ctx, h.Cluster.Config, opts.Operator.Values.NamespacePerInstance); err != nil {
			return nil, err
		}
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{next: rt, requests: h.Requests} })
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  operator.CacheOptions(nil, opts.Operator.Features()),
		WebhookServer:          webhook.NewServer(webhook.Options{Host: host, Port: port, CertDir: certDir}),
		// Restart runs a second manager in this process, with the same controller names.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, err
	}
	opts.Operator.WatchesFile, err = WatchesFile()
	if err != nil {
		return nil, err
	}
	opts.Operator.Webhook = len(opts.ValidatingWebhooks)+len(opts.MutatingWebhooks) > 0
	if len(opts.Operator.Values.FlagSecretNamespaces) == 0 {
		opts.Operator.Values.FlagSecretNamespaces = []string{OrganiserNamespace}
	}
	if len(opts.Operator.Values.SharedServiceNamespaces) == 0 {
		opts.Operator.Values.SharedServiceNamespaces = []string{OrganiserNamespace}
	}
	if opts.Operator.Values.IngressDomain == "" {
		opts.Operator.Values.IngressDomain = IngressDomain
	}
	if err := operator.Setup(mgr, opts.Operator); err != nil {
		return nil, err
	}
	if h.Client, err = client.New(h.Cluster.Config, client.Options{Scheme: scheme}); err != nil {
		return nil, err
	}
	for _, name := range []string{OrganiserNamespace, opts.Operator.PoolNamespace} {
		if name == "" {
			continue
		}
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := h.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, err
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}()
	return done, nil
}

// OperatorServiceAccount is the identity the operator runs as with AsServiceAccount.
var OperatorServiceAccount = types.NamespacedName{Namespace: "ctf-operator", Name: "challenge-operator"}

// BindServiceAccount binds the generated ClusterRoles (and the
// namespace-per-instance one when nsPerInstance) to OperatorServiceAccount
// and returns a copy of admin that impersonates it.
func BindServiceAccount(ctx context.Context, admin *rest.Config, nsPerInstance bool) (*rest.Config, error) {
	cl, err := client.New(admin, client.Options{})
	if err != nil {
		return nil, err
	}
	root := controlplane.RepoRoot()
	roles := []string{filepath.Join(root, "config", "rbac", "role.yaml")}
	if nsPerInstance {
		roles = append(roles, filepath.Join(root, "config", "namespace-per-instance", "role.yaml"))
	}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: OperatorServiceAccount.Namespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: OperatorServiceAccount.Name, Namespace: OperatorServiceAccount.Namespace}},
	}
	for _, path := range roles {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		role := &rbacv1.ClusterRole{}
		if err := yaml.Unmarshal(data, role); err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		objs = append(objs, role, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: role.Name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: OperatorServiceAccount.Name, Namespace: OperatorServiceAccount.Namespace}},
		})
	}
	// Leader election: the Role every install mode has in the operator's namespace.
	electionPath := filepath.Join(root, "config", "rbac", "common", "leader_election_role.yaml")
	data, err := os.ReadFile(electionPath)
	if err != nil {
		return nil, err
	}
	election := &rbacv1.Role{}
	if err := yaml.Unmarshal(data, election); err != nil {
		return nil, fmt.Errorf("reading %s: %w", electionPath, err)
	}
	election.Namespace = OperatorServiceAccount.Namespace
	objs = append(objs, election, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: election.Name, Namespace: election.Namespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: election.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: OperatorServiceAccount.Name, Namespace: OperatorServiceAccount.Namespace}},
	})
	for _, obj := range objs {
		if err := cl.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, err
		}
	}
	cfg := rest.CopyConfig(admin)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: ServiceAccountUser()}
	return cfg, nil
}

// ServiceAccountUser is the user name of OperatorServiceAccount.
func ServiceAccountUser() string {
	return "system:serviceaccount:" + OperatorServiceAccount.Namespace + ":" + OperatorServiceAccount.Name
}

// WatchesFile writes the project's watches.yaml with the chart path made
// absolute, since tests run in their package directory, and returns its path.
func WatchesFile() (string, error) {
	return WatchesFileFor(controlplane.RepoRoot())
}

// WatchesFileFor is WatchesFile for the chart of the source tree at root:
// an operator of an earlier release runs with the chart it shipped with.
func WatchesFileFor(root string) (string, error) {
	f, err := os.CreateTemp("", "watches-*.yaml")
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	_, err = fmt.Fprintf(f, "- group: ctf.challenge-operator.io\n  version: v1alpha1\n  kind: Challenge\n  chart: %s\n",
		filepath.Join(root, "charts", "challenge"))
	return f.Name(), err
}

// Namespace creates a namespace of the test's own, deleted when it ends. It
// enforces the restricted Pod Security Standard, so that the API server
// itself judges every pod the chart renders.
func (h *Harness) Namespace(t *testing.T, labels map[string]string) string {
	t.Helper()
	all := map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}
	for k, v := range labels {
		all[k] = v
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("t%d", h.nsCount.Add(1)), Labels: all}}
	gomega.NewWithT(t).Expect(h.Client.Create(context.Background(), ns)).To(gomega.Succeed())
	t.Cleanup(func() { _ = h.Client.Delete(context.Background(), ns) })
	return ns.Name
}

// EventuallyPhase waits until the Challenge reports phase and returns it.
func (h *Harness) EventuallyPhase(t *testing.T, ch *ctfv1alpha1.Challenge, phase ctfv1alpha1.Phase) *ctfv1alpha1.Challenge {
	t.Helper()
	got := &ctfv1alpha1.Challenge{}
	gomega.NewWithT(t).Eventually(func(g gomega.Gomega) {
		g.Expect(h.Client.Get(context.Background(), client.ObjectKeyFromObject(ch), got)).To(gomega.Succeed())
		g.Expect(got.Status.Phase).To(gomega.Equal(phase), "reason %s: %s", got.Status.Reason, got.Status.Message)
	}, Timeout, Interval).Should(gomega.Succeed())
	return got
}

// EventuallyGone waits, up to within, until obj no longer exists; obj itself
// is left as it is.
func (h *Harness) EventuallyGone(t *testing.T, obj client.Object, within time.Duration, why string) {
	t.Helper()
	key := client.ObjectKeyFromObject(obj)
	gomega.NewWithT(t).Eventually(func() bool {
		return apierrors.IsNotFound(h.Client.Get(context.Background(), key, obj.DeepCopyObject().(client.Object)))
	}, within, Interval).Should(gomega.BeTrue(), why)
}

// Template creates builders.Template(name, mutate), deleted when the test
// ends.
func (h *Harness) Template(t *testing.T, name string, mutate func(*ctfv1alpha1.ChallengeTemplateSpec)) *ctfv1alpha1.ChallengeTemplate {
	t.Helper()
	tmpl := builders.Template(name, mutate)
	gomega.NewWithT(t).Expect(h.Client.Create(context.Background(), tmpl)).To(gomega.Succeed())
	t.Cleanup(func() { _ = h.Client.Delete(context.Background(), tmpl) })
	return tmpl
}

// EditTemplate changes the spec of the template tmpl names as edit says,
// as an organiser's kubectl edit does: a merge patch of what edit changed,
// without a resourceVersion. The operator writes the template's status at
// every change of its instances, so an Update of a read could be refused as
// a conflict; a patch of the spec cannot. tmpl gets the template as stored;
// a refusal (the API server's validation) is returned as it is.
func EditTemplate(ctx context.Context, cl client.Client, tmpl *ctfv1alpha1.ChallengeTemplate, edit func(*ctfv1alpha1.ChallengeTemplateSpec)) error {
	if err := cl.Get(ctx, client.ObjectKeyFromObject(tmpl), tmpl); err != nil {
		return err
	}
	patch := client.MergeFrom(tmpl.DeepCopy())
	edit(&tmpl.Spec)
	return cl.Patch(ctx, tmpl, patch)
}

// Values decodes chart values written as JSON, refusing unknown keys as a
// strict client would.
func Values(s string) *ctfv1alpha1.Values {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	v := &ctfv1alpha1.Values{}
	if err := dec.Decode(v); err != nil {
		panic(fmt.Sprintf("test values %s: %v", s, err))
	}
	return v
}

// FlagKey is the flag key the tests' operator and instancer share (the
// Secret challenge-operator-flag-key of an install).
var FlagKey = []byte("the tests' flag key, 32 bytes at least")

// FlagCodec seals and opens the tests' perTeam flags under FlagKey.
func FlagCodec() *flagtag.Codec {
	c, err := flagtag.New(FlagKey)
	if err != nil {
		panic(err) // FlagKey is long enough
	}
	return c
}
