package operator

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"

	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"helm.sh/helm/v3/pkg/kube"
	"helm.sh/helm/v3/pkg/postrender"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/identity"
	"github.com/challenge-operator/challenge-operator/internal/policy"
	"github.com/challenge-operator/challenge-operator/internal/values"
)

// gate is the third line of defence, after the CRD schema and the chart's
// quoting: it judges what Helm rendered for a Challenge against the policy
// before anything is applied. What it holds a render to is what the
// translator computed with the values of that render (values.Rendered), handed
// over through renders for as long as the Challenge's reconcile runs.
type gate struct {
	// reader reads the instances' Ingresses from the cache.
	reader client.Reader
	// namespacePerInstance renders each instance into a namespace of its own.
	namespacePerInstance bool
	// renders holds what the translator expects of each render in progress.
	renders *renders
}

// provider is the helm-operator-plugins post-renderer provider. Helm's
// action client is made before the values are translated, so the gate's
// renderer looks up what to expect only when it runs.
func (g *gate) provider() helmclient.PostRendererProvider {
	return func(_ meta.RESTMapper, _ kube.Interface, obj client.Object) postrender.PostRenderer {
		return gateRenderer{gate: g, obj: obj}
	}
}

// gateRenderer judges one render of obj.
type gateRenderer struct {
	gate *gate
	obj  client.Object
}

func (r gateRenderer) Run(in *bytes.Buffer) (*bytes.Buffer, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	expected, err := r.gate.expected(ctx, r.obj)
	if err != nil {
		return nil, err
	}
	return policy.PostRenderer{Instance: expected}.Run(in)
}

// expected is what the release of obj may contain in the render in
// progress: what the translator computed with its values.
func (g *gate) expected(ctx context.Context, obj client.Object) (policy.Instance, error) {
	key := client.ObjectKeyFromObject(obj)
	in, ok := g.renders.get(key)
	if !ok {
		// Helm renders only after the translator: never without its values.
		return policy.Instance{}, fmt.Errorf("policy gate: no values were translated for Challenge %s in this reconcile", key)
	}
	in.HostTaken = g.hostTaken(ctx, key)
	return in, nil
}

// checkRecord judges a stored release record of obj: with applies, as the
// gate judges a render; otherwise only whether every object it lists is the
// instance's own (kind, name, namespace), which holds whatever the policy in
// force and the template have become since the record was written.
func (g *gate) checkRecord(ctx context.Context, obj client.Object, manifest string, applies bool) error {
	if applies {
		in, err := g.expected(ctx, obj)
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
	in.OwnerAnnotations = values.OwnerAnnotations(ch)
	if g.namespacePerInstance {
		in.Namespace = identity.Namespace(ch)
		if in.Quota, in.LimitRange, err = values.NamespaceBounds(0); err != nil {
			return err
		}
	}
	return policy.CheckIdentity([]byte(manifest), in)
}

// hostTaken reports whether another instance's Ingress already serves a host.
func (g *gate) hostTaken(ctx context.Context, instance types.NamespacedName) func(string) bool {
	return func(host string) bool {
		var list networkingv1.IngressList
		if err := g.reader.List(ctx, &list); err != nil {
			return true // unknown is taken: refuse rather than risk a takeover
		}
		for i := range list.Items {
			ing := &list.Items[i]
			if ing.Labels[ctfv1alpha1.InstanceLabel] == instance.Name && ing.Labels[ctfv1alpha1.InstanceNamespaceLabel] == instance.Namespace {
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

// renders hands the gate what the translator computed for the render in
// progress of each Challenge, for as long as its reconcile runs: the
// post-renderer and the drift repair run inside the Helm reconcile, after
// its translation.
type renders struct{ inProgress sync.Map } // types.NamespacedName -> policy.Instance

func (r *renders) put(key types.NamespacedName, in policy.Instance) { r.inProgress.Store(key, in) }

func (r *renders) get(key types.NamespacedName) (policy.Instance, bool) {
	v, ok := r.inProgress.Load(key)
	if !ok {
		return policy.Instance{}, false
	}
	return v.(policy.Instance), true
}

// scoped runs the Helm reconciler, then forgets what its render expected.
// A Challenge is reconciled by one worker of one controller at a time, so
// no other reconcile of it can be between its translation and its render.
func (r *renders) scoped(helm reconcile.Reconciler) reconcile.Reconciler {
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		defer r.inProgress.Delete(req.NamespacedName)
		return helm.Reconcile(ctx, req)
	})
}
