package bundle

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/challenge-operator/challenge-operator/internal/manifests"
)

// Names of the roles config/namespaced holds: the manager's rights on
// namespaced kinds, bound in its own namespace, and the few a Role cannot grant.
const (
	NamespacedRoleName = "manager-role"
	ClusterRoleName    = "manager-cluster-role"
)

// scopes says, per resource, whether it is namespaced (true) or
// cluster-scoped (false). A Role grants rights on namespaced resources only,
// and OLM scopes a CSV's permissions to the install mode's namespaces, so
// every rule must be put on the right side of that line.
type scopes map[schema.GroupResource]bool

// builtinScopes are the scopes of the built-in Kubernetes resources (as of
// 1.35). A resource in neither this table nor a CRD of the build has no
// known scope, and splitting a rule on it fails rather than guess: a wrong
// guess either grants cluster-wide what should be namespaced or grants a
// cluster-scoped right in a Role, where it does nothing.
func builtinScopes() scopes {
	s := scopes{}
	add := func(namespaced bool, group string, resources ...string) {
		for _, r := range resources {
			s[schema.GroupResource{Group: group, Resource: r}] = namespaced
		}
	}
	add(true, "", "bindings", "configmaps", "endpoints", "events", "limitranges", "persistentvolumeclaims", "pods",
		"podtemplates", "replicationcontrollers", "resourcequotas", "secrets", "serviceaccounts", "services")
	add(false, "", "componentstatuses", "namespaces", "nodes", "persistentvolumes")
	add(false, "admissionregistration.k8s.io", "mutatingadmissionpolicies", "mutatingadmissionpolicybindings",
		"mutatingwebhookconfigurations", "validatingadmissionpolicies", "validatingadmissionpolicybindings",
		"validatingwebhookconfigurations")
	add(false, "apiextensions.k8s.io", "customresourcedefinitions")
	add(false, "apiregistration.k8s.io", "apiservices")
	add(true, "apps", "controllerrevisions", "daemonsets", "deployments", "replicasets", "statefulsets")
	add(false, "authentication.k8s.io", "selfsubjectreviews", "tokenreviews")
	add(true, "authorization.k8s.io", "localsubjectaccessreviews")
	add(false, "authorization.k8s.io", "selfsubjectaccessreviews", "selfsubjectrulesreviews", "subjectaccessreviews")
	add(true, "autoscaling", "horizontalpodautoscalers")
	add(true, "batch", "cronjobs", "jobs")
	add(false, "certificates.k8s.io", "certificatesigningrequests", "clustertrustbundles")
	add(true, "coordination.k8s.io", "leases")
	add(true, "discovery.k8s.io", "endpointslices")
	add(true, "events.k8s.io", "events")
	add(false, "flowcontrol.apiserver.k8s.io", "flowschemas", "prioritylevelconfigurations")
	// The Gateway API is not built in, but its kinds are the same in every cluster that has it.
	add(true, "gateway.networking.k8s.io", "gateways", "grpcroutes", "httproutes", "referencegrants", "tcproutes", "tlsroutes", "udproutes")
	add(false, "gateway.networking.k8s.io", "gatewayclasses")
	// So are the Prometheus Operator's (--create-monitors applies two of them).
	add(true, "monitoring.coreos.com", "alertmanagerconfigs", "alertmanagers", "podmonitors", "probes", "prometheusagents",
		"prometheuses", "prometheusrules", "scrapeconfigs", "servicemonitors", "thanosrulers")
	add(true, "networking.k8s.io", "ingresses", "networkpolicies")
	add(false, "networking.k8s.io", "ingressclasses", "ipaddresses", "servicecidrs")
	add(false, "node.k8s.io", "runtimeclasses")
	add(true, "policy", "poddisruptionbudgets")
	add(true, "rbac.authorization.k8s.io", "rolebindings", "roles")
	add(false, "rbac.authorization.k8s.io", "clusterrolebindings", "clusterroles")
	add(true, "resource.k8s.io", "resourceclaims", "resourceclaimtemplates")
	add(false, "resource.k8s.io", "deviceclasses", "resourceslices")
	add(false, "scheduling.k8s.io", "priorityclasses")
	add(true, "storage.k8s.io", "csistoragecapacities")
	add(false, "storage.k8s.io", "csidrivers", "csinodes", "storageclasses", "volumeattachments", "volumeattributesclasses")
	return s
}

// addCRD records the scope of a custom resource, which only its CRD knows.
func (s scopes) addCRD(crd *apiextensionsv1.CustomResourceDefinition) {
	gr := schema.GroupResource{Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural}
	s[gr] = crd.Spec.Scope == apiextensionsv1.NamespaceScoped
}

// namespaced reports whether group/resource (a subresource such as
// challenges/status has its parent's scope) is namespaced.
func (s scopes) namespaced(group, resource string) (bool, error) {
	parent, _, _ := strings.Cut(resource, "/")
	namespaced, known := s[schema.GroupResource{Group: group, Resource: parent}]
	if !known {
		return false, fmt.Errorf("the scope of %q in API group %q is unknown: add it to builtinScopes (or its CRD to the build)",
			resource, group)
	}
	return namespaced, nil
}

// split divides rules into those on namespaced resources, which a Role (or a
// CSV's permissions) can grant, and those only a ClusterRole can: on
// cluster-scoped resources and non-resource URLs. Rules keep their order.
func (s scopes) split(rules []rbacv1.PolicyRule) (namespaced, cluster []rbacv1.PolicyRule, err error) {
	for _, rule := range rules {
		ns, cl, err := s.splitRule(rule)
		if err != nil {
			return nil, nil, err
		}
		namespaced, cluster = append(namespaced, ns...), append(cluster, cl...)
	}
	return namespaced, cluster, nil
}

// splitRule keeps a rule whole when all its resources have one scope, and
// otherwise splits it per API group into the resources of each scope, with
// the same verbs and resource names.
func (s scopes) splitRule(rule rbacv1.PolicyRule) (namespaced, cluster []rbacv1.PolicyRule, err error) {
	if len(rule.NonResourceURLs) > 0 {
		return nil, []rbacv1.PolicyRule{rule}, nil
	}
	parts := map[bool][]rbacv1.PolicyRule{} // by namespaced
	for _, group := range rule.APIGroups {
		byScope := map[bool][]string{}
		for _, res := range rule.Resources {
			ns, err := s.namespaced(group, res)
			if err != nil {
				return nil, nil, err
			}
			byScope[ns] = append(byScope[ns], res)
		}
		for ns, resources := range byScope {
			part := *rule.DeepCopy()
			part.APIGroups, part.Resources = []string{group}, resources
			parts[ns] = append(parts[ns], part)
		}
	}
	switch {
	case len(parts) == 0:
		return nil, nil, fmt.Errorf("a rule with verbs %v names no resource of any API group", rule.Verbs)
	case len(parts[false]) == 0:
		return []rbacv1.PolicyRule{rule}, nil, nil
	case len(parts[true]) == 0:
		return nil, []rbacv1.PolicyRule{rule}, nil
	}
	return parts[true], parts[false], nil
}

// checkNamespaced fails if a Role names a cluster-scoped resource: the
// right would silently do nothing.
func (s scopes) checkNamespaced(rules []rbacv1.PolicyRule) error {
	_, cluster, err := s.split(rules)
	if err != nil {
		return err
	}
	if len(cluster) > 0 {
		return fmt.Errorf("a Role cannot grant %v on %v", cluster[0].Verbs, slices.Concat(cluster[0].Resources, cluster[0].NonResourceURLs))
	}
	return nil
}

// NamespacedRBAC splits the manager's generated ClusterRole (roleFile,
// config/rbac/role.yaml) by scope into what config/namespaced installs: a
// Role NamespacedRoleName with the rights on namespaced kinds, and a
// ClusterRole ClusterRoleName with the rest. The scopes of custom resources
// come from the CRDs of the kustomization crdDir. The output is YAML,
// byte for byte the same for the same input.
func NamespacedRBAC(roleFile, crdDir string) ([]byte, error) {
	s, err := crdScopes(crdDir)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(roleFile)
	if err != nil {
		return nil, err
	}
	objs, err := manifests.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", roleFile, err)
	}
	if len(objs) != 1 || objs[0].GetKind() != "ClusterRole" {
		return nil, fmt.Errorf("%s: want exactly one ClusterRole, as controller-gen writes it", roleFile)
	}
	var manager rbacv1.ClusterRole
	if err := convert(objs[0], &manager); err != nil {
		return nil, err
	}
	namespaced, cluster, err := s.split(manager.Rules)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", roleFile, err)
	}
	return rolesYAML(namespaced, cluster)
}

// rolesYAML writes the Role and the ClusterRole of config/namespaced.
func rolesYAML(namespaced, cluster []rbacv1.PolicyRule) ([]byte, error) {
	out := bytes.NewBufferString("# Generated by `make manifests` (hack/bundle-gen --namespaced-rbac) from\n" +
		"# config/rbac/role.yaml, split by the scope of each resource: do not edit.\n")
	for _, obj := range []runtime.Object{
		&rbacv1.Role{TypeMeta: metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "Role"},
			ObjectMeta: metav1.ObjectMeta{Name: NamespacedRoleName, Namespace: "system"}, Rules: namespaced},
		&rbacv1.ClusterRole{TypeMeta: metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: ClusterRoleName}, Rules: cluster},
	} {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			return nil, err
		}
		doc, err := yaml.Marshal(clean(u))
		if err != nil {
			return nil, err
		}
		out.WriteString("---\n")
		out.Write(doc)
	}
	return out.Bytes(), nil
}

// crdScopes returns the built-in scopes plus those of the CRDs the
// kustomization dir builds.
func crdScopes(dir string) (scopes, error) {
	objs, err := manifests.Kustomize(dir)
	if err != nil {
		return nil, err
	}
	s := builtinScopes()
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" {
			continue
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &crd); err != nil {
			return nil, fmt.Errorf("CRD %s: %w", o.GetName(), err)
		}
		s.addCRD(&crd)
	}
	return s, nil
}
