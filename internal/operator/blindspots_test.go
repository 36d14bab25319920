package operator_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/manifests"
	"github.com/challenge-operator/challenge-operator/internal/operator"
	"github.com/challenge-operator/challenge-operator/internal/policy"
	"github.com/challenge-operator/challenge-operator/internal/values"
	"github.com/challenge-operator/challenge-operator/test/builders"
)

// blindSpot is a change to what the chart renders that the API server itself
// admits (in a namespace enforcing the restricted Pod Security Standard) and
// the gate must refuse under rule.
type blindSpot struct {
	name   string
	own    bool // a namespace per instance
	lb     bool // LoadBalancer Services allowed
	kind   string
	mutate func(obj map[string]any)
	rule   string
}

func podSpecOf(obj map[string]any) map[string]any {
	spec, _, _ := unstructured.NestedMap(obj, "spec", "template", "spec")
	return spec
}

func setPod(obj map[string]any, f func(spec map[string]any)) {
	spec := podSpecOf(obj)
	f(spec)
	_ = unstructured.SetNestedMap(obj, spec, "spec", "template", "spec")
}

func setPodSecurity(key string, v any) func(map[string]any) {
	return func(obj map[string]any) {
		setPod(obj, func(spec map[string]any) { spec["securityContext"].(map[string]any)[key] = v })
	}
}

var blindSpots = []blindSpot{
	{name: "a Localhost seccomp profile", kind: "Deployment", rule: "security-profile",
		mutate: setPodSecurity("seccompProfile", map[string]any{"type": "Localhost", "localhostProfile": "profiles/permissive.json"})},
	{name: "a Localhost AppArmor profile on the container", kind: "Deployment", rule: "security-profile", mutate: func(obj map[string]any) {
		setPod(obj, func(spec map[string]any) {
			ctr := spec["containers"].([]any)[0].(map[string]any)
			ctr["securityContext"].(map[string]any)["appArmorProfile"] = map[string]any{"type": "Localhost", "localhostProfile": "permissive"}
		})
	}},
	{name: "runAsGroup 0", kind: "Deployment", rule: "root-group", mutate: setPodSecurity("runAsGroup", int64(0))},
	{name: "fsGroup 0", kind: "Deployment", rule: "root-group", mutate: setPodSecurity("fsGroup", int64(0))},
	{name: "supplemental group 0", kind: "Deployment", rule: "root-group", mutate: setPodSecurity("supplementalGroups", []any{int64(0)})},
	{name: "an hour of termination grace", kind: "Deployment", rule: "termination-grace", mutate: func(obj map[string]any) {
		setPod(obj, func(spec map[string]any) { spec["terminationGracePeriodSeconds"] = int64(3600) })
	}},
	{name: "a scheduling gate", kind: "Deployment", rule: "scheduling-gates", mutate: func(obj map[string]any) {
		setPod(obj, func(spec map[string]any) { spec["schedulingGates"] = []any{map[string]any{"name": "example.com/hold"}} })
	}},
	{name: "a headless Service", kind: "Service", rule: "service-cluster-ip", mutate: func(obj map[string]any) {
		_ = unstructured.SetNestedField(obj, "None", "spec", "clusterIP")
	}},
	{name: "loadBalancerSourceRanges", lb: true, kind: "Service", rule: "service-source-ranges", mutate: func(obj map[string]any) {
		_ = unstructured.SetNestedField(obj, "LoadBalancer", "spec", "type")
		_ = unstructured.SetNestedStringSlice(obj, []string{"10.0.0.0/8"}, "spec", "loadBalancerSourceRanges")
	}},
	{name: "a quota raised", own: true, kind: "ResourceQuota", rule: "resource-quota", mutate: func(obj map[string]any) {
		_ = unstructured.SetNestedField(obj, "1000", "spec", "hard", "pods")
	}},
	{name: "a default limit raised", own: true, kind: "LimitRange", rule: "limit-range", mutate: func(obj map[string]any) {
		limits, _, _ := unstructured.NestedSlice(obj, "spec", "limits")
		limits[0].(map[string]any)["default"].(map[string]any)["cpu"] = "64"
		_ = unstructured.SetNestedSlice(obj, limits, "spec", "limits")
	}},
	// Fields no rule read (the gate now judges an allowlist of them).
	{name: "topology spread constraints", kind: "Deployment", rule: "unjudged-field", mutate: func(obj map[string]any) {
		setPod(obj, func(spec map[string]any) {
			spec["topologySpreadConstraints"] = []any{map[string]any{"maxSkew": int64(1), "topologyKey": "kubernetes.io/hostname",
				"whenUnsatisfiable": "DoNotSchedule", "labelSelector": map[string]any{"matchLabels": map[string]any{"app": "x"}}}}
		})
	}},
	{name: "a subdomain", kind: "Deployment", rule: "bare-names", mutate: func(obj map[string]any) {
		setPod(obj, func(spec map[string]any) { spec["subdomain"] = "victim" })
	}},
	{name: "a readiness gate", kind: "Deployment", rule: "unjudged-field", mutate: func(obj map[string]any) {
		setPod(obj, func(spec map[string]any) {
			spec["readinessGates"] = []any{map[string]any{"conditionType": "example.com/ready"}}
		})
	}},
	{name: "a preemption policy", kind: "Deployment", rule: "unjudged-field", mutate: func(obj map[string]any) {
		setPod(obj, func(spec map[string]any) { spec["preemptionPolicy"] = "PreemptLowerPriority" })
	}},
	{name: "publishNotReadyAddresses", kind: "Service", rule: "service", mutate: func(obj map[string]any) {
		_ = unstructured.SetNestedField(obj, true, "spec", "publishNotReadyAddresses")
	}},
	{name: "an IP family policy", kind: "Service", rule: "unjudged-field", mutate: func(obj map[string]any) {
		_ = unstructured.SetNestedField(obj, "PreferDualStack", "spec", "ipFamilyPolicy")
	}},
	{name: "a load balancer class", lb: true, kind: "Service", rule: "unjudged-field", mutate: func(obj map[string]any) {
		_ = unstructured.SetNestedField(obj, "LoadBalancer", "spec", "type")
		_ = unstructured.SetNestedField(obj, "example.com/internal", "spec", "loadBalancerClass")
	}},
	{name: "a mesh annotation on the Namespace", own: true, kind: "Namespace", rule: "namespace-metadata", mutate: func(obj map[string]any) {
		_ = unstructured.SetNestedStringMap(obj, map[string]string{"linkerd.io/inject": "enabled"}, "metadata", "annotations")
	}},
}

// TestBlindSpotsTheAPIServerAdmits renders the chart as the operator does,
// changes one field, shows that the API server admits the result (server-side
// dry run; a Deployment's pod template as a Pod, which the restricted Pod
// Security Standard judges) and that the gate refuses it under its rule.
func TestBlindSpotsTheAPIServerAdmits(t *testing.T) {
	ns := namespace(t)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "blind", Namespace: ns}}
	NewWithT(t).Expect(k8s.Create(context.Background(), sa)).To(Succeed())
	tmpl := &ctfv1alpha1.ChallengeTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: ctfv1alpha1.ChallengeTemplateSpec{
			Image: "registry.example/ctf/web:1",
			Ports: []ctfv1alpha1.ChallengePort{{Name: "http", Port: 8080, Protocol: ctfv1alpha1.ProtocolTCP}},
		},
	}
	ch := builders.FromTemplate(ns, "blind", "team1", tmpl.Name)
	for _, tc := range blindSpots {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			opts := operator.Options{
				Values: values.Settings{NamespacePerInstance: tc.own, InternalCIDRs: internalCIDRs, IngressFromNamespaces: []string{ingressNamespace},
					IngressDomain: "ctf.example"},
				Limits: policy.Limits{AllowLoadBalancer: tc.lb},
			}
			manifest, in, err := operator.RenderForGate(ch, tmpl, opts)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(policy.Check(manifest, in)).To(Succeed(), "the chart as rendered passes")

			objs := decodeManifest(g, manifest)
			changed := findKind(g, objs, tc.kind)
			tc.mutate(changed.Object)
			var v *policy.Violation
			g.Expect(errors.As(policy.Check(encodeManifest(g, objs), in), &v)).To(BeTrue(), "the gate refuses it")
			g.Expect(v.Rule).To(Equal(tc.rule), v.Error())

			g.Expect(k8s.Create(context.Background(), admissible(changed, ns), client.DryRunAll)).To(Succeed(), "the API server admits it")
		})
	}
	t.Run("the API server's own check bites", func(t *testing.T) {
		g := NewWithT(t)
		manifest, _, err := operator.RenderForGate(ch, tmpl, operator.Options{Values: values.Settings{InternalCIDRs: internalCIDRs}})
		g.Expect(err).NotTo(HaveOccurred())
		deploy := findKind(g, decodeManifest(g, manifest), "Deployment")
		setPodSecurity("runAsNonRoot", false)(deploy.Object)
		err = k8s.Create(context.Background(), admissible(deploy, ns), client.DryRunAll)
		g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "restricted refuses runAsNonRoot: false; got %v", err)
	})
}

// admissible is what the API server is asked to admit for obj: a
// Deployment's pod template as a Pod, a namespaced object in ns.
func admissible(obj *unstructured.Unstructured, ns string) *unstructured.Unstructured {
	if obj.GetKind() == "Deployment" {
		tmpl, _, _ := unstructured.NestedMap(obj.Object, "spec", "template")
		pod := &unstructured.Unstructured{Object: tmpl}
		pod.SetAPIVersion("v1")
		pod.SetKind("Pod")
		pod.SetName(obj.GetName())
		pod.SetNamespace(ns)
		_ = unstructured.SetNestedField(pod.Object, "blind", "spec", "serviceAccountName")
		return pod
	}
	out := obj.DeepCopy()
	if out.GetKind() != "Namespace" {
		out.SetNamespace(ns)
	}
	return out
}

func decodeManifest(g Gomega, manifest []byte) []*unstructured.Unstructured {
	objs, err := manifests.Decode(bytes.NewReader(manifest))
	g.Expect(err).NotTo(HaveOccurred())
	return objs
}

func encodeManifest(g Gomega, objs []*unstructured.Unstructured) []byte {
	var b bytes.Buffer
	for _, u := range objs {
		data, err := yaml.Marshal(u.Object)
		g.Expect(err).NotTo(HaveOccurred())
		b.WriteString("---\n")
		b.Write(data)
	}
	return b.Bytes()
}

func findKind(g Gomega, objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	for _, u := range objs {
		if u.GetKind() == kind {
			return u
		}
	}
	g.Expect(kind).To(BeEmpty(), "the chart renders no %s", kind)
	return nil
}
