package policy

import (
	"maps"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation"
)

// service keeps the Service on the instance's pods and off the node's and the cloud's addresses
// except as the organiser allows.
func (c *checker) service(o *object, s *corev1.Service) error {
	if c.part.headless {
		return c.headlessService(o, s)
	}
	if s.Spec.PublishNotReadyAddresses {
		return o.violation(ruleService, "publishNotReadyAddresses: only the bare names' headless Service publishes pods before they are ready")
	}
	if !maps.Equal(s.Spec.Selector, c.part.selector) {
		return o.violation(ruleSelector, "the selector must be exactly %v", c.part.selector)
	}
	internal := s.Spec.Type == "" || s.Spec.Type == corev1.ServiceTypeClusterIP
	if !c.part.exposed && !internal {
		return o.violation(ruleService, "component %s: type %q; a component its template does not expose has a ClusterIP Service, for the instance's own pods", c.part.component, s.Spec.Type)
	}
	switch s.Spec.Type {
	case "", corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort:
	case corev1.ServiceTypeLoadBalancer:
		if !c.in.Limits.AllowLoadBalancer {
			return o.violation(ruleService, "type LoadBalancer is not allowed")
		}
	default:
		return o.violation(ruleService, "type %q is not allowed", s.Spec.Type)
	}
	return serviceAddresses(o, s)
}

// serviceAddresses refuses addresses and node ports the Service would fix itself, which could
// take over another's traffic.
func serviceAddresses(o *object, s *corev1.Service) error {
	if s.Spec.ClusterIP != "" || len(s.Spec.ClusterIPs) > 0 {
		return o.violation(ruleClusterIP, "clusterIP and clusterIPs must be left to the API server")
	}
	if len(s.Spec.LoadBalancerSourceRanges) > 0 {
		return o.violation(ruleSourceRanges, "loadBalancerSourceRanges must be empty: the NetworkPolicy decides who connects")
	}
	if len(s.Spec.ExternalIPs) > 0 || s.Spec.ExternalName != "" || s.Spec.LoadBalancerIP != "" {
		return o.violation(ruleService, "externalIPs, externalName and loadBalancerIP must be empty")
	}
	if s.Spec.HealthCheckNodePort != 0 {
		return o.violation(ruleService, "healthCheckNodePort must not be fixed")
	}
	for _, p := range s.Spec.Ports {
		if p.NodePort != 0 {
			return o.violation(ruleService, "port %q fixes nodePort %d", p.Name, p.NodePort)
		}
	}
	return nil
}

// serviceAccount keeps the instance's identity without an API token or secrets of its own.
func (c *checker) serviceAccount(o *object, sa *corev1.ServiceAccount) error {
	if sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
		return o.violation(ruleServiceAccount, "automountServiceAccountToken must be false")
	}
	if len(sa.Secrets) > 0 || len(sa.ImagePullSecrets) > 0 {
		return o.violation(ruleServiceAccount, "secrets and imagePullSecrets must be empty")
	}
	return nil
}

// secret allows the instance's Secret to hold its flag, its workloads' secretEnv values and its
// secret files only, as opaque values.
func (c *checker) secret(o *object, s *corev1.Secret) error {
	if s.Type != "" && s.Type != corev1.SecretTypeOpaque {
		return o.violation(ruleSecret, "type %q, want Opaque", s.Type)
	}
	for _, keys := range []map[string]bool{boolKeys(s.Data), boolKeys(s.StringData)} {
		for _, k := range slices.Sorted(maps.Keys(keys)) {
			if k != "flag" && !secretDataKey.MatchString(k) {
				return o.violation(ruleSecret, "key %q: only \"flag\", flag.<name>, [<component>.]env.<NAME> and [<component>.]file.<i>", k)
			}
		}
	}
	return nil
}

// secretDataKey is how the instance's Secret keys a secretEnv value (env.<NAME> for the
// primary's, <component>.env.<NAME> for a component's), a secret file ([<component>.]file.<i>)
// and a named flag (flag.<name>).
var secretDataKey = regexp.MustCompile(`^(([a-z]([-a-z0-9]*[a-z0-9])?\.)*(env\.[A-Za-z_][A-Za-z0-9_]*|file\.[0-9])|flag\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)$`)

func boolKeys[V any](m map[string]V) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

// namespaceObject requires the instance's own namespace to enforce the restricted Pod Security
// Standard at its latest version, so the API server judges the pods again, and to carry no other
// label or annotation: admission plugins and controllers read namespaces' labels and annotations
// (a default node selector, tolerations, a mesh, an IP pool) to treat every pod in them.
func (c *checker) namespaceObject(o *object, ns *corev1.Namespace) error {
	labels := ns.GetLabels()
	for k, v := range ns.GetAnnotations() {
		if want, ok := c.in.OwnerAnnotations[k]; !ok || v != want {
			return o.violation(ruleNamespaceMeta, "the instance's Namespace may carry no annotations but those naming its Challenge")
		}
	}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if _, identity := c.part.labels[k]; !identity && !ownNamespaceLabels[k] {
			return o.violation(ruleNamespaceMeta, "label %s: only the identity and Pod Security enforce labels", k)
		}
	}
	if level := c.widestLevel(); labels["pod-security.kubernetes.io/enforce"] != string(level) {
		return o.violation(ruleNamespace, "label pod-security.kubernetes.io/enforce must be %q", level)
	}
	if v, ok := labels["pod-security.kubernetes.io/enforce-version"]; ok && v != "latest" {
		return o.violation(ruleNamespace, "label pod-security.kubernetes.io/enforce-version must be \"latest\"")
	}
	return nil
}

// ingress allows routes to the instance's own Service under the organiser's domain only.
func (c *checker) ingress(o *object, ing *networkingv1.Ingress) error {
	if c.domain == "" {
		return o.violation(ruleIngress, "no Ingress is allowed")
	}
	if !c.part.exposed {
		return o.violation(ruleIngress, "component %s is not exposed", c.part.component)
	}
	if ing.Spec.DefaultBackend != nil {
		return o.violation(ruleIngress, "a defaultBackend catches every host")
	}
	if cls := ing.Spec.IngressClassName; cls != nil && !slices.Contains(c.in.Limits.IngressClasses, *cls) {
		return o.violation(ruleIngressClass, "ingress class %q is not allowed; allowed: %s", *cls, listOrNone(c.in.Limits.IngressClasses))
	}
	for _, r := range ing.Spec.Rules {
		if err := c.host(o, r.Host); err != nil {
			return err
		}
		if err := c.backends(o, r.HTTP); err != nil {
			return err
		}
	}
	for _, tls := range ing.Spec.TLS {
		if len(tls.Hosts) == 0 {
			return o.violation(ruleIngressHost, "a tls entry must list its hosts")
		}
		for _, h := range tls.Hosts {
			if err := c.host(o, h); err != nil {
				return err
			}
		}
		if tls.SecretName != "" && !slices.Contains(c.in.Limits.TLSSecrets, tls.SecretName) {
			return o.violation(ruleIngressTLS, "certificate Secret %q is not allowed; allowed: %s", tls.SecretName, listOrNone(c.in.Limits.TLSSecrets))
		}
	}
	return nil
}

// backends requires every path to lead to the instance's own Service.
func (c *checker) backends(o *object, http *networkingv1.HTTPIngressRuleValue) error {
	if http == nil {
		return nil
	}
	for _, p := range http.Paths {
		b := p.Backend
		if b.Resource != nil || b.Service == nil || b.Service.Name != c.part.name {
			return o.violation(ruleIngress, "path %q must lead to service %q", p.Path, c.part.name)
		}
	}
	return nil
}

// host requires a lower-case DNS name strictly under the organiser's domain that no other instance
// uses: "evilctf.example" is not under "ctf.example", and neither is "ctf.example" itself.
func (c *checker) host(o *object, h string) error {
	if h == "" {
		return o.violation(ruleIngressHost, "a rule without a host matches every host")
	}
	if errs := validation.IsDNS1123Subdomain(h); len(errs) > 0 {
		return o.violation(ruleIngressHost, "host %q: %s", h, strings.Join(errs, "; "))
	}
	if !strings.HasSuffix(h, "."+c.domain) {
		return o.violation(ruleIngressHost, "host %q is not under %q", h, c.domain)
	}
	if c.part.host != "" && h != c.part.host {
		return o.violation(ruleIngressHost, "host %q is not the instance's own, %q", h, c.part.host)
	}
	if c.in.HostTaken != nil && c.in.HostTaken(h) {
		return o.violation(ruleIngressHost, "host %q is taken by another instance", h)
	}
	return nil
}

// ownNamespaceLabels are the labels an instance's Namespace carries besides its identity.
var ownNamespaceLabels = map[string]bool{
	"pod-security.kubernetes.io/enforce":         true,
	"pod-security.kubernetes.io/enforce-version": true,
	"kubernetes.io/metadata.name":                true,
}

// resourceQuota requires exactly the operator's quota for the instance's namespace.
func (c *checker) resourceQuota(o *object, q *corev1.ResourceQuota) error {
	want := corev1.ResourceQuotaSpec{Hard: c.in.Quota}
	if !apiequality.Semantic.DeepEqual(q.Spec, want) {
		return o.violation(ruleQuota, "the quota must be exactly hard %v", describeList(c.in.Quota))
	}
	return nil
}

// limitRange requires exactly the operator's limits for the instance's namespace.
func (c *checker) limitRange(o *object, lr *corev1.LimitRange) error {
	if !apiequality.Semantic.DeepEqual(lr.Spec.Limits, c.in.LimitRange) {
		return o.violation(ruleLimitRange, "the limits must be exactly the operator's")
	}
	return nil
}

// describeList writes a resource list in a stable order.
func describeList(l corev1.ResourceList) string {
	parts := make([]string, 0, len(l))
	for _, k := range slices.Sorted(maps.Keys(l)) {
		q := l[k]
		parts = append(parts, string(k)+"="+q.String())
	}
	return strings.Join(parts, ", ")
}

// listOrNone lists what an allowlist holds, for a refusal's message.
func listOrNone(allowed []string) string {
	if len(allowed) == 0 {
		return "none"
	}
	return strings.Join(allowed, ", ")
}
