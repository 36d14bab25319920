package policy

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// podNames holds a pod's name resolution to the instance's bare names: with them, its hostname
// is exactly its workload's bare name, its subdomain the instance's headless Service and its
// dnsConfig one search domain, the instance's own, and nothing else (no nameserver, no option:
// the cluster's DNS answers, as for every pod); without them, none of the three is set. Another
// instance's subdomain or search domain would make the pod answer to, or resolve, its names.
func (c *checker) podNames(o *object, p *corev1.PodSpec) error {
	want := c.in.BareNames
	if want == nil || c.part.bareName == "" {
		if p.Hostname != "" || p.Subdomain != "" || p.DNSConfig != nil {
			return o.violation(ruleBareNames, "hostname, subdomain and dnsConfig are set only for the bare names of an instance whose template has them")
		}
		return nil
	}
	if p.Hostname != c.part.bareName {
		return o.violation(ruleBareNames, "hostname %q, want its bare name %q", p.Hostname, c.part.bareName)
	}
	if p.Subdomain != want.Service {
		return o.violation(ruleBareNames, "subdomain %q, want the instance's headless Service %q", p.Subdomain, want.Service)
	}
	d := p.DNSConfig
	if d == nil || len(d.Nameservers) > 0 || len(d.Options) > 0 || !slices.Equal(d.Searches, []string{want.Search}) {
		return o.violation(ruleBareNames, "dnsConfig must be exactly searches [%q]: no other domain, no nameservers, no options", want.Search)
	}
	return nil
}

// headlessService judges the instance's bare names' Service: headless (clusterIP None, so it
// forwards nothing and only names pods), selecting exactly every pod of the instance, publishing
// them before they are ready, with no ports and nothing that reaches outside the cluster.
func (c *checker) headlessService(o *object, s *corev1.Service) error {
	if !maps.Equal(s.Spec.Selector, c.part.selector) {
		return o.violation(ruleSelector, "the bare names' Service selects exactly %v", c.part.selector)
	}
	if s.Spec.ClusterIP != corev1.ClusterIPNone || len(s.Spec.ClusterIPs) > 0 {
		return o.violation(ruleClusterIP, "the bare names' Service is headless: clusterIP None, no clusterIPs")
	}
	if s.Spec.Type != "" && s.Spec.Type != corev1.ServiceTypeClusterIP {
		return o.violation(ruleService, "the bare names' Service is of type ClusterIP, not %q", s.Spec.Type)
	}
	if !s.Spec.PublishNotReadyAddresses {
		return o.violation(ruleBareNames, "the bare names' Service publishes its pods before they are ready: publishNotReadyAddresses true")
	}
	if len(s.Spec.Ports) > 0 {
		return o.violation(ruleBareNames, "the bare names' Service has no ports: it names pods, it forwards nothing")
	}
	return serviceAddresses(o, &corev1.Service{Spec: corev1.ServiceSpec{
		ExternalIPs: s.Spec.ExternalIPs, ExternalName: s.Spec.ExternalName, LoadBalancerIP: s.Spec.LoadBalancerIP,
		LoadBalancerSourceRanges: s.Spec.LoadBalancerSourceRanges, HealthCheckNodePort: s.Spec.HealthCheckNodePort,
	}})
}
