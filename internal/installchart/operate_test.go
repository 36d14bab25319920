package installchart

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/action"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/test/builders"
	"github.com/challenge-operator/challenge-operator/test/controlplane"
	"github.com/challenge-operator/challenge-operator/test/harness"
	"github.com/challenge-operator/challenge-operator/test/operatorbuild"
)

// TestMain removes the operator's binary once every test has run.
func TestMain(m *testing.M) {
	code := m.Run()
	operatorbuild.Remove()
	os.Exit(code)
}

// operatorArgs are the manager's arguments as the chart rendered them, with
// what only makes sense in its pod (the watches file's path in the image,
// the ports, the namespace it reads from its ServiceAccount's mount) given to
// a process on this machine.
func operatorArgs(g Gomega, rendered []string, namespace string) []string {
	watches, err := harness.WatchesFile()
	g.Expect(err).NotTo(HaveOccurred())
	probes, err := controlplane.FreeAddress()
	g.Expect(err).NotTo(HaveOccurred())
	out := []string{"--leader-election-namespace=" + namespace}
	for _, a := range rendered {
		switch {
		case strings.HasPrefix(a, "--watches-file="):
			a = "--watches-file=" + watches
		case strings.HasPrefix(a, "--metrics-bind-address="):
			a = "--metrics-bind-address=0"
		case strings.HasPrefix(a, "--health-probe-bind-address="):
			a = "--health-probe-bind-address=" + probes
		}
		out = append(out, a)
	}
	return out
}

// TestNamespacedInstallRunsTheOperator runs the operator binary with exactly
// what a namespaced Helm install gives it: the rendered arguments and
// environment, and the rights of the chart's Role and ClusterRole bound to
// its ServiceAccount. It manages the Challenges of its namespace, from
// creation to Running to gone, and none elsewhere, and the API server never
// refuses it anything.
func TestNamespacedInstallRunsTheOperator(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cluster, cl := controlplane.StartForTest(t, controlplane.Options{})

	const ns, release = "ctf-event", "ctf"
	restrictedNamespace(ctx, g, cl, ns)
	install := action.NewInstall(helmFor(t, cluster, ns))
	install.ReleaseName, install.Namespace = release, ns
	_, err := install.Run(loadChart(t), map[string]any{"installMode": "namespaced"})
	g.Expect(err).NotTo(HaveOccurred())
	var manager appsv1.Deployment
	g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "challenge-operator-controller-manager"}, &manager)).To(Succeed())
	container := manager.Spec.Template.Spec.Containers[0]

	bin, err := operatorbuild.Binary()
	g.Expect(err).NotTo(HaveOccurred())

	// Its identity: the chart's ServiceAccount, impersonated.
	kubeconfig, err := clientcmd.LoadFromFile(cluster.Kubeconfig)
	g.Expect(err).NotTo(HaveOccurred())
	for _, user := range kubeconfig.AuthInfos {
		user.Impersonate = "system:serviceaccount:" + ns + ":" + manager.Spec.Template.Spec.ServiceAccountName
	}
	operatorKubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(clientcmd.WriteToFile(*kubeconfig, operatorKubeconfig)).To(Succeed())

	cmd := exec.Command(bin, operatorArgs(g, container.Args, ns)...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+operatorKubeconfig, "POD_NAMESPACE="+ns, "HOME="+t.TempDir())
	for _, e := range container.Env {
		if e.Name == "WATCH_NAMESPACE" {
			g.Expect(e.Value).To(Equal(ns))
			cmd.Env = append(cmd.Env, "WATCH_NAMESPACE="+e.Value)
		}
	}
	logFile := filepath.Join(t.TempDir(), "operator.log")
	operator, err := controlplane.StartProcess(cmd, logFile)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		operator.Kill()
		if t.Failed() {
			if data, err := os.ReadFile(logFile); err == nil {
				t.Logf("the operator's log:\n%s", data)
			}
		}
	})

	// One Challenge outside its namespace, then one inside.
	outside := builders.Challenge("default", "web-outside", "team1")
	g.Expect(cl.Create(ctx, outside)).To(Succeed())
	inside := builders.Challenge(ns, "web", "team1")
	g.Expect(cl.Create(ctx, inside)).To(Succeed())
	g.Eventually(func(g Gomega) {
		if !operator.Running() {
			StopTrying("the operator exited").Now()
		}
		g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(inside), inside)).To(Succeed())
		g.Expect(inside.Status.Phase).To(Equal(ctfv1alpha1.PhaseRunning), "reason %s: %s", inside.Status.Reason, inside.Status.Message)
		g.Expect(inside.Status.Endpoint).NotTo(BeNil())
	}, 90*time.Second, 200*time.Millisecond).Should(Succeed(), "see %s", logFile)
	g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(outside), outside)).To(Succeed())
	// A namespaced operator leaves other namespaces' Challenges alone: no
	// finalizer, no status but the CRD's defaults.
	g.Expect(outside.Finalizers).To(BeEmpty())
	g.Expect(outside.Status.Conditions).To(BeEmpty())
	g.Expect(outside.Status.ObservedGeneration).To(BeZero())

	var pods corev1.PodList
	instance := client.MatchingLabels{"ctf.challenge-operator.io/instance": "web"}
	g.Expect(cl.List(ctx, &pods, client.InNamespace(ns), instance)).To(Succeed())
	g.Expect(pods.Items).NotTo(BeEmpty(), "the instance runs in the operator's namespace, admitted as restricted")

	g.Expect(cl.Delete(ctx, inside)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(cl.Get(ctx, client.ObjectKeyFromObject(inside), &ctfv1alpha1.Challenge{}))
	}, 60*time.Second, 200*time.Millisecond).Should(BeTrue(), "the Challenge goes, its finalizer removed")
	g.Eventually(func(g Gomega) {
		g.Expect(cl.List(ctx, &pods, client.InNamespace(ns), instance)).To(Succeed())
		g.Expect(pods.Items).To(BeEmpty())
	}, 60*time.Second, 200*time.Millisecond).Should(Succeed(), "the instance's pods go")

	data, err := os.ReadFile(logFile)
	g.Expect(err).NotTo(HaveOccurred())
	for _, line := range strings.Split(string(data), "\n") {
		g.Expect(line).NotTo(ContainSubstring("forbidden"), "the chart's rights are enough")
	}
}
