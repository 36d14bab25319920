// Package endpoint says where a participant connects to an instance, from its
// Service, its Ingress and the nodes' addresses.
package endpoint

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// Inputs are the objects endpoints are read from. Ingress is nil unless the
// instance is exposed through one; NodeAddress is empty when no node has one.
type Inputs struct {
	Service     *corev1.Service
	Ingress     *networkingv1.Ingress
	NodeAddress string
	// Route is the instance's own host on a Gateway's listener, for an
	// instance exposed by a TLSRoute or an HTTPRoute.
	Route *Route
	// PortRoutes and PortIngresses expose more of the Service's ports, by
	// port name, each on a host of its own (a template's exposePorts).
	PortRoutes    map[string]*Route
	PortIngresses map[string]*networkingv1.Ingress
}

// Route is where a Gateway serves an instance's TLSRoute or HTTPRoute.
type Route struct {
	// Host is the route's hostname, the instance's own.
	Host string
	// Port is the port of the Gateway's listener the route attaches to; 0
	// while it is not known.
	Port int32
	// TLS says the listener speaks TLS: TCP inside TLS for a TLSRoute,
	// HTTPS for an HTTPRoute.
	TLS bool
	// HTTP says the route is an HTTPRoute.
	HTTP bool
}

// For returns one endpoint per Service port, the primary port first, or nil
// while an address is still missing (no cluster IP, node port, load balancer
// address or ingress host yet): a platform must never be handed half an address.
func For(in Inputs) []ctfv1alpha1.Endpoint {
	svc := in.Service
	if svc == nil || len(svc.Spec.Ports) == 0 {
		return nil
	}
	out := make([]ctfv1alpha1.Endpoint, 0, len(svc.Spec.Ports))
	for i, p := range svc.Spec.Ports {
		e, ok := forPort(in, p, i == 0)
		if !ok {
			return nil
		}
		out = append(out, e)
	}
	return out
}

func forPort(in Inputs, p corev1.ServicePort, primary bool) (ctfv1alpha1.Endpoint, bool) {
	svc := in.Service
	switch {
	case !primary && in.PortRoutes[p.Name] != nil:
		return routeEndpoint(in.PortRoutes[p.Name], p)
	case !primary && in.PortIngresses[p.Name] != nil:
		return ingressEndpoint(in.PortIngresses[p.Name], p)
	case primary && in.Route != nil:
		return routeEndpoint(in.Route, p)
	case primary && in.Ingress != nil:
		return ingressEndpoint(in.Ingress, p)
	case svc.Spec.Type == corev1.ServiceTypeNodePort:
		if in.NodeAddress == "" || p.NodePort == 0 {
			return ctfv1alpha1.Endpoint{}, false
		}
		return build(p, in.NodeAddress, p.NodePort), true
	case svc.Spec.Type == corev1.ServiceTypeLoadBalancer:
		host := loadBalancerHost(svc)
		if host == "" {
			return ctfv1alpha1.Endpoint{}, false
		}
		return build(p, host, p.Port), true
	default:
		if svc.Spec.ClusterIP == "" {
			return ctfv1alpha1.Endpoint{}, false
		}
		return build(p, fmt.Sprintf("%s.%s.svc", svc.Name, svc.Namespace), p.Port), true
	}
}

func ingressEndpoint(ing *networkingv1.Ingress, p corev1.ServicePort) (ctfv1alpha1.Endpoint, bool) {
	if len(ing.Spec.Rules) == 0 || ing.Spec.Rules[0].Host == "" {
		return ctfv1alpha1.Endpoint{}, false
	}
	host := ing.Spec.Rules[0].Host
	scheme, port := "http", int32(80)
	if len(ing.Spec.TLS) > 0 {
		scheme, port = "https", 443
	}
	e := build(p, host, port)
	e.Protocol = ctfv1alpha1.ProtocolTCP
	e.URL = fmt.Sprintf("%s://%s/", scheme, host)
	return e, true
}

// routeEndpoint is the instance's own host on its Gateway's listener: a URL
// for an HTTPRoute, an ncat --ssl command for TCP inside TLS.
func routeEndpoint(r *Route, p corev1.ServicePort) (ctfv1alpha1.Endpoint, bool) {
	if r.Host == "" || r.Port == 0 {
		return ctfv1alpha1.Endpoint{}, false
	}
	e := build(p, r.Host, r.Port)
	e.Protocol, e.URL = ctfv1alpha1.ProtocolTCP, ""
	switch {
	case r.HTTP:
		scheme := "http"
		if r.TLS {
			scheme = "https"
		}
		e.URL = fmt.Sprintf("%s://%s/", scheme, hostPort(r.Host, r.Port, scheme))
	case r.TLS:
		e.Connect = fmt.Sprintf("ncat --ssl %s %d", r.Host, r.Port)
	}
	return e, true
}

// hostPort leaves out the scheme's own port, as a browser writes a URL.
func hostPort(host string, port int32, scheme string) string {
	if URLPort(port, scheme == "https") == 0 {
		return host
	}
	return net.JoinHostPort(host, strconv.Itoa(int(port)))
}

func loadBalancerHost(svc *corev1.Service) string {
	for _, ing := range svc.Status.LoadBalancer.Ingress {
		if ing.IP != "" {
			return ing.IP
		}
		if ing.Hostname != "" {
			return ing.Hostname
		}
	}
	return ""
}

// build makes an endpoint; ports named like http get a URL too.
func build(p corev1.ServicePort, host string, port int32) ctfv1alpha1.Endpoint {
	proto := ctfv1alpha1.Protocol(p.Protocol)
	if proto == "" {
		proto = ctfv1alpha1.ProtocolTCP
	}
	e := ctfv1alpha1.Endpoint{
		Name:     p.Name,
		Host:     host,
		Port:     port,
		Protocol: proto,
		Address:  net.JoinHostPort(host, strconv.Itoa(int(port))),
	}
	if scheme, ok := httpScheme(p.Name); ok && proto == ctfv1alpha1.ProtocolTCP {
		e.URL = fmt.Sprintf("%s://%s/", scheme, e.Address)
	}
	return e
}

func httpScheme(portName string) (string, bool) {
	switch {
	case strings.HasPrefix(portName, "https"):
		return "https", true
	case strings.HasPrefix(portName, "http"), strings.HasPrefix(portName, "web"):
		return "http", true
	}
	return "", false
}

// NodeAddress picks the address NodePort endpoints point at: the first ready
// node's external IP, else its internal IP.
func NodeAddress(nodes []corev1.Node) string {
	var internal string
	for _, n := range nodes {
		if !nodeReady(n) {
			continue
		}
		for _, a := range n.Status.Addresses {
			switch a.Type {
			case corev1.NodeExternalIP, corev1.NodeExternalDNS:
				return a.Address
			case corev1.NodeInternalIP:
				if internal == "" {
					internal = a.Address
				}
			}
		}
	}
	return internal
}

func nodeReady(n corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
