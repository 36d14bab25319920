package harness

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// CreateGateway creates the Gateway ref names, in a namespace of its own,
// as an admin would list it in --gateways: for every host under
// IngressDomain, a TLS listener on 443 (passthrough), an HTTP one on 80 and
// an HTTPS one on 8443, routes allowed from every namespace.
func CreateGateway(ctx context.Context, c client.Client, ref ctfv1alpha1.GatewayRef) error {
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ref.Namespace}}); err != nil {
		return err
	}
	wildcard := ptr.To(gatewayv1.Hostname("*." + IngressDomain))
	all := &gatewayv1.AllowedRoutes{Namespaces: &gatewayv1.RouteNamespaces{From: ptr.To(gatewayv1.NamespacesFromAll)}}
	gw := &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: ref.Name},
		Spec: gatewayv1.GatewaySpec{GatewayClassName: "ctf", Listeners: []gatewayv1.Listener{
			{Name: "tls", Port: 443, Protocol: gatewayv1.TLSProtocolType, Hostname: wildcard, AllowedRoutes: all,
				TLS: &gatewayv1.ListenerTLSConfig{Mode: ptr.To(gatewayv1.TLSModePassthrough)}},
			{Name: "http", Port: 80, Protocol: gatewayv1.HTTPProtocolType, Hostname: wildcard, AllowedRoutes: all},
			{Name: "https", Port: 8443, Protocol: gatewayv1.HTTPSProtocolType, Hostname: wildcard, AllowedRoutes: all,
				TLS: &gatewayv1.ListenerTLSConfig{Mode: ptr.To(gatewayv1.TLSModeTerminate),
					CertificateRefs: []gatewayv1.SecretObjectReference{{Name: "wildcard-tls"}}}},
		}},
	}
	return c.Create(ctx, gw)
}
