package policy

import (
	"slices"

	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// tlsRoute allows raw TCP inside TLS to the instance's own Service, on its own host, through one
// of the admin's Gateways.
func (c *checker) tlsRoute(o *object, r *gatewayv1.TLSRoute) error {
	backends := []gatewayv1.BackendRef{}
	for _, rule := range r.Spec.Rules {
		backends = append(backends, rule.BackendRefs...)
	}
	return c.route(o, r.Spec.CommonRouteSpec, r.Spec.Hostnames, backends)
}

// httpRoute allows HTTP to the instance's own Service, on its own host, through one of the admin's
// Gateways, without filters: a filter mirrors, redirects or rewrites requests elsewhere.
func (c *checker) httpRoute(o *object, r *gatewayv1.HTTPRoute) error {
	backends := []gatewayv1.BackendRef{}
	for _, rule := range r.Spec.Rules {
		if len(rule.Filters) > 0 {
			return o.violation(ruleGatewayRoute, "a rule may not filter requests")
		}
		for _, b := range rule.BackendRefs {
			if len(b.Filters) > 0 {
				return o.violation(ruleGatewayRoute, "a backend may not filter requests")
			}
			backends = append(backends, b.BackendRef)
		}
	}
	return c.route(o, r.Spec.CommonRouteSpec, r.Spec.Hostnames, backends)
}

// route requires exactly one parent, a Gateway of the admin's list, exactly the instance's own
// host, and backends that are its own Service.
func (c *checker) route(o *object, spec gatewayv1.CommonRouteSpec, hostnames []gatewayv1.Hostname, backends []gatewayv1.BackendRef) error {
	if c.domain == "" {
		return o.violation(ruleGatewayRoute, "no route is allowed without a domain for instances' hosts")
	}
	if !c.part.exposed {
		return o.violation(ruleGatewayRoute, "component %s is not exposed", c.part.component)
	}
	if spec.UseDefaultGateways != "" && spec.UseDefaultGateways != gatewayv1.GatewayDefaultScopeNone {
		return o.violation(ruleGatewayRoute, "useDefaultGateways: the route names its Gateway")
	}
	if len(spec.ParentRefs) != 1 {
		return o.violation(ruleGatewayRoute, "exactly one parent, a Gateway of --gateways")
	}
	p := spec.ParentRefs[0]
	group := p.Group == nil || *p.Group == gatewayv1.GroupName
	kind := p.Kind == nil || *p.Kind == "Gateway"
	ns := c.in.Namespace
	if p.Namespace != nil {
		ns = string(*p.Namespace)
	}
	gw := types.NamespacedName{Namespace: ns, Name: string(p.Name)}
	if !group || !kind || p.Port != nil || !slices.Contains(c.in.Limits.Gateways, gw) {
		return o.violation(ruleGatewayRoute, "parent %s is not a Gateway of --gateways (%s)", gw, listOrNone(gatewayNames(c.in.Limits.Gateways)))
	}
	if len(hostnames) != 1 {
		return o.violation(ruleIngressHost, "exactly one hostname, the instance's own")
	}
	if err := c.host(o, string(hostnames[0])); err != nil {
		return err
	}
	for _, b := range backends {
		service := (b.Group == nil || *b.Group == "") && (b.Kind == nil || *b.Kind == "Service")
		own := b.Namespace == nil || string(*b.Namespace) == c.in.Namespace
		if !service || !own || string(b.Name) != c.part.name {
			return o.violation(ruleGatewayRoute, "a backend must be service %q", c.part.name)
		}
	}
	return nil
}

func gatewayNames(gws []types.NamespacedName) []string {
	out := make([]string, len(gws))
	for i, g := range gws {
		out[i] = g.String()
	}
	return out
}
