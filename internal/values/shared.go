package values

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
)

// SharedService is a Service of the organiser's that instances may reach: its
// pods, selected in its namespace, on the ports it serves.
type SharedService struct {
	Namespace string            `json:"namespace"`
	Selector  map[string]string `json:"selector"`
	Ports     []SharedPort      `json:"ports"`
}

// SharedPort is a port of a shared Service's pods: a number or a name.
type SharedPort struct {
	Port     intstr.IntOrString `json:"port"`
	Protocol corev1.Protocol    `json:"protocol"`
}

// SharedServices reads the Services tmpl lets its instances reach, each from
// one of the namespaces allowed. A Service without a selector is refused:
// its endpoints could be any address. One that does not exist (yet) is an
// error the reconciler retries, naming it.
func SharedServices(ctx context.Context, reader client.Reader, tmpl *ctfv1alpha1.ChallengeTemplate, allowed []string) ([]SharedService, error) {
	if tmpl == nil {
		return nil, nil
	}
	out := make([]SharedService, 0, len(tmpl.Spec.SharedServices))
	for _, ref := range tmpl.Spec.SharedServices {
		if !slices.Contains(allowed, ref.Namespace) {
			return nil, lifecycle.Errorf(lifecycle.ReasonPolicyViolation, "shared-service: ChallengeTemplate %s names Service %s/%s; allowed namespaces (--shared-service-namespaces): %s",
				tmpl.Name, ref.Namespace, ref.Name, describeAllowed(allowed))
		}
		svc := &corev1.Service{}
		err := reader.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, svc)
		if apierrors.IsNotFound(err) {
			// Not a terminal error: the organiser may create it next.
			return nil, fmt.Errorf("%s: Service %s/%s, which ChallengeTemplate %s lets its instances reach, does not exist",
				lifecycle.ReasonSharedServiceNotFound, ref.Namespace, ref.Name, tmpl.Name)
		}
		if err != nil {
			return nil, fmt.Errorf("reading shared Service %s/%s: %w", ref.Namespace, ref.Name, err)
		}
		if len(svc.Spec.Selector) == 0 || len(svc.Spec.Ports) == 0 {
			return nil, lifecycle.Errorf(lifecycle.ReasonPolicyViolation,
				"shared-service: Service %s/%s needs a selector and ports: its endpoints could otherwise be any address, on any port", ref.Namespace, ref.Name)
		}
		shared := SharedService{Namespace: ref.Namespace, Selector: svc.Spec.Selector}
		for _, p := range svc.Spec.Ports {
			port := p.TargetPort
			if (port.Type == intstr.Int && port.IntVal == 0) || (port.Type == intstr.String && port.StrVal == "") {
				port = intstr.FromInt32(p.Port) // unset: the Service's own port
			}
			shared.Ports = append(shared.Ports, SharedPort{Port: port, Protocol: cmp.Or(p.Protocol, corev1.ProtocolTCP)})
		}
		out = append(out, shared)
	}
	return out, nil
}
