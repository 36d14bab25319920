package operator

import (
	"bytes"
	"context"
	"fmt"
	"time"

	sdkhandler "github.com/operator-framework/operator-lib/handler"

	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/postrender"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/identity"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
	"github.com/challenge-operator/challenge-operator/internal/policy"
	"github.com/challenge-operator/challenge-operator/internal/pool"
	"github.com/challenge-operator/challenge-operator/internal/security"
	"github.com/challenge-operator/challenge-operator/internal/values"
)

// gate is the third line of defence, after the CRD schema and the chart's
// quoting: it judges what Helm rendered for a Challenge against the policy
// before anything is applied.
type gate struct {
	// reader reads templates and the instances' Ingresses from the cache.
	reader client.Reader
	// limits are the operator-wide ceilings; a template's policy overrides them.
	limits policy.Limits
	keys   policy.Keys
	// security bounds what templates may grant their instances.
	security security.Bounds
	// namespacePerInstance renders each instance into a namespace of its own.
	namespacePerInstance bool
	// sharedNamespaces are where the Services templates let instances reach may be.
	sharedNamespaces []string
	// organiserReader reads those Services, uncached: the cache holds instances' objects only.
	organiserReader client.Reader
	// pools tells which instances are pooled ones a team claimed.
	pools *pool.Pools
}

// provider is the helm-operator-plugins post-renderer provider.
func (g *gate) provider() helmclient.PostRendererProvider {
	return func(_ meta.RESTMapper, _ kube.Interface, obj client.Object) postrender.PostRenderer {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		in, err := g.instanceFor(ctx, obj)
		if err != nil {
			return refusingRenderer{err}
		}
		return policy.PostRenderer{Instance: in}
	}
}

// instanceFor says what the release of obj may contain.
func (g *gate) instanceFor(ctx context.Context, obj client.Object) (policy.Instance, error) {
	ch, err := asChallenge(obj)
	if err != nil {
		return policy.Instance{}, err
	}
	var tmpl *ctfv1alpha1.ChallengeTemplate
	if ch.Spec.Template != "" {
		tmpl = &ctfv1alpha1.ChallengeTemplate{}
		err := g.reader.Get(ctx, client.ObjectKey{Name: ch.Spec.Template}, tmpl)
		if apierrors.IsNotFound(err) {
			// Gone since the values were translated: the translator's own verdict.
			return policy.Instance{}, lifecycle.Errorf(lifecycle.ReasonTemplateNotFound, "ChallengeTemplate %q does not exist", ch.Spec.Template)
		}
		if err != nil {
			return policy.Instance{}, fmt.Errorf("reading ChallengeTemplate %s for the policy gate: %w", ch.Spec.Template, err)
		}
	}
	return g.instance(ctx, ch, tmpl)
}

// instance says what the release of ch, an instance of tmpl (nil without a
// template), may contain.
func (g *gate) instance(ctx context.Context, ch *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate) (policy.Instance, error) {
	limits, err := limitsFor(g.limits, tmpl)
	if err != nil {
		return policy.Instance{}, err
	}
	if tmpl != nil {
		// Again here: the template may have changed since its values were translated.
		if err := g.security.CheckTemplate(tmpl); err != nil {
			return policy.Instance{}, err
		}
	}
	podSecurity := security.ForTemplate(tmpl)
	in := policy.Instance{
		Security:     &podSecurity,
		Release:      ch.Name,
		Namespace:    ch.Namespace,
		OwnNamespace: g.namespacePerInstance,
		Labels:       identity.Labels(ch, tmpl),
		Selector:     identity.Selector(ch),
		Limits:       limits,
		Keys:         g.keys,
		Host:         identity.Host(ch, limits.IngressDomain),
		HostTaken:    g.hostTaken(ctx, ch),
	}
	in.OwnerAnnotations = ownerAnnotations(ch)
	if tmpl != nil {
		in.Components = components(ch, tmpl, limits.IngressDomain)
		if team := g.pools.ClaimedBy(ch); team != "" {
			claimedIdentity(&in, ch, team)
		}
		if len(in.Components) > 0 {
			in.InstancePods = identity.InstancePods(ch)
		}
		shared, err := values.SharedServices(ctx, g.organiserReader, tmpl, g.sharedNamespaces)
		if err != nil {
			return policy.Instance{}, err
		}
		for _, s := range shared {
			in.SharedServices = append(in.SharedServices, policy.SharedPeer{Namespace: s.Namespace, Selector: s.Selector})
		}
	}
	if g.namespacePerInstance {
		in.Namespace = identity.Namespace(ch)
		if in.Quota, in.LimitRange, err = values.NamespaceBounds(len(in.Components)); err != nil {
			return policy.Instance{}, err
		}
	}
	if tmpl != nil && (tmpl.Spec.Flag != nil || len(tmpl.Spec.SecretEnv) > 0) {
		in.FlagSecret = identity.FlagSecret(ch.Name)
	}
	return in, nil
}

// claimedIdentity makes in the identity of a pooled instance ch that
// team's Challenge claimed: its objects carry the team's participant, its
// pods the one they started with.
func claimedIdentity(in *policy.Instance, ch *ctfv1alpha1.Challenge, team string) {
	in.PodParticipant = ch.Spec.Participant
	in.Labels[ctfv1alpha1.ParticipantLabel] = team
	for i := range in.Components {
		in.Components[i].Labels[ctfv1alpha1.ParticipantLabel] = team
	}
}

// components says what each of tmpl's components in ch may be.
func components(ch *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate, domain string) []policy.Component {
	out := make([]policy.Component, 0, len(tmpl.Spec.Components))
	for i := range tmpl.Spec.Components {
		c := &tmpl.Spec.Components[i]
		sec := security.ForComponent(c)
		out = append(out, policy.Component{Name: c.Name, Labels: identity.ComponentLabels(ch, tmpl, c.Name),
			Selector: identity.ComponentSelector(ch, c.Name), Security: &sec, Exposed: values.Exposed(c), Host: identity.ComponentHost(ch, c.Name, domain)})
	}
	return out
}

// ownerAnnotations are what helm-operator-plugins' owner post-renderer
// writes on the instance's cluster-scoped objects (operator-lib's
// annotation handler keys) to name ch.
func ownerAnnotations(ch *ctfv1alpha1.Challenge) map[string]string {
	return map[string]string{
		sdkhandler.NamespacedNameAnnotation: ch.Namespace + "/" + ch.Name,
		sdkhandler.TypeAnnotation:           "Challenge." + ctfv1alpha1.GroupVersion.Group,
	}
}

// checkRecord judges a stored release record of obj: with applies, as the
// gate judges a render; otherwise only whether every object it lists is the
// instance's own (kind, name, namespace), which holds whatever the policy in
// force and the template have become since the record was written.
func (g *gate) checkRecord(ctx context.Context, obj client.Object, manifest string, applies bool) error {
	if applies {
		in, err := g.instanceFor(ctx, obj)
		if err != nil {
			return err
		}
		return policy.Check([]byte(manifest), in)
	}
	ch, err := asChallenge(obj)
	if err != nil {
		return err
	}
	in := policy.Instance{
		Release:      ch.Name,
		Namespace:    ch.Namespace,
		OwnNamespace: g.namespacePerInstance,
		Labels:       identity.Labels(ch, nil),
		Selector:     identity.Selector(ch),
		FlagSecret:   identity.FlagSecret(ch.Name),
		AnyComponent: true,
	}
	in.OwnerAnnotations = ownerAnnotations(ch)
	if g.namespacePerInstance {
		in.Namespace = identity.Namespace(ch)
		if in.Quota, in.LimitRange, err = values.NamespaceBounds(0); err != nil {
			return err
		}
	}
	return policy.CheckIdentity([]byte(manifest), in)
}

// limitsFor overlays a template's policy on the operator's limits.
func limitsFor(base policy.Limits, tmpl *ctfv1alpha1.ChallengeTemplate) (policy.Limits, error) {
	out := base
	if tmpl == nil || tmpl.Spec.Policy == nil {
		return out, nil
	}
	p := tmpl.Spec.Policy
	for _, q := range []struct {
		from *ctfv1alpha1.Quantity
		to   *resource.Quantity
	}{{p.MaxCPU, &out.CPU}, {p.MaxMemory, &out.Memory}} {
		if q.from == nil {
			continue
		}
		v, err := q.from.Parse()
		if err != nil {
			return out, fmt.Errorf("ChallengeTemplate %s: policy: %w", tmpl.Name, err)
		}
		*q.to = v
	}
	if p.MaxEphemeralStorage != nil {
		v, err := p.MaxEphemeralStorage.Parse()
		if err != nil {
			return out, fmt.Errorf("ChallengeTemplate %s: policy: %w", tmpl.Name, err)
		}
		// Only lower: the operator's ceiling (zero: none) bounds the node's disk.
		if out.EphemeralStorage.IsZero() || v.Cmp(out.EphemeralStorage) < 0 {
			out.EphemeralStorage = v
		}
	}
	if p.MaxReplicas != nil {
		out.MaxReplicas = *p.MaxReplicas
	}
	out.AllowLoadBalancer = out.AllowLoadBalancer || p.LoadBalancer
	registries := make([]string, len(p.AllowedRegistries))
	for i, r := range p.AllowedRegistries {
		registries[i] = string(r)
	}
	var err error
	out.AllowedRegistries, err = policy.NarrowRegistries(tmpl.Name, base.AllowedRegistries, registries)
	return out, err
}

// hostTaken reports whether another instance's Ingress already serves a host.
func (g *gate) hostTaken(ctx context.Context, ch *ctfv1alpha1.Challenge) func(string) bool {
	return func(host string) bool {
		var list networkingv1.IngressList
		if err := g.reader.List(ctx, &list); err != nil {
			return true // unknown is taken: refuse rather than risk a takeover
		}
		for i := range list.Items {
			ing := &list.Items[i]
			if ing.Labels[ctfv1alpha1.InstanceLabel] == ch.Name && ing.Labels[ctfv1alpha1.InstanceNamespaceLabel] == ch.Namespace {
				continue
			}
			for _, r := range ing.Spec.Rules {
				if r.Host == host {
					return true
				}
			}
		}
		return false
	}
}

func asChallenge(obj client.Object) (*ctfv1alpha1.Challenge, error) {
	if ch, ok := obj.(*ctfv1alpha1.Challenge); ok {
		return ch, nil
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("policy gate: unexpected object %T", obj)
	}
	ch := &ctfv1alpha1.Challenge{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, ch); err != nil {
		return nil, fmt.Errorf("decoding Challenge %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return ch, nil
}

// refusingRenderer refuses every release: the gate could not decide.
type refusingRenderer struct{ err error }

func (r refusingRenderer) Run(*bytes.Buffer) (*bytes.Buffer, error) { return nil, r.err }
