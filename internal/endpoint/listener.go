package endpoint

import (
	"strings"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Listener picks the Gateway's listener that serves the route's host: of
// the section it names, if any, the first of the route's protocol (TLS for a
// TLSRoute, HTTP or HTTPS for an HTTPRoute) whose hostname covers the host.
func Listener(gw *gatewayv1.Gateway, r *Route, section *gatewayv1.SectionName) (gatewayv1.Listener, bool) {
	proto := gatewayv1.TLSProtocolType
	switch {
	case r.HTTP && r.TLS:
		proto = gatewayv1.HTTPSProtocolType
	case r.HTTP:
		proto = gatewayv1.HTTPProtocolType
	}
	for _, l := range gw.Spec.Listeners {
		named := section == nil || l.Name == *section
		if named && l.Protocol == proto && covers(l.Hostname, r.Host) {
			return l, true
		}
	}
	return gatewayv1.Listener{}, false
}

// covers reports whether a listener's hostname (none: every host; a
// wildcard: one label or more under it) matches host.
func covers(listener *gatewayv1.Hostname, host string) bool {
	if listener == nil || *listener == "" {
		return true
	}
	l := string(*listener)
	if suffix, ok := strings.CutPrefix(l, "*"); ok {
		return strings.HasSuffix(host, suffix) && len(host) > len(suffix)
	}
	return l == host
}

// URLPort is the port a URL of scheme http (https when tls) must name to
// reach port: 0 for the scheme's own, which a browser leaves out.
func URLPort(port int32, tls bool) int32 {
	if (!tls && port == 80) || (tls && port == 443) {
		return 0
	}
	return port
}
