package endpoint

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

func service(typ corev1.ServiceType, ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ctf"},
		Spec:       corev1.ServiceSpec{Type: typ, ClusterIP: "10.96.0.10", Ports: ports},
	}
}

var (
	httpPort = corev1.ServicePort{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP, NodePort: 30080}
	ncPort   = corev1.ServicePort{Name: "nc", Port: 1337, Protocol: corev1.ProtocolTCP, NodePort: 31337}
	dnsPort  = corev1.ServicePort{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP, NodePort: 30053}
)

func TestFor(t *testing.T) {
	lb := service(corev1.ServiceTypeLoadBalancer, ncPort)
	lb.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "203.0.113.7"}}
	lbName := service(corev1.ServiceTypeLoadBalancer, ncPort)
	lbName.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{Hostname: "lb.example"}}
	noClusterIP := service(corev1.ServiceTypeClusterIP, ncPort)
	noClusterIP.Spec.ClusterIP = ""
	ing := &networkingv1.Ingress{Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: "web.ctf.example"}}}}
	tlsIng := ing.DeepCopy()
	tlsIng.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{"web.ctf.example"}}}

	tests := []struct {
		name string
		in   Inputs
		want []ctfv1alpha1.Endpoint
	}{
		{"no service", Inputs{}, nil},
		{"cluster IP, service DNS name", Inputs{Service: service(corev1.ServiceTypeClusterIP, ncPort)},
			[]ctfv1alpha1.Endpoint{{Name: "nc", Host: "web.ctf.svc", Port: 1337, Protocol: "TCP", Address: "web.ctf.svc:1337"}}},
		{"cluster IP not allocated yet", Inputs{Service: noClusterIP}, nil},
		{"http port gets a URL", Inputs{Service: service(corev1.ServiceTypeClusterIP, httpPort)},
			[]ctfv1alpha1.Endpoint{{Name: "http", Host: "web.ctf.svc", Port: 8080, Protocol: "TCP", Address: "web.ctf.svc:8080", URL: "http://web.ctf.svc:8080/"}}},
		{"node port on the node address", Inputs{Service: service(corev1.ServiceTypeNodePort, ncPort, dnsPort), NodeAddress: "198.51.100.4"},
			[]ctfv1alpha1.Endpoint{
				{Name: "nc", Host: "198.51.100.4", Port: 31337, Protocol: "TCP", Address: "198.51.100.4:31337"},
				{Name: "dns", Host: "198.51.100.4", Port: 30053, Protocol: "UDP", Address: "198.51.100.4:30053"},
			}},
		{"node port without a node address", Inputs{Service: service(corev1.ServiceTypeNodePort, ncPort)}, nil},
		{"load balancer IP", Inputs{Service: lb},
			[]ctfv1alpha1.Endpoint{{Name: "nc", Host: "203.0.113.7", Port: 1337, Protocol: "TCP", Address: "203.0.113.7:1337"}}},
		{"load balancer hostname", Inputs{Service: lbName},
			[]ctfv1alpha1.Endpoint{{Name: "nc", Host: "lb.example", Port: 1337, Protocol: "TCP", Address: "lb.example:1337"}}},
		{"load balancer pending", Inputs{Service: service(corev1.ServiceTypeLoadBalancer, ncPort)}, nil},
		{"ingress for the primary port", Inputs{Service: service(corev1.ServiceTypeClusterIP, httpPort, ncPort), Ingress: ing},
			[]ctfv1alpha1.Endpoint{
				{Name: "http", Host: "web.ctf.example", Port: 80, Protocol: "TCP", Address: "web.ctf.example:80", URL: "http://web.ctf.example/"},
				{Name: "nc", Host: "web.ctf.svc", Port: 1337, Protocol: "TCP", Address: "web.ctf.svc:1337"},
			}},
		{"ingress with TLS", Inputs{Service: service(corev1.ServiceTypeClusterIP, httpPort), Ingress: tlsIng},
			[]ctfv1alpha1.Endpoint{{Name: "http", Host: "web.ctf.example", Port: 443, Protocol: "TCP", Address: "web.ctf.example:443", URL: "https://web.ctf.example/"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(For(tt.in)).To(Equal(tt.want))
		})
	}
}

func TestNodeAddress(t *testing.T) {
	node := func(ready corev1.ConditionStatus, addrs ...corev1.NodeAddress) corev1.Node {
		return corev1.Node{Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}},
			Addresses:  addrs,
		}}
	}
	internal := corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.0.0.5"}
	external := corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: "203.0.113.9"}
	g := NewWithT(t)
	g.Expect(NodeAddress(nil)).To(BeEmpty())
	g.Expect(NodeAddress([]corev1.Node{node(corev1.ConditionTrue, internal)})).To(Equal("10.0.0.5"))
	g.Expect(NodeAddress([]corev1.Node{node(corev1.ConditionTrue, internal, external)})).To(Equal("203.0.113.9"))
	g.Expect(NodeAddress([]corev1.Node{node(corev1.ConditionFalse, external), node(corev1.ConditionTrue, internal)})).To(Equal("10.0.0.5"))
}

// TestRouteEndpoints: a TLSRoute is reached with ncat --ssl on the Gateway's
// port, an HTTPRoute by its URL (the scheme's own port left out); a route
// whose listener is not known yet has no endpoint.
func TestRouteEndpoints(t *testing.T) {
	const host = "web-0123456789.ctf.example"
	svc := service(corev1.ServiceTypeClusterIP, ncPort)
	for _, tt := range []struct {
		name  string
		route Route
		want  []ctfv1alpha1.Endpoint
	}{
		{"TCP inside TLS", Route{Host: host, Port: 443, TLS: true}, []ctfv1alpha1.Endpoint{{Name: "nc", Host: host, Port: 443, Protocol: "TCP",
			Address: host + ":443", Connect: "ncat --ssl " + host + " 443"}}},
		{"HTTPS on 443", Route{Host: host, Port: 443, TLS: true, HTTP: true}, []ctfv1alpha1.Endpoint{{Name: "nc", Host: host, Port: 443, Protocol: "TCP",
			Address: host + ":443", URL: "https://" + host + "/"}}},
		{"HTTP on 8080", Route{Host: host, Port: 8080, HTTP: true}, []ctfv1alpha1.Endpoint{{Name: "nc", Host: host, Port: 8080, Protocol: "TCP",
			Address: host + ":8080", URL: "http://" + host + ":8080/"}}},
		{"no listener yet", Route{Host: host, TLS: true}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(For(Inputs{Service: svc, Route: &tt.route})).To(Equal(tt.want))
		})
	}
}
