package olminstall

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/operator-framework/api/crds"
	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/test/controlplane"
)

const operatorNamespace = "challenge-operator"

// TestOLMInstallsTheBundle runs OLM's olm operator against the local control
// plane, hands it the bundle's CRDs and ClusterServiceVersion under an
// OperatorGroup, and waits for OLM to report the CSV Succeeded (its Deployment
// becomes Available on the KWOK node). A Challenge is then accepted by the
// CRD OLM installed.
func TestOLMInstallsTheBundle(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	cluster, err := controlplane.Start(ctx, controlplane.Options{CRDs: []*apiextensionsv1.CustomResourceDefinition{
		crds.ClusterServiceVersion(), crds.OperatorGroup(), crds.Subscription(), crds.InstallPlan(),
		crds.CatalogSource(), crds.OperatorCondition(), crds.Operator(), crds.OLMConfig(),
	}})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(cluster.Stop)
	t.Logf("logs in %s", cluster.LogDir)

	scheme := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	g.Expect(apiextensionsv1.AddToScheme(scheme)).To(Succeed())
	g.Expect(operatorsv1alpha1.AddToScheme(scheme)).To(Succeed())
	g.Expect(operatorsv1.AddToScheme(scheme)).To(Succeed())
	g.Expect(ctfv1alpha1.AddToScheme(scheme)).To(Succeed())
	k8s, err := client.New(cluster.Config, client.Options{Scheme: scheme})
	g.Expect(err).NotTo(HaveOccurred())

	for _, ns := range []string{"olm", operatorNamespace} {
		g.Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
	g.Expect(cluster.StartBinary("olm", "--namespace=olm", "--writeStatusName=", "--writePackageServerStatusName=")).To(Succeed())

	g.Expect(k8s.Create(ctx, &operatorsv1.OperatorGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "challenge-operator", Namespace: operatorNamespace},
		Spec:       operatorsv1.OperatorGroupSpec{TargetNamespaces: []string{operatorNamespace}},
	})).To(Succeed())

	manifests := filepath.Join(controlplane.RepoRoot(), "bundle", "manifests")
	entries, err := os.ReadDir(manifests)
	g.Expect(err).NotTo(HaveOccurred())
	var csv *operatorsv1alpha1.ClusterServiceVersion
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(manifests, e.Name()))
		g.Expect(err).NotTo(HaveOccurred())
		switch {
		case strings.HasSuffix(e.Name(), ".clusterserviceversion.yaml"):
			csv = &operatorsv1alpha1.ClusterServiceVersion{}
			g.Expect(yaml.Unmarshal(data, csv)).To(Succeed())
		default:
			// CRDs, the metrics Service and the ClusterRoles for others to
			// bind (metrics-reader, platform), created as catalog-operator
			// would: namespaced ones in the install's namespace.
			obj := &unstructured.Unstructured{}
			g.Expect(yaml.Unmarshal(data, &obj.Object)).To(Succeed())
			if obj.GetKind() == "Service" {
				obj.SetNamespace(operatorNamespace)
			}
			g.Expect(k8s.Create(ctx, obj)).To(Succeed(), e.Name())
		}
	}
	g.Expect(csv).NotTo(BeNil())
	csv.Namespace = operatorNamespace
	for _, obj := range permissionsOf(csv) {
		g.Expect(k8s.Create(ctx, obj)).To(Succeed(), "%T %s", obj, obj.GetName())
	}
	g.Expect(k8s.Create(ctx, csv)).To(Succeed())

	g.Eventually(func(g Gomega) {
		got := &operatorsv1alpha1.ClusterServiceVersion{}
		g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(csv), got)).To(Succeed())
		g.Expect(got.Status.Phase).To(Equal(operatorsv1alpha1.CSVPhaseSucceeded), "%s: %s; unmet: %v",
			got.Status.Reason, got.Status.Message, unmet(got.Status.RequirementStatus))
	}, 90*time.Second, 200*time.Millisecond).Should(Succeed())

	dep := &appsv1.Deployment{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: "challenge-operator-controller-manager"}, dep)).To(Succeed())
	g.Expect(dep.Status.AvailableReplicas).To(Equal(int32(1)))
	g.Expect(dep.Spec.Template.Spec.Containers[0].Image).To(Equal("ghcr.io/challenge-operator/challenge-operator:v0.1.0"))
	metrics := &corev1.Service{}
	g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: "challenge-operator-controller-manager-metrics-service"}, metrics)).To(Succeed())
	g.Expect(labels.SelectorFromSet(metrics.Spec.Selector).Matches(labels.Set(dep.Spec.Template.Labels))).To(BeTrue(), "the metrics Service selects the operator's pods")

	ch := &ctfv1alpha1.Challenge{
		ObjectMeta: metav1.ObjectMeta{Name: "web-team-1", Namespace: operatorNamespace},
		Spec: ctfv1alpha1.ChallengeSpec{Participant: "team-1", Image: "registry.example/web:1",
			Ports: []ctfv1alpha1.ChallengePort{{Name: "http", Port: 8080}}},
	}
	g.Expect(k8s.Create(ctx, ch)).To(Succeed(), "the CRD OLM installed accepts a Challenge")
	g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(ch), ch)).To(Succeed())
	g.Expect(ch.Status.Phase).To(Equal(ctfv1alpha1.PhaseNone))
}

// permissionsOf returns the ServiceAccount and RBAC objects the CSV asks for.
// Without catalog-operator (which would create them from an InstallPlan) the
// test creates them, exactly as the CSV states them; OLM then verifies them.
func permissionsOf(csv *operatorsv1alpha1.ClusterServiceVersion) []client.Object {
	spec := csv.Spec.InstallStrategy.StrategySpec
	var out []client.Object
	accounts := map[string]bool{}
	account := func(name string) {
		if !accounts[name] {
			accounts[name] = true
			out = append(out, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: operatorNamespace}})
		}
	}
	for i, p := range spec.Permissions {
		account(p.ServiceAccountName)
		name := fmt.Sprintf("%s-%d", csv.Name, i)
		subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: p.ServiceAccountName, Namespace: operatorNamespace}}
		out = append(out,
			&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: operatorNamespace}, Rules: p.Rules},
			&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: operatorNamespace}, Subjects: subject,
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}})
	}
	for i, p := range spec.ClusterPermissions {
		account(p.ServiceAccountName)
		name := fmt.Sprintf("%s-cluster-%d", csv.Name, i)
		subject := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: p.ServiceAccountName, Namespace: operatorNamespace}}
		out = append(out,
			&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: p.Rules},
			&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, Subjects: subject,
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}})
	}
	return out
}

// unmet lists the CSV requirements OLM did not find, for a failure message.
func unmet(reqs []operatorsv1alpha1.RequirementStatus) []string {
	var out []string
	for _, r := range reqs {
		if r.Status != operatorsv1alpha1.RequirementStatusReasonPresent {
			out = append(out, fmt.Sprintf("%s %s: %s %s", r.Kind, r.Name, r.Status, r.Message))
			for _, d := range r.Dependents {
				if d.Status != operatorsv1alpha1.DependentStatusReasonSatisfied {
					out = append(out, fmt.Sprintf("  %s %s", d.Status, d.Message))
				}
			}
		}
	}
	return out
}
