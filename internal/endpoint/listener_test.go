package endpoint

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// TestListener: the listener of the route's protocol whose hostname
// covers the instance's host, within the section the route names.
func TestListener(t *testing.T) {
	wildcard := ptr.To(gatewayv1.Hostname("*.ctf.example"))
	other := ptr.To(gatewayv1.Hostname("*.other.example"))
	gw := &gatewayv1.Gateway{Spec: gatewayv1.GatewaySpec{Listeners: []gatewayv1.Listener{
		{Name: "tls-other", Port: 9443, Protocol: gatewayv1.TLSProtocolType, Hostname: other},
		{Name: "tls", Port: 443, Protocol: gatewayv1.TLSProtocolType, Hostname: wildcard},
		{Name: "tls-any", Port: 4443, Protocol: gatewayv1.TLSProtocolType},
		{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType, Hostname: wildcard},
		{Name: "https", Port: 8443, Protocol: gatewayv1.HTTPSProtocolType, Hostname: wildcard},
	}}}
	const host = "web-0123456789.ctf.example"
	for _, tt := range []struct {
		name    string
		route   Route
		section *gatewayv1.SectionName
		want    gatewayv1.PortNumber // 0: none
	}{
		{"TLS, the listener covering the host", Route{Host: host, TLS: true}, nil, 443},
		{"TLS, the section named", Route{Host: host, TLS: true}, ptr.To(gatewayv1.SectionName("tls-any")), 4443},
		{"TLS, a section not covering the host", Route{Host: host, TLS: true}, ptr.To(gatewayv1.SectionName("tls-other")), 0},
		{"HTTP", Route{Host: host, HTTP: true}, nil, 80},
		{"HTTPS", Route{Host: host, HTTP: true, TLS: true}, nil, 8443},
		{"the domain itself is not under its wildcard", Route{Host: "ctf.example", HTTP: true}, nil, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, ok := Listener(gw, &tt.route, tt.section)
			g := NewWithT(t)
			g.Expect(ok).To(Equal(tt.want != 0))
			g.Expect(l.Port).To(Equal(tt.want))
		})
	}
}
