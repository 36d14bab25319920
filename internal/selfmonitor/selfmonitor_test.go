package selfmonitor

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/challenge-operator/challenge-operator/internal/manifests"
	"github.com/challenge-operator/challenge-operator/test/controlplane"
)

var root = controlplane.RepoRoot()

// The embedded files are config/prometheus' (make manifests copies them).
func TestEmbeddedFilesAreConfigPrometheus(t *testing.T) {
	g := NewWithT(t)
	for name, embedded := range map[string][]byte{"monitor.yaml": monitorYAML, "rules.yaml": rulesYAML} {
		data, err := os.ReadFile(filepath.Join(root, "config", "prometheus", name))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(bytes.Equal(data, embedded)).To(BeTrue(), "internal/selfmonitor/%s is stale: run make manifests", name)
	}
	objs, err := Objects()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs).To(HaveLen(2))
	g.Expect(objs[0].GetName()).To(Equal("challenge-operator-controller-manager-metrics-monitor"))
	g.Expect(objs[1].GetName()).To(Equal("challenge-operator-alerts"))
}

// kustomized builds config/<dir> as kubectl apply -k would.
func kustomized(g Gomega, dir string) []*unstructured.Unstructured {
	objs, err := manifests.Kustomize(filepath.Join(root, "config", dir))
	g.Expect(err).NotTo(HaveOccurred())
	return objs
}

func monitoringObject(kind, namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: kind})
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

// TestMonitorsComeWithThePrometheusOperatorAndGoWithTheInstall runs Apply
// as the operator's ServiceAccount holding config/self-monitoring's Role
// alone, on a control plane whose garbage collector runs.
func TestMonitorsComeWithThePrometheusOperatorAndGoWithTheInstall(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cluster, admin := controlplane.StartForTest(t, controlplane.Options{})

	// The operator's namespace, ServiceAccount and Role as the bundle makes them.
	const ns, account = "challenge-operator-system", "challenge-operator-controller-manager"
	g.Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	g.Expect(admin.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: account, Namespace: ns}})).To(Succeed())
	// Built within config/manifests, the bundle's input, which names the
	// ServiceAccount the binding's subject refers to.
	var rights []*unstructured.Unstructured
	for _, o := range kustomized(g, "manifests") {
		if strings.Contains(o.GetName(), "self-monitoring") {
			rights = append(rights, o)
		}
	}
	g.Expect(rights).To(HaveLen(2))
	for _, o := range rights {
		g.Expect(o.GetKind()).To(BeElementOf("Role", "RoleBinding"), "config/self-monitoring grants nothing cluster-wide")
		g.Expect(admin.Create(ctx, o)).To(Succeed())
	}
	var binding rbacv1.RoleBinding
	g.Expect(admin.Get(ctx, client.ObjectKey{Namespace: ns, Name: "challenge-operator-self-monitoring-rolebinding"}, &binding)).To(Succeed())
	g.Expect(binding.Subjects).To(ConsistOf(HaveField("Name", account)))

	asOperator := rest.CopyConfig(cluster.Config)
	asOperator.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":" + account}
	operatorClient, err := client.New(asOperator, client.Options{Scheme: admin.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	dc, err := discovery.NewDiscoveryClientForConfig(asOperator)
	g.Expect(err).NotTo(HaveOccurred())
	m := &Monitors{Namespace: ns, Client: operatorClient, Reader: operatorClient, Discovery: dc}

	// No metrics Service yet, and no Prometheus Operator: nothing, quietly.
	applied, err := m.Apply(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(applied).To(BeEmpty())

	// The metrics Service of config/manager, still without the Prometheus Operator.
	service := metricsService(g)
	g.Expect(admin.Create(ctx, service)).To(Succeed())
	applied, err = m.Apply(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(applied).To(BeEmpty(), "nothing while the cluster does not serve the kinds")

	// The Prometheus Operator arrives.
	_, err = envtest.InstallCRDs(cluster.Config, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{
		controlplane.StubCRD("monitoring.coreos.com", "ServiceMonitor", "servicemonitors"),
		controlplane.StubCRD("monitoring.coreos.com", "PrometheusRule", "prometheusrules"),
	}})
	g.Expect(err).NotTo(HaveOccurred())
	applied, err = m.Apply(ctx)
	g.Expect(err).NotTo(HaveOccurred(), "the Role is enough")
	g.Expect(applied).To(ConsistOf("ServiceMonitor", "PrometheusRule"))

	monitor := monitoringObject("ServiceMonitor", ns, "challenge-operator-controller-manager-metrics-monitor")
	g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(monitor), monitor)).To(Succeed())
	selector, _, _ := unstructured.NestedStringMap(monitor.Object, "spec", "selector", "matchLabels")
	g.Expect(selector).NotTo(BeEmpty())
	for k, v := range selector {
		g.Expect(service.Labels).To(HaveKeyWithValue(k, v), "the ServiceMonitor selects the metrics Service")
	}
	g.Expect(monitor.GetOwnerReferences()).To(ConsistOf(And(HaveField("Kind", "Service"), HaveField("UID", service.UID))))

	rule := monitoringObject("PrometheusRule", ns, "challenge-operator-alerts")
	g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(rule), rule)).To(Succeed())
	data, err := os.ReadFile(filepath.Join(root, "config", "prometheus", "rules.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var want unstructured.Unstructured
	g.Expect(yaml.Unmarshal(data, &want.Object)).To(Succeed())
	g.Expect(rule.Object["spec"]).To(Equal(want.Object["spec"]), "the alerts of config/prometheus")

	// Someone empties the alerts: the next round puts them back.
	g.Expect(unstructured.SetNestedSlice(rule.Object, []any{}, "spec", "groups")).To(Succeed())
	g.Expect(admin.Update(ctx, rule)).To(Succeed())
	_, err = m.Apply(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(rule), rule)).To(Succeed())
	g.Expect(rule.Object["spec"]).To(Equal(want.Object["spec"]))

	// The install goes (OLM deletes the metrics Service with the CSV): so do they.
	g.Expect(admin.Delete(ctx, service)).To(Succeed())
	for _, o := range []*unstructured.Unstructured{monitor, rule} {
		g.Eventually(func() bool {
			return apierrors.IsNotFound(admin.Get(ctx, client.ObjectKeyFromObject(o), o.DeepCopy()))
		}, 30*time.Second, 100*time.Millisecond).Should(BeTrue(), "%s %s goes with its Service", o.GetKind(), o.GetName())
	}
	applied, err = m.Apply(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(applied).To(BeEmpty(), "nothing without a metrics Service to own them")
}

// metricsService is config/default's metrics Service.
func metricsService(g Gomega) *corev1.Service {
	for _, o := range kustomized(g, "default") {
		if o.GetKind() == "Service" {
			service := &corev1.Service{}
			g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, service)).To(Succeed())
			return service
		}
	}
	g.Expect("config/default's metrics Service").To(BeEmpty())
	return nil
}

// TestMonitorsFollowSoonAfterTheirKindsAndService runs Start as the manager
// does: the Prometheus Operator and the metrics Service arriving after the
// operator has started bring the monitors within seconds, not at the next
// Interval, and another operator's metrics Service in a shared namespace
// owns nothing of ours.
func TestMonitorsFollowSoonAfterTheirKindsAndService(t *testing.T) {
	g := NewWithT(t)
	cfg, admin := controlplane.StartAPIServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const ns = "operators"
	g.Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	m := &Monitors{Namespace: ns, Client: admin, Reader: admin, Discovery: dc}
	stopped := make(chan error)
	go func() { stopped <- m.Start(ctx) }()

	// Another operator's metrics Service, labelled as kubebuilder scaffolds
	// every operator's, sorts first.
	other := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "another-operator-metrics-service", Namespace: ns,
		Labels: map[string]string{"control-plane": "controller-manager", "app.kubernetes.io/name": "another-operator", "app.kubernetes.io/component": "metrics"}},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 8443}}}}
	g.Expect(admin.Create(ctx, other)).To(Succeed())
	_, err = envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{
		controlplane.StubCRD("monitoring.coreos.com", "ServiceMonitor", "servicemonitors"),
		controlplane.StubCRD("monitoring.coreos.com", "PrometheusRule", "prometheusrules"),
	}})
	g.Expect(err).NotTo(HaveOccurred())
	service := metricsService(g)
	service.Namespace = ns
	g.Expect(admin.Create(ctx, service)).To(Succeed())

	monitor := monitoringObject("ServiceMonitor", ns, "challenge-operator-controller-manager-metrics-monitor")
	g.Eventually(func() error {
		return admin.Get(ctx, client.ObjectKeyFromObject(monitor), monitor)
	}, 30*time.Second, 100*time.Millisecond).Should(Succeed(), "the monitor follows within seconds, not at the next %s", Interval)
	g.Expect(monitor.GetOwnerReferences()).To(ConsistOf(HaveField("UID", service.UID)), "ours owns it, not %s", other.Name)
	selector, _, _ := unstructured.NestedStringMap(monitor.Object, "spec", "selector", "matchLabels")
	g.Expect(selector).To(HaveKeyWithValue("app.kubernetes.io/name", "challenge-operator"), "it scrapes ours alone")
	cancel()
	g.Eventually(stopped).Should(Receive(BeNil()))
}

// TestOneRefusedObjectKeepsNothingElseBack: a policy refusing the
// ServiceMonitor (here a ValidatingAdmissionPolicy against
// insecureSkipVerify, as Kyverno or Gatekeeper rules do) still lets the
// alerts in, and the error names what was refused.
func TestOneRefusedObjectKeepsNothingElseBack(t *testing.T) {
	g := NewWithT(t)
	cfg, admin := controlplane.StartAPIServer(t)
	ctx := context.Background()
	const ns = "challenge-operator-system"
	g.Expect(admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	_, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: []*apiextensionsv1.CustomResourceDefinition{
		controlplane.StubCRD("monitoring.coreos.com", "ServiceMonitor", "servicemonitors"),
		controlplane.StubCRD("monitoring.coreos.com", "PrometheusRule", "prometheusrules"),
	}})
	g.Expect(err).NotTo(HaveOccurred())
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "verified-tls"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{"monitoring.coreos.com"}, APIVersions: []string{"v1"},
						Resources: []string{"servicemonitors"}}}}}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: "!has(object.spec.endpoints) || object.spec.endpoints.all(e, !has(e.tlsConfig) || !has(e.tlsConfig.insecureSkipVerify) || !e.tlsConfig.insecureSkipVerify)",
				Message:    "scrapes must verify TLS"}}}}
	g.Expect(admin.Create(ctx, policy)).To(Succeed())
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "verified-tls"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}}}
	g.Expect(admin.Create(ctx, binding)).To(Succeed())
	service := metricsService(g)
	g.Expect(admin.Create(ctx, service)).To(Succeed())
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	m := &Monitors{Namespace: ns, Client: admin, Reader: admin, Discovery: dc}

	// The policy takes effect once the API server has loaded it.
	g.Eventually(func(g Gomega) {
		applied, err := m.Apply(ctx)
		g.Expect(err).To(MatchError(And(ContainSubstring("ServiceMonitor challenge-operator-controller-manager-metrics-monitor"),
			ContainSubstring("scrapes must verify TLS"))))
		g.Expect(applied).To(ConsistOf("PrometheusRule"))
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	rule := monitoringObject("PrometheusRule", ns, "challenge-operator-alerts")
	g.Expect(admin.Get(ctx, client.ObjectKeyFromObject(rule), rule)).To(Succeed())
}
