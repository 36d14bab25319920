package policy

import (
	"fmt"
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// networkPolicy requires the instance's NetworkPolicy to isolate its pods both ways: it may
// resolve DNS and reach addresses outside the internal ranges, and be reached from outside them
// and from the organiser's namespaces, never from or to another instance or the node's metadata.
func (c *checker) networkPolicy(o *object, np *networkingv1.NetworkPolicy) error {
	if !exactSelector(&np.Spec.PodSelector, c.part.selector) {
		return o.violation(ruleSelector, "the podSelector must be exactly matchLabels %v", c.part.selector)
	}
	types := np.Spec.PolicyTypes
	if !slices.Contains(types, networkingv1.PolicyTypeIngress) || !slices.Contains(types, networkingv1.PolicyTypeEgress) {
		return o.violation(ruleNetworkPolicy, "policyTypes must contain Ingress and Egress")
	}
	for i, r := range np.Spec.Egress {
		if err := c.egressRule(r); err != nil {
			return o.violation(ruleNetworkEgress, "egress rule %d: %v", i, err)
		}
	}
	for i, r := range np.Spec.Ingress {
		// A component its template does not expose admits the instance's own pods only.
		if !c.part.reachable && (len(r.From) != 1 || !c.instancePeer(r.From[0])) {
			return o.violation(ruleNetworkIngress, "ingress rule %d: component %s admits the instance's own pods only", i, c.part.component)
		}
		if err := c.ingressRule(r); err != nil {
			return o.violation(ruleNetworkIngress, "ingress rule %d: %v", i, err)
		}
	}
	return nil
}

// egressRule allows the DNS peer on port 53 and ipBlocks that stay out of the forbidden ranges.
func (c *checker) egressRule(r networkingv1.NetworkPolicyEgressRule) error {
	if len(r.To) == 0 {
		return fmt.Errorf("no peers means everywhere")
	}
	for j, p := range r.To {
		switch {
		case c.dnsPeer(p):
			if !dnsPorts(r.Ports) {
				return fmt.Errorf("the DNS peer allows ports other than 53/UDP and 53/TCP")
			}
		case p.IPBlock != nil && p.NamespaceSelector == nil && p.PodSelector == nil:
			if err := c.ipBlock(p.IPBlock); err != nil {
				return err
			}
		case c.instancePeer(p):
		case c.sharedPeer(p):
			if len(r.Ports) == 0 {
				return fmt.Errorf("a shared Service is reached on its ports only")
			}
		default:
			return fmt.Errorf("peer %d is neither the DNS peer, an ipBlock, the instance's own pods nor a shared Service", j)
		}
	}
	return nil
}

// ingressRule allows ipBlocks that stay out of the forbidden ranges and the pods of the
// organiser's namespaces.
func (c *checker) ingressRule(r networkingv1.NetworkPolicyIngressRule) error {
	if len(r.From) == 0 {
		return fmt.Errorf("no peers means everywhere")
	}
	for j, p := range r.From {
		switch {
		case p.IPBlock != nil && p.NamespaceSelector == nil && p.PodSelector == nil:
			if err := c.ipBlock(p.IPBlock); err != nil {
				return err
			}
		case p.IPBlock == nil && c.namespacePeer(p.NamespaceSelector):
			if ns := p.NamespaceSelector.MatchLabels[nameLabel]; ns == c.in.Namespace {
				return fmt.Errorf("namespace %q is the instance's own: the pods of every other instance there could connect", ns)
			}
		case c.instancePeer(p):
		case c.in.EveryInstancePod != "" && everyInstancePeer(p, c.in.EveryInstancePod):
		default:
			return fmt.Errorf("peer %d is neither an ipBlock, an allowed namespace nor the instance's own pods", j)
		}
	}
	return nil
}

// instancePeer reports whether p is exactly the instance's own pods, in the policy's namespace:
// its components reaching each other.
func (c *checker) instancePeer(p networkingv1.NetworkPolicyPeer) bool {
	return len(c.in.InstancePods) > 0 && p.IPBlock == nil && p.NamespaceSelector == nil &&
		exactSelector(p.PodSelector, c.in.InstancePods)
}

// everyInstancePeer reports whether p is exactly the pods of every instance, in every
// namespace: those that carry the label key.
func everyInstancePeer(p networkingv1.NetworkPolicyPeer, key string) bool {
	return p.IPBlock == nil && p.NamespaceSelector != nil && len(p.NamespaceSelector.MatchLabels) == 0 && len(p.NamespaceSelector.MatchExpressions) == 0 &&
		p.PodSelector != nil && len(p.PodSelector.MatchLabels) == 0 && len(p.PodSelector.MatchExpressions) == 1 &&
		p.PodSelector.MatchExpressions[0].Key == key && p.PodSelector.MatchExpressions[0].Operator == metav1.LabelSelectorOpExists &&
		len(p.PodSelector.MatchExpressions[0].Values) == 0
}

// sharedPeer reports whether p is exactly the pods of one of the instance's shared Services.
func (c *checker) sharedPeer(p networkingv1.NetworkPolicyPeer) bool {
	return p.IPBlock == nil && slices.ContainsFunc(c.in.SharedServices, func(s SharedPeer) bool {
		return exactSelector(p.NamespaceSelector, map[string]string{nameLabel: s.Namespace}) && len(s.Selector) > 0 && exactSelector(p.PodSelector, s.Selector)
	})
}

// nameLabel is the label the API server sets on every namespace to its name.
const nameLabel = "kubernetes.io/metadata.name"

// dnsPeer reports whether p is exactly the cluster DNS: kube-dns pods in the DNS namespace.
func (c *checker) dnsPeer(p networkingv1.NetworkPolicyPeer) bool {
	return p.IPBlock == nil &&
		exactSelector(p.NamespaceSelector, map[string]string{nameLabel: c.dnsNS}) &&
		exactSelector(p.PodSelector, map[string]string{"k8s-app": "kube-dns"})
}

// dnsPorts reports whether ports name port 53 over UDP or TCP only; no ports means every port.
func dnsPorts(ports []networkingv1.NetworkPolicyPort) bool {
	if len(ports) == 0 {
		return false
	}
	for _, p := range ports {
		udpOrTCP := p.Protocol == nil || *p.Protocol == corev1.ProtocolUDP || *p.Protocol == corev1.ProtocolTCP
		if !udpOrTCP || p.EndPort != nil || p.Port == nil || p.Port.Type != intstr.Int || p.Port.IntVal != 53 {
			return false
		}
	}
	return true
}

// namespacePeer reports whether s selects exactly one namespace the organiser lets in.
func (c *checker) namespacePeer(s *metav1.LabelSelector) bool {
	if s == nil || len(s.MatchExpressions) > 0 || len(s.MatchLabels) != 1 {
		return false
	}
	ns, ok := s.MatchLabels[nameLabel]
	return ok && slices.Contains(c.in.Limits.IngressFromNamespaces, ns)
}

// ipBlock refuses a block that reaches a forbidden range: some address of the range lies in its
// cidr, outside its excepts and outside the ranges the organiser allows.
func (c *checker) ipBlock(b *networkingv1.IPBlock) error {
	cidr, err := parsePrefix(b.CIDR)
	if err != nil {
		return err
	}
	open := slices.Clone(c.allowed)
	for _, e := range b.Except {
		p, err := parsePrefix(e)
		if err != nil {
			return err
		}
		open = append(open, p)
	}
	for _, f := range c.forbidden {
		if inside, ok := intersect(cidr, f); ok && !covered(inside, open) {
			return fmt.Errorf("ipBlock %s reaches %s", b.CIDR, inside)
		}
	}
	return nil
}

// parsePrefix reads a CIDR as its network. IPv4-mapped IPv6 addresses are refused: network
// plugins do not agree on which family they match.
func parsePrefix(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("invalid CIDR %q: %w", s, err)
	}
	if p.Addr().Is4In6() {
		return netip.Prefix{}, fmt.Errorf("CIDR %q is an IPv4-mapped IPv6 range", s)
	}
	return p.Masked(), nil
}

// masked returns prefixes as their networks, refusing invalid ones.
func masked(prefixes []netip.Prefix) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(prefixes))
	for _, p := range prefixes {
		if !p.IsValid() {
			return nil, fmt.Errorf("invalid prefix %v", p)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

// intersect returns the addresses two prefixes share, which is the longer one when they overlap.
func intersect(a, b netip.Prefix) (netip.Prefix, bool) {
	if !a.Overlaps(b) {
		return netip.Prefix{}, false
	}
	if a.Bits() >= b.Bits() {
		return a, true
	}
	return b, true
}

// covered reports whether every address of p lies in one of by, splitting p in halves where
// prefixes of by only cover part of it.
func covered(p netip.Prefix, by []netip.Prefix) bool {
	partial := false
	for _, q := range by {
		if !q.Overlaps(p) {
			continue
		}
		if q.Bits() <= p.Bits() {
			return true
		}
		partial = true
	}
	if !partial {
		return false
	}
	lo, hi := halves(p)
	return covered(lo, by) && covered(hi, by)
}

// halves splits a network into its two halves; p must be masked and shorter than an address.
func halves(p netip.Prefix) (netip.Prefix, netip.Prefix) {
	bits := p.Bits()
	addr := p.Addr().AsSlice()
	addr[bits/8] |= 0x80 >> (bits % 8)
	hi, _ := netip.AddrFromSlice(addr)
	return netip.PrefixFrom(p.Addr(), bits+1), netip.PrefixFrom(hi, bits+1)
}
