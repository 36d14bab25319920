package bundle

import (
	"path/filepath"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/challenge-operator/challenge-operator/internal/manifests"
)

// install is what `kubectl apply -k` of one install mode would create.
type install struct {
	objs    []*unstructured.Unstructured
	manager appsv1.Deployment
	// others are the Deployments beside the manager's, by name.
	others map[string]appsv1.Deployment
	scopes scopes
}

// managerName is the manager Deployment's name in every install mode.
const managerName = "challenge-operator-controller-manager"

// buildInstall builds the kustomization config/<mode> with the kustomize library.
func buildInstall(t *testing.T, mode string) install {
	g := NewWithT(t)
	objs, err := manifests.Kustomize(filepath.Join(root, "config", mode))
	g.Expect(err).NotTo(HaveOccurred(), "config/%s builds", mode)
	in := install{objs: objs, scopes: builtinScopes(), others: map[string]appsv1.Deployment{}}
	managers := 0
	for _, o := range objs {
		switch o.GetKind() {
		case "Deployment":
			var d appsv1.Deployment
			g.Expect(convert(o, &d)).To(Succeed())
			if d.Name != managerName {
				in.others[d.Name] = d
				continue
			}
			managers++
			in.manager = d
		case "CustomResourceDefinition":
			var crd apiextensionsv1.CustomResourceDefinition
			g.Expect(convert(o, &crd)).To(Succeed())
			in.scopes.addCRD(&crd)
		}
	}
	g.Expect(managers).To(Equal(1), "config/%s has one manager Deployment", mode)
	return in
}

// container returns the manager's container.
func (in install) container() corev1.Container { return containerNamed(in.manager, "manager") }

// containerNamed returns d's container called name.
func containerNamed(d appsv1.Deployment, name string) corev1.Container {
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == name {
			return c
		}
	}
	return corev1.Container{}
}

// watchNamespace returns where WATCH_NAMESPACE comes from: a field path of the pod.
func (in install) watchNamespace() string {
	for _, e := range in.container().Env {
		if e.Name == "WATCH_NAMESPACE" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			return e.ValueFrom.FieldRef.FieldPath
		}
	}
	return ""
}

// grants returns the rules bound to the manager's ServiceAccount, by where
// they apply: "" for cluster-wide (a ClusterRoleBinding), else the namespace
// of the RoleBinding. Every binding must refer to a role of the build.
func (in install) grants(g Gomega) map[string][]rbacv1.PolicyRule {
	return in.grantsTo(g, in.manager)
}

// grantsTo is grants for the ServiceAccount of Deployment d. Every binding
// binds one ServiceAccount of the build's Deployments, and nothing else.
func (in install) grantsTo(g Gomega, d appsv1.Deployment) map[string][]rbacv1.PolicyRule {
	roles := map[string][]rbacv1.PolicyRule{} // Kind/namespace/name -> rules
	for _, o := range in.objs {
		switch o.GetKind() {
		case "Role":
			var r rbacv1.Role
			g.Expect(convert(o, &r)).To(Succeed())
			roles["Role/"+r.Namespace+"/"+r.Name] = r.Rules
		case "ClusterRole":
			var r rbacv1.ClusterRole
			g.Expect(convert(o, &r)).To(Succeed())
			roles["ClusterRole//"+r.Name] = r.Rules
		}
	}
	accounts := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: in.manager.Spec.Template.Spec.ServiceAccountName, Namespace: in.manager.Namespace}}
	for _, other := range in.others {
		accounts = append(accounts, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: other.Spec.Template.Spec.ServiceAccountName, Namespace: other.Namespace})
	}
	account := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: d.Spec.Template.Spec.ServiceAccountName, Namespace: d.Namespace}
	out := map[string][]rbacv1.PolicyRule{}
	for _, o := range in.objs {
		if o.GetKind() != "RoleBinding" && o.GetKind() != "ClusterRoleBinding" {
			continue
		}
		var b rbacv1.RoleBinding // same shape as a ClusterRoleBinding
		g.Expect(convert(o, &b)).To(Succeed())
		g.Expect(b.Subjects).To(HaveLen(1), "%s %s binds one ServiceAccount", o.GetKind(), b.Name)
		g.Expect(b.Subjects).To(ContainElement(BeElementOf(accounts)), "%s %s binds a ServiceAccount of the build's Deployments", o.GetKind(), b.Name)
		if b.Subjects[0] != account {
			continue
		}
		key := b.RoleRef.Kind + "/" + b.Namespace + "/" + b.RoleRef.Name
		if b.RoleRef.Kind == "ClusterRole" {
			key = "ClusterRole//" + b.RoleRef.Name
		}
		rules, ok := roles[key]
		g.Expect(ok).To(BeTrue(), "%s %s refers to %s, which the build holds", o.GetKind(), b.Name, key)
		where := b.Namespace // a RoleBinding limits even a ClusterRole's rules to its namespace
		if o.GetKind() == "ClusterRoleBinding" {
			where = ""
		}
		out[where] = append(out[where], rules...)
	}
	return out
}

// resources returns the group/resources rules name.
func resources(rules []rbacv1.PolicyRule) []string {
	var out []string
	for _, rule := range rules {
		for _, group := range rule.APIGroups {
			for _, res := range rule.Resources {
				out = append(out, schema.GroupResource{Group: group, Resource: res}.String())
			}
		}
	}
	return uniqueSorted(out)
}

// TestInstallModesBuild builds each install mode with krusty and checks
// which rights the manager gets where.
func TestInstallModesBuild(t *testing.T) {
	rendered := uniqueSorted(append(renderedEveryExposure(t, withoutNamespacePerInstance()), "secrets"))
	clusterScoped := []string{"challengetemplates.ctf.challenge-operator.io",
		"challengetemplates/status.ctf.challenge-operator.io", "nodes",
		"subjectaccessreviews.authorization.k8s.io", "tokenreviews.authentication.k8s.io"} // the last two: metrics callers' reviews
	const ns = "challenge-operator-system"

	t.Run("default: all namespaces, no rights on Namespaces", func(t *testing.T) {
		g := NewWithT(t)
		in := buildInstall(t, "default")
		grants := in.grants(g)
		g.Expect(grants).To(HaveKey(""))
		g.Expect(grants).To(HaveKey(ns), "leader election")
		g.Expect(resources(grants[""])).To(ContainElements(rendered), "cluster-wide control of what the chart renders")
		g.Expect(resources(grants[""])).To(ContainElements(clusterScoped))
		g.Expect(resources(grants[""])).NotTo(ContainElement(BeElementOf(namespacePerInstanceKinds)))
		g.Expect(resources(grants[ns])).NotTo(ContainElement(BeElementOf(namespacePerInstanceKinds)))
		g.Expect(in.watchNamespace()).To(Equal("metadata.annotations['olm.targetNamespaces']"), "empty outside OLM: all namespaces")
		g.Expect(in.container().Args).NotTo(ContainElement("--namespace-per-instance"))
	})

	t.Run("namespaced: a Role in the manager's namespace, cluster-scoped reads only cluster-wide", func(t *testing.T) {
		g := NewWithT(t)
		in := buildInstall(t, "namespaced")
		grants := in.grants(g)
		g.Expect(grants).To(HaveLen(2))
		g.Expect(in.manager.Namespace).To(Equal(ns))
		g.Expect(resources(grants[ns])).To(ContainElements(rendered), "control of what the chart renders, in its own namespace")
		g.Expect(resources(grants[ns])).To(ContainElements("challenges.ctf.challenge-operator.io",
			"challenges/status.ctf.challenge-operator.io", "pods", "events", "leases.coordination.k8s.io"))
		g.Expect(resources(grants[""])).To(Equal(clusterScoped), "cluster-wide: what no Role can grant, nothing else")
		for _, rules := range grants {
			g.Expect(resources(rules)).NotTo(ContainElement(BeElementOf(namespacePerInstanceKinds)))
		}
		// A ClusterRole bound by nobody (the platform's) is for others to
		// bind in a namespace: only those bound cluster-wide must keep to
		// what no Role can grant.
		boundClusterWide := map[string]bool{}
		for _, o := range in.objs {
			if o.GetKind() == "ClusterRoleBinding" {
				var b rbacv1.ClusterRoleBinding
				g.Expect(convert(o, &b)).To(Succeed())
				boundClusterWide[b.RoleRef.Name] = true
			}
		}
		g.Expect(boundClusterWide).NotTo(BeEmpty())
		for _, o := range in.objs {
			if o.GetKind() == "ClusterRole" && boundClusterWide[o.GetName()] {
				var r rbacv1.ClusterRole
				g.Expect(convert(o, &r)).To(Succeed())
				namespaced, _, err := in.scopes.split(r.Rules)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(namespaced).To(BeEmpty(), "ClusterRole %s, bound cluster-wide, names no namespaced resource", r.Name)
			}
		}
		g.Expect(in.watchNamespace()).To(Equal("metadata.namespace"), "WATCH_NAMESPACE is the manager's own namespace")
		g.Expect(in.container().Args).NotTo(ContainElement("--namespace-per-instance"))
	})

	t.Run("namespace-per-instance: the flag and the rights it needs", func(t *testing.T) {
		g := NewWithT(t)
		in := buildInstall(t, "namespace-per-instance")
		grants := in.grants(g)
		g.Expect(resources(grants[""])).To(ContainElements(rendered))
		g.Expect(resources(grants[""])).To(ContainElements(namespacePerInstanceKinds), "cluster-wide: Namespaces, their quota and limits")
		managed, _ := classify(g, grants[""])
		for _, kind := range namespacePerInstanceKinds {
			g.Expect(managed).To(HaveKey(kind), "full control of %s", kind)
		}
		g.Expect(in.container().Args).To(ContainElement("--namespace-per-instance"))
		g.Expect(in.watchNamespace()).To(Equal("metadata.annotations['olm.targetNamespaces']"))
	})

	t.Run("instancer: its own Deployment and ServiceAccount, its own roles and nothing more", func(t *testing.T) {
		g := NewWithT(t)
		in := buildInstall(t, "instancer")
		base := buildInstall(t, "default")
		g.Expect(in.manager.Spec).To(Equal(base.manager.Spec), "the operator's Deployment is the default one: no instancer in it")
		g.Expect(in.grants(g)).To(Equal(base.grants(g)), "and its rights are the default ones")
		g.Expect(in.others).To(HaveKey("challenge-operator-instancer"))
		d := in.others["challenge-operator-instancer"]
		g.Expect(d.Namespace).To(Equal(ns))
		g.Expect(d.Spec.Replicas).To(HaveValue(BeNumerically(">=", 2)), "several replicas")
		g.Expect(d.Spec.Template.Spec.ServiceAccountName).To(Equal("challenge-operator-instancer"))
		c := containerNamed(d, "instancer")
		g.Expect(c.Image).To(Equal(in.container().Image), "the operator's image")
		g.Expect(c.Args).To(HaveExactElements("instancer", "--bind-address=:8443", "--key-dir=/etc/challenge-operator/instancer-keys",
			"--revocations-dir=/etc/challenge-operator/instancer-revocations", "--platform-key-dir=/etc/challenge-operator/platform-keys",
			"--metrics-bind-address=:8444", "--health-probe-bind-address=:8081"))
		g.Expect(c.VolumeMounts).To(ConsistOf(HaveField("MountPath", "/etc/challenge-operator/instancer-keys"),
			HaveField("MountPath", "/etc/challenge-operator/instancer-revocations"), HaveField("MountPath", "/etc/challenge-operator/platform-keys"),
			HaveField("MountPath", "/etc/challenge-operator/flag-key")),
			"its token keys (a Secret), revocations (a ConfigMap), the platform's keys and the flag key (Secrets), mounted")
		g.Expect(c.LivenessProbe).NotTo(BeNil())
		g.Expect(c.ReadinessProbe).NotTo(BeNil())
		g.Expect(c.Resources.Limits).To(HaveKey(corev1.ResourceCPU))
		g.Expect(c.Resources.Limits).To(HaveKey(corev1.ResourceMemory))
		pod := d.Spec.Template.Spec.SecurityContext
		g.Expect(pod.RunAsNonRoot).To(HaveValue(BeTrue()))
		g.Expect(pod.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault))
		g.Expect(c.SecurityContext.AllowPrivilegeEscalation).To(HaveValue(BeFalse()))
		g.Expect(c.SecurityContext.ReadOnlyRootFilesystem).To(HaveValue(BeTrue()))
		g.Expect(c.SecurityContext.Capabilities.Drop).To(ConsistOf(corev1.Capability("ALL")))

		grants := in.grantsTo(g, d)
		g.Expect(grants).To(HaveLen(2), "its namespace and the cluster")
		g.Expect(grants[ns]).To(ConsistOf(
			rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create", "get", "update"}},
			rbacv1.PolicyRule{APIGroups: []string{"ctf.challenge-operator.io"}, Resources: []string{"challenges"},
				Verbs: []string{"create", "delete", "get", "list", "patch", "watch"}},
			rbacv1.PolicyRule{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
		), "in its namespace: Challenges, its limits' Leases and the platform API's Events; the token, platform and flag keys are mounted Secrets, not read through the API")
		g.Expect(grants[""]).To(ConsistOf(
			rbacv1.PolicyRule{APIGroups: []string{"ctf.challenge-operator.io"}, Resources: []string{"challengetemplates"},
				Verbs: []string{"get", "list", "watch"}},
			metricsAuth[0], metricsAuth[1],
		), "cluster-wide: reading the cluster-scoped templates and reviewing its metrics' callers, nothing else")

		var svc corev1.Service
		for _, o := range in.objs {
			if o.GetKind() == "Service" && o.GetName() == "challenge-operator-instancer" {
				g.Expect(convert(o, &svc)).To(Succeed())
			}
		}
		g.Expect(svc.Spec.Selector).To(Equal(d.Spec.Selector.MatchLabels), "the Service selects the instancer's pods")
		g.Expect(namesOf(in.objs, "CustomResourceDefinition")).To(Equal(namesOf(base.objs, "CustomResourceDefinition")))
	})

	t.Run("every mode installs the same operator", func(t *testing.T) {
		g := NewWithT(t)
		base := buildInstall(t, "default")
		for _, mode := range []string{"namespaced", "namespace-per-instance"} {
			in := buildInstall(t, mode)
			g.Expect(in.manager.Namespace).To(Equal(base.manager.Namespace), mode)
			g.Expect(in.manager.Name).To(Equal(base.manager.Name), mode)
			g.Expect(in.container().Image).To(Equal(base.container().Image), mode)
			g.Expect(namesOf(in.objs, "CustomResourceDefinition")).To(Equal(namesOf(base.objs, "CustomResourceDefinition")), mode)
		}
	})
}

// metricsAuth are the rights of metrics-auth-role: the reviews a metrics
// endpoint asks for, given to the operator and to the instancer.
var metricsAuth = []rbacv1.PolicyRule{
	{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
	{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
}

// namesOf returns the sorted names of the objects of kind.
func namesOf(objs []*unstructured.Unstructured, kind string) []string {
	var out []string
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o.GetName())
		}
	}
	slices.Sort(out)
	return out
}
