package challenge

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/challenge-operator/challenge-operator/internal/endpoint"
)

// route reads the TLSRoute or HTTPRoute named key, if there is one, and
// where its Gateway serves it; nil without a route.
func (o *Observer) route(ctx context.Context, key client.ObjectKey, https bool) (*endpoint.Route, error) {
	var spec gatewayv1.CommonRouteSpec
	var hostnames []gatewayv1.Hostname
	r := &endpoint.Route{TLS: true}
	tls := &gatewayv1.TLSRoute{}
	err := o.Reader.Get(ctx, key, tls)
	switch {
	case err == nil:
		spec, hostnames = tls.Spec.CommonRouteSpec, tls.Spec.Hostnames
	case apierrors.IsNotFound(err):
		http := &gatewayv1.HTTPRoute{}
		if err := o.Reader.Get(ctx, key, http); err != nil {
			return nil, client.IgnoreNotFound(err)
		}
		spec, hostnames, r.HTTP, r.TLS = http.Spec.CommonRouteSpec, http.Spec.Hostnames, true, https
	default:
		return nil, fmt.Errorf("reading TLSRoute %s: %w", key, err)
	}
	if len(hostnames) == 0 || len(spec.ParentRefs) == 0 {
		return r, nil
	}
	r.Host = string(hostnames[0])
	parent := spec.ParentRefs[0]
	gwKey := client.ObjectKey{Namespace: key.Namespace, Name: string(parent.Name)}
	if parent.Namespace != nil {
		gwKey.Namespace = string(*parent.Namespace)
	}
	gw := &gatewayv1.Gateway{}
	if err := o.Reader.Get(ctx, gwKey, gw); err != nil {
		// A Gateway not (yet) there leaves the endpoint pending.
		return r, client.IgnoreNotFound(err)
	}
	if l, ok := endpoint.Listener(gw, r, parent.SectionName); ok {
		r.Port = l.Port
	}
	return r, nil
}
