// Package controlplane runs a real, local Kubernetes control plane for tests,
// benchmarks and the demo: envtest's etcd and kube-apiserver, plus
// kube-controller-manager, kube-scheduler and KWOK, so that Deployments roll
// out and pods go Running on a fake node. Everything binds to 127.0.0.1.
package controlplane

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// NodeName is the name of the fake node KWOK manages.
const NodeName = "kwok-node-0"

// Options configure the cluster.
type Options struct {
	// CRDDirectoryPaths are installed once the API server is up.
	CRDDirectoryPaths []string
	// CRDs are installed too.
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// LogDir receives one log file per component; a temporary directory when empty.
	LogDir string
	// ValidatingWebhooks and MutatingWebhooks are installed pointing at a
	// local webhook server (see Cluster.Webhook for where to serve them).
	ValidatingWebhooks []*admissionregistrationv1.ValidatingWebhookConfiguration
	MutatingWebhooks   []*admissionregistrationv1.MutatingWebhookConfiguration
}

// Cluster is a running local control plane.
type Cluster struct {
	// Config is an admin rest.Config for the API server.
	Config *rest.Config
	// Kubeconfig is the path of an admin kubeconfig file.
	Kubeconfig string
	// LogDir holds the components' logs.
	LogDir string

	env      *envtest.Environment
	children []*Process
	// reaper ends envtest's etcd and kube-apiserver, which envtest starts
	// without a parent-death signal, if the test process dies first.
	reaper *Reaper
}

// Webhook returns where the installed webhooks expect the server: host,
// port and the directory of its serving certificate.
func (c *Cluster) Webhook() (host string, port int, certDir string) {
	o := c.env.WebhookInstallOptions
	return o.LocalServingHost, o.LocalServingPort, o.LocalServingCertDir
}

// Start brings the control plane up and waits until the fake node is Ready.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	assets, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	c := &Cluster{LogDir: opts.LogDir}
	if c.LogDir == "" {
		if c.LogDir, err = os.MkdirTemp("", "controlplane-"); err != nil {
			return nil, err
		}
	}
	c.env = &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     opts.CRDDirectoryPaths,
		CRDs:                  opts.CRDs,
		ErrorIfCRDPathMissing: len(opts.CRDDirectoryPaths) > 0,
		WebhookInstallOptions: envtest.WebhookInstallOptions{
			ValidatingWebhooks: opts.ValidatingWebhooks,
			MutatingWebhooks:   opts.MutatingWebhooks,
			LocalServingHost:   "127.0.0.1",
		},
	}
	configureAPIServer(c.env)
	if c.reaper, err = StartReaper(); err != nil {
		return nil, err
	}
	if c.Config, err = c.env.Start(); err != nil {
		c.reaper.Close()
		return nil, fmt.Errorf("starting kube-apiserver and etcd from %s: %w", assets, err)
	}
	if err := c.watchEnvtest(); err != nil {
		c.Stop()
		return nil, err
	}
	if err := c.startChildren(assets); err != nil {
		c.Stop()
		return nil, err
	}
	if err := c.addNode(ctx); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// watchEnvtest has the reaper watch envtest's etcd and kube-apiserver.
func (c *Cluster) watchEnvtest() error {
	for _, name := range []string{"etcd", "kube-apiserver"} {
		p, err := findChild(name)
		if err != nil {
			return err
		}
		if err := c.reaper.Watch(p.pid); err != nil {
			return fmt.Errorf("watching %s: %w", name, err)
		}
	}
	return nil
}

// configureAPIServer applies the settings that keep the API server honest at
// scale (see shared/LOCAL-CLUSTER.md).
func configureAPIServer(env *envtest.Environment) {
	args := env.ControlPlane.GetAPIServer().Configure()
	args.Set("service-cluster-ip-range", "10.96.0.0/12")
	args.Set("max-requests-inflight", "1000")
	args.Set("max-mutating-requests-inflight", "500")
	args.Set("bind-address", "127.0.0.1")
}

func (c *Cluster) startChildren(assets string) error {
	admin, err := c.env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("creating admin user: %w", err)
	}
	kubeconfig, err := admin.KubeConfig()
	if err != nil {
		return err
	}
	c.Kubeconfig = filepath.Join(c.LogDir, "kubeconfig")
	if err := os.WriteFile(c.Kubeconfig, kubeconfig, 0o600); err != nil {
		return err
	}
	stages, err := filepath.Glob(filepath.Join(assets, "kwok-stages", "*.yaml"))
	if err != nil || len(stages) == 0 {
		return fmt.Errorf("no KWOK stages in %s/kwok-stages: run make test-bins", assets)
	}
	commands := map[string][]string{
		"kube-controller-manager": {
			"--kubeconfig=" + c.Kubeconfig, "--bind-address=127.0.0.1", "--secure-port=0", "--leader-elect=false",
			"--controllers=deployment-controller,replicaset-controller,job-controller,garbage-collector-controller,namespace-controller,resourcequota-controller,serviceaccount-controller,endpointslice-controller,node-lifecycle-controller",
			"--kube-api-qps=1000", "--kube-api-burst=2000",
			"--concurrent-deployment-syncs=50", "--concurrent-replicaset-syncs=50",
			// The quota controller's full recount, every 5 min by default,
			// would now and then hide within a test's minute a quota charged
			// for a create never stored; the recounts an object's deletion
			// or a quota's change starts remain.
			"--resource-quota-sync-period=24h",
		},
		"kube-scheduler": {
			"--kubeconfig=" + c.Kubeconfig, "--bind-address=127.0.0.1", "--secure-port=0", "--leader-elect=false",
			"--kube-api-qps=1000", "--kube-api-burst=2000",
		},
		"kwok": {
			"--kubeconfig=" + c.Kubeconfig, "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake",
			"--cidr=10.244.0.1/16", "--node-ip=127.0.0.1", "--node-lease-duration-seconds=40",
			"--config=" + strings.Join(stages, ","),
		},
	}
	for _, name := range []string{"kube-controller-manager", "kube-scheduler", "kwok"} {
		if err := c.startChild(filepath.Join(assets, name), commands[name]); err != nil {
			return err
		}
	}
	return nil
}

// StartBinary runs one more binary from the assets directory against the
// cluster (KUBECONFIG is set), logging to LogDir; Stop ends it.
func (c *Cluster) StartBinary(name string, args ...string) error {
	assets, err := AssetsDir()
	if err != nil {
		return err
	}
	return c.startChild(filepath.Join(assets, name), args)
}

func (c *Cluster) startChild(path string, args []string) error {
	name := filepath.Base(path)
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), "HOME="+c.LogDir, "KUBECONFIG="+c.Kubeconfig) // kwok writes ~/.kwok
	p, err := StartProcess(cmd, filepath.Join(c.LogDir, name+".log"))
	if err != nil {
		return fmt.Errorf("starting %s: %w", name, err)
	}
	c.children = append(c.children, p)
	return nil
}

// addNode registers the fake node and waits for KWOK to make it Ready.
func (c *Cluster) addNode(ctx context.Context) error {
	cl, err := client.New(c.Config, client.Options{})
	if err != nil {
		return err
	}
	plenty := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("1000"),
		corev1.ResourceMemory: resource.MustParse("1000Gi"),
		// Instances always ask for ephemeral storage; a node without it fits none.
		corev1.ResourceEphemeralStorage: resource.MustParse("100Ti"),
		corev1.ResourcePods:             resource.MustParse("20000"), // the resident bench runs 10,000 instances
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        NodeName,
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
			Labels:      map[string]string{"kubernetes.io/hostname": NodeName, "kubernetes.io/os": "linux", "type": "kwok"},
		},
		Status: corev1.NodeStatus{Allocatable: plenty, Capacity: plenty},
	}
	if err := cl.Create(ctx, node); err != nil {
		return fmt.Errorf("creating node %s: %w", NodeName, err)
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := cl.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
			return false, nil //nolint:nilerr // not there yet: poll again
		}
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("node %s never became Ready (see %s/kwok.log): %w", NodeName, c.LogDir, err)
	}
	return nil
}

// Stop ends every component this cluster started, and only those.
func (c *Cluster) Stop() {
	for _, p := range c.children {
		p.Kill()
	}
	c.children = nil
	if c.env != nil {
		_ = c.env.Stop()
	}
	if c.reaper != nil {
		c.reaper.Close()
	}
}

// AssetsDir finds the control-plane binaries: $KUBEBUILDER_ASSETS, else the
// cache `make test-bins` fills.
func AssetsDir() (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "challenge-operator", "k8s-v1.35.4")
	if _, err := os.Stat(filepath.Join(dir, ".stamp")); err != nil {
		return "", errors.New("control-plane binaries not found: run `make test-bins` or set KUBEBUILDER_ASSETS")
	}
	return dir, nil
}

// RepoRoot returns the repository root, for tests that need the chart or the CRDs.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}
