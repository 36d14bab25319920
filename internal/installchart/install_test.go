package installchart

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/challenge-operator/challenge-operator/test/builders"
	"github.com/challenge-operator/challenge-operator/test/controlplane"
)

// helmFor is the Helm SDK's configuration for releases in namespace.
func helmFor(t *testing.T, c *controlplane.Cluster, namespace string) *action.Configuration {
	t.Helper()
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig, flags.Namespace = &c.Kubeconfig, &namespace
	cfg := new(action.Configuration)
	if err := cfg.Init(flags, namespace, "secret", t.Logf); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// released are the kinds a release of the chart may create, to find what is
// left of it by its instance label.
var released = []schema.GroupVersionKind{
	{Group: "apps", Version: "v1", Kind: "Deployment"},
	{Version: "v1", Kind: "Service"},
	{Version: "v1", Kind: "ServiceAccount"},
	{Version: "v1", Kind: "ConfigMap"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"},
	{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingWebhookConfiguration"},
	{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"},
	{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitor"},
	{Group: "monitoring.coreos.com", Version: "v1", Kind: "PrometheusRule"},
	{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"},
	{Group: "cert-manager.io", Version: "v1", Kind: "Issuer"},
	{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"},
}

// leftOf lists every object labelled as release's, by kind/namespace/name.
func leftOf(ctx context.Context, g Gomega, cl client.Client, release string) []string {
	var out []string
	for _, gvk := range released {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		g.Expect(cl.List(ctx, list, client.MatchingLabels{"app.kubernetes.io/instance": release})).To(Succeed())
		for _, o := range list.Items {
			out = append(out, gvk.Kind+"/"+o.GetNamespace()+"/"+o.GetName())
		}
	}
	return out
}

// available waits for the Deployment to have all its replicas available, and
// each of services to have a ready endpoint: the pods were admitted under the
// namespace's Pod Security and the Services select them.
func available(ctx context.Context, g Gomega, cl client.Client, namespace, deployment string, services ...string) {
	g.Eventually(func(g Gomega) {
		var d appsv1.Deployment
		g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: namespace, Name: deployment}, &d)).To(Succeed())
		g.Expect(d.Status.AvailableReplicas).To(Equal(*d.Spec.Replicas), "%s available", deployment)
		g.Expect(d.Status.AvailableReplicas).To(BeNumerically(">", 0))
	}, 60*time.Second, 200*time.Millisecond).Should(Succeed())
	for _, svc := range services {
		g.Eventually(func(g Gomega) {
			var slices discoveryv1.EndpointSliceList
			g.Expect(cl.List(ctx, &slices, client.InNamespace(namespace), client.MatchingLabels{discoveryv1.LabelServiceName: svc})).To(Succeed())
			ready := 0
			for _, s := range slices.Items {
				for _, e := range s.Endpoints {
					if e.Conditions.Ready != nil && *e.Conditions.Ready {
						ready++
					}
				}
			}
			g.Expect(ready).To(BeNumerically(">", 0), "Service %s selects a ready pod", svc)
		}, 60*time.Second, 200*time.Millisecond).Should(Succeed())
	}
}

// restrictedNamespace creates a namespace enforcing Pod Security "restricted",
// as docs/operations.md tells operators to install into.
func restrictedNamespace(ctx context.Context, g Gomega, cl client.Client, name string) {
	g.Expect(cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name,
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}})).To(Succeed())
}

// withUpgradedCRD is the chart as a later release would ship it: the
// Challenge CRD gains a printer column.
func withUpgradedCRD(g Gomega, c *chart.Chart) *chart.Chart {
	for _, tpl := range c.Templates {
		if strings.HasSuffix(tpl.Name, "crd/ctf.challenge-operator.io_challenges.yaml") {
			before := string(tpl.Data)
			tpl.Data = []byte(strings.Replace(before, "  - additionalPrinterColumns:\n",
				"  - additionalPrinterColumns:\n    - jsonPath: .metadata.uid\n      name: UID\n      priority: 1\n      type: string\n", 1))
			g.Expect(tpl.Data).NotTo(BeEquivalentTo(before), "the CRD's printer columns moved")
			return c
		}
	}
	g.Expect("the Challenge CRD's template").To(BeEmpty())
	return nil
}

func TestChartInstallsUpgradesAndUninstalls(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cluster, cl := controlplane.StartForTest(t, controlplane.Options{CRDs: []*apiextensionsv1.CustomResourceDefinition{
		controlplane.StubCRD("monitoring.coreos.com", "ServiceMonitor", "servicemonitors"),
		controlplane.StubCRD("monitoring.coreos.com", "PrometheusRule", "prometheusrules"),
		controlplane.StubCRD("cert-manager.io", "Certificate", "certificates"),
		controlplane.StubCRD("cert-manager.io", "Issuer", "issuers"),
	}})

	// A cluster-wide install with the defaults: the CRDs come with it.
	const ns, release = "ctf-system", "ctf"
	restrictedNamespace(ctx, g, cl, ns)
	helm := helmFor(t, cluster, ns)
	install := action.NewInstall(helm)
	install.ReleaseName, install.Namespace = release, ns
	_, err := install.Run(loadChart(t), nil)
	g.Expect(err).NotTo(HaveOccurred(), "helm install with the defaults")
	available(ctx, g, cl, ns, "challenge-operator-controller-manager", "challenge-operator-controller-manager-metrics-service")
	for _, name := range []string{"challenges.ctf.challenge-operator.io", "challengetemplates.ctf.challenge-operator.io"} {
		g.Eventually(func(g Gomega) {
			var crd apiextensionsv1.CustomResourceDefinition
			g.Expect(cl.Get(ctx, client.ObjectKey{Name: name}, &crd)).To(Succeed())
			g.Expect(crd.Status.Conditions).To(ContainElement(And(
				HaveField("Type", apiextensionsv1.Established), HaveField("Status", apiextensionsv1.ConditionTrue))))
		}, 30*time.Second, 100*time.Millisecond).Should(Succeed())
	}
	challenge := builders.FromTemplate("default", "web-team1", "team1", "web")
	g.Expect(cl.Create(ctx, challenge)).To(Succeed())

	// An upgrade switching every optional part on, with a newer CRD: Helm
	// applies it (CRDs in crds/ would never be upgraded).
	upgrade := action.NewUpgrade(helm)
	upgrade.Namespace = ns
	vals := everything("namespacePerInstance")
	_, err = upgrade.Run(release, withUpgradedCRD(g, loadChart(t)), vals)
	g.Expect(err).NotTo(HaveOccurred(), "helm upgrade to every part")
	var crd apiextensionsv1.CustomResourceDefinition
	g.Expect(cl.Get(ctx, client.ObjectKey{Name: "challenges.ctf.challenge-operator.io"}, &crd)).To(Succeed())
	g.Expect(crd.Spec.Versions[0].AdditionalPrinterColumns).To(ContainElement(HaveField("Name", "UID")), "the upgrade applied the new CRD")
	available(ctx, g, cl, ns, "challenge-operator-controller-manager", "challenge-operator-controller-manager-metrics-service", "challenge-operator-webhook-service")
	available(ctx, g, cl, ns, "challenge-operator-instancer", "challenge-operator-instancer", "challenge-operator-instancer-metrics-service")
	var manager appsv1.Deployment
	g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "challenge-operator-controller-manager"}, &manager)).To(Succeed())
	g.Expect(manager.Spec.Template.Spec.Containers[0].Args).To(ContainElements("--namespace-per-instance", "--enable-webhook"))
	left := leftOf(ctx, g, cl, release)
	for _, want := range []string{
		"ClusterRole//challenge-operator-namespace-per-instance-role",
		"ValidatingWebhookConfiguration//challenge-operator-validating-webhook-configuration",
		"Certificate/" + ns + "/challenge-operator-serving-cert",
		"Issuer/" + ns + "/challenge-operator-selfsigned-issuer",
		"ServiceMonitor/" + ns + "/challenge-operator-controller-manager-metrics-monitor",
		"ServiceMonitor/" + ns + "/challenge-operator-instancer-metrics-monitor",
		"PrometheusRule/" + ns + "/challenge-operator-alerts",
		"ConfigMap/" + ns + "/challenge-operator-dashboard",
		"NetworkPolicy/" + ns + "/challenge-operator-controller-manager",
		"NetworkPolicy/" + ns + "/challenge-operator-instancer",
	} {
		g.Expect(left).To(ContainElement(want))
	}
	// The alerts arrive as written, Prometheus' own templates untouched by Helm's.
	rule := &unstructured.Unstructured{}
	rule.SetGroupVersionKind(schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "PrometheusRule"})
	g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "challenge-operator-alerts"}, rule)).To(Succeed())
	data, err := os.ReadFile(filepath.Join(root, "config", "prometheus", "rules.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var want unstructured.Unstructured
	g.Expect(yaml.Unmarshal(data, &want.Object)).To(Succeed())
	g.Expect(rule.Object["spec"]).To(Equal(want.Object["spec"]), "the alerts of config/prometheus")
	g.Expect(data).To(ContainSubstring("{{ $labels"), "which hold Prometheus' own templates")

	// Uninstall: everything of the release is gone but the kept CRDs, and
	// with them the Challenges.
	_, err = action.NewUninstall(helm).Run(release)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		g.Expect(leftOf(ctx, g, cl, release)).To(ConsistOf(
			"CustomResourceDefinition//challenges.ctf.challenge-operator.io",
			"CustomResourceDefinition//challengetemplates.ctf.challenge-operator.io"))
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(challenge), challenge)).To(Succeed(), "the Challenge outlives the uninstall")

	// A namespaced install beside the kept CRDs (crd.enable false), with a
	// provided webhook certificate and NetworkPolicies.
	const ns2, release2 = "ctf-team-infra", "ctf-namespaced"
	restrictedNamespace(ctx, g, cl, ns2)
	ca := base64.StdEncoding.EncodeToString([]byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"))
	g.Expect(cl.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "webhook-tls", Namespace: ns2}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": []byte("crt"), "tls.key": []byte("key")}})).To(Succeed())
	helm2 := helmFor(t, cluster, ns2)
	install2 := action.NewInstall(helm2)
	install2.ReleaseName, install2.Namespace = release2, ns2
	_, err = install2.Run(loadChart(t), map[string]any{
		"installMode":   "namespaced",
		"nameOverride":  "ctf-infra",
		"crd":           map[string]any{"enable": false, "keep": true},
		"webhook":       map[string]any{"enable": true, "certificate": map[string]any{"source": "secret", "secretName": "webhook-tls", "caBundle": ca}},
		"networkPolicy": map[string]any{"enable": true},
	})
	g.Expect(err).NotTo(HaveOccurred(), "helm install, namespaced")
	available(ctx, g, cl, ns2, "ctf-infra-controller-manager", "ctf-infra-controller-manager-metrics-service", "ctf-infra-webhook-service")
	left = leftOf(ctx, g, cl, release2)
	g.Expect(left).To(ContainElements("Role/"+ns2+"/ctf-infra-manager-role", "ClusterRole//ctf-infra-manager-cluster-role"))
	g.Expect(left).NotTo(ContainElement("ClusterRole//ctf-infra-manager-role"), "a namespaced install holds no cluster-wide manager role")
	for _, l := range left {
		g.Expect(l).NotTo(HavePrefix("CustomResourceDefinition/"))
	}
	_, err = action.NewUninstall(helm2).Run(release2)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func(g Gomega) {
		g.Expect(leftOf(ctx, g, cl, release2)).To(BeEmpty())
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	err = cl.Get(ctx, client.ObjectKey{Name: "challenges.ctf.challenge-operator.io"}, &crd)
	g.Expect(apierrors.IsNotFound(err)).To(BeFalse(), "the namespaced release never owned the CRDs")
}
