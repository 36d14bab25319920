// Package policyhelm adapts the policy engine to Helm's post-renderer: policy
// is the engine, policyhelm puts it between the embedded Helm reconciler and
// the cluster. As Helm's post-renderer it judges each render of a Challenge's
// release by what the translator expected of that render, and writes the
// objects that passed with their owners; it also judges each stored release
// record before the reconciler acts on it.
package policyhelm

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/operator-framework/helm-operator-plugins/pkg/manifestutil"
	"helm.sh/helm/v3/pkg/postrender"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/yaml"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/helmobject"
	"github.com/challenge-operator/challenge-operator/internal/identity"
	"github.com/challenge-operator/challenge-operator/internal/policy"
	"github.com/challenge-operator/challenge-operator/internal/values"
)

// Gate is the third line of defence, after the CRD schema and the chart's
// quoting: it judges what Helm rendered for a Challenge against the policy
// before anything is applied. What it holds a render to is what the
// translator computed with the values of that render (values.Rendered),
// handed over with Expect for as long as the Challenge's reconcile runs
// (Scoped).
type Gate struct {
	// Reader reads the instances' Ingresses from the cache.
	Reader client.Reader
	// NamespacePerInstance renders each instance into a namespace of its own.
	NamespacePerInstance bool

	// inProgress holds what the translator expects of each render in
	// progress, by Challenge: types.NamespacedName -> policy.Instance.
	inProgress sync.Map
}

// PostRenderer is the one post-renderer of obj's installs and upgrades
// (action.ClientGetter's PostRenderer). Helm's action client is made before
// the values are translated, so it looks up what to expect only when it runs.
func (g *Gate) PostRenderer(obj client.Object) postrender.PostRenderer {
	return gateRenderer{gate: g, obj: obj}
}

// gateRenderer judges one render of obj, then writes the objects that
// passed, each naming obj as its owner. It takes the place of
// helm-operator-plugins' owner post-renderer, which parsed the manifest
// once more, through Helm's builder, to write the same owners.
type gateRenderer struct {
	gate *Gate
	obj  client.Object
}

func (r gateRenderer) Run(in *bytes.Buffer) (*bytes.Buffer, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	expected, err := r.gate.expected(ctx, r.obj)
	if err != nil {
		return nil, err
	}
	if in == nil {
		in = new(bytes.Buffer)
	}
	objs, err := policy.Passed(in.Bytes(), expected)
	if err != nil {
		return nil, err
	}
	return owned(objs, r.obj)
}

// owned writes objs as the YAML documents Helm applies, each naming the
// Challenge owner, byte for byte as helm-operator-plugins' owner
// post-renderer wrote them (from the documents as read, which is what
// Helm's builder gave it): an object in the Challenge's namespace by its
// controller reference, one elsewhere (the namespace of its own and what is
// in it) or kept by Helm's resource policy by the owner annotations its
// handler maps back.
func owned(objs []*unstructured.Unstructured, owner client.Object) (*bytes.Buffer, error) {
	ref := metav1.NewControllerRef(owner, ctfv1alpha1.GroupVersion.WithKind("Challenge"))
	out := new(bytes.Buffer)
	for _, u := range objs {
		if u.GetNamespace() == owner.GetNamespace() && !manifestutil.HasResourcePolicyKeep(u.GetAnnotations()) {
			u.SetOwnerReferences(append(u.GetOwnerReferences(), *ref))
		} else {
			annotations := u.GetAnnotations()
			if annotations == nil {
				annotations = map[string]string{}
			}
			maps.Copy(annotations, values.OwnerAnnotations(owner))
			u.SetAnnotations(annotations)
		}
		doc, err := yaml.Marshal(u.Object)
		if err != nil {
			return nil, err
		}
		out.WriteString("---\n")
		out.Write(doc)
	}
	return out, nil
}

// expected is what the release of obj may contain in the render in
// progress: what the translator computed with its values.
func (g *Gate) expected(ctx context.Context, obj client.Object) (policy.Instance, error) {
	key := client.ObjectKeyFromObject(obj)
	in, ok := g.get(key)
	if !ok {
		// Helm renders only after the translator: never without its values.
		return policy.Instance{}, fmt.Errorf("policy gate: no values were translated for Challenge %s in this reconcile", key)
	}
	in.HostTaken = g.hostTaken(ctx, key)
	return in, nil
}

// CheckRecord judges a stored release record of obj: with applies, as the
// gate judges a render; otherwise only whether every object it lists is the
// instance's own (kind, name, namespace), which holds whatever the policy in
// force and the template have become since the record was written.
func (g *Gate) CheckRecord(ctx context.Context, obj client.Object, manifest string, applies bool) error {
	if applies {
		in, err := g.expected(ctx, obj)
		if err != nil {
			return err
		}
		return policy.Check([]byte(manifest), in)
	}
	ch, err := helmobject.Challenge(obj)
	if err != nil {
		return err
	}
	in := policy.Instance{
		Release:      ch.Name,
		Namespace:    ch.Namespace,
		OwnNamespace: g.NamespacePerInstance,
		Labels:       identity.Labels(ch, nil),
		Workloads:    []policy.Workload{{Labels: identity.Labels(ch, nil), Selector: identity.Selector(ch), Exposed: true}},
		FlagSecret:   identity.FlagSecret(ch.Name),
		AnyComponent: true,
	}
	in.OwnerAnnotations = values.OwnerAnnotations(ch)
	if g.NamespacePerInstance {
		in.Namespace = identity.Namespace(ch)
		if in.Quota, in.LimitRange, err = values.NamespaceBounds(0); err != nil {
			return err
		}
	}
	return policy.CheckIdentity([]byte(manifest), in)
}

// hostTaken reports whether another instance's Ingress already serves a host.
func (g *Gate) hostTaken(ctx context.Context, instance types.NamespacedName) func(string) bool {
	return func(host string) bool {
		var list networkingv1.IngressList
		if err := g.Reader.List(ctx, &list); err != nil {
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

// Expect hands the gate what the render in progress of the Challenge key
// may contain: what the translator computed with its values.
func (g *Gate) Expect(key types.NamespacedName, in policy.Instance) { g.inProgress.Store(key, in) }

func (g *Gate) get(key types.NamespacedName) (policy.Instance, bool) {
	v, ok := g.inProgress.Load(key)
	if !ok {
		return policy.Instance{}, false
	}
	return v.(policy.Instance), true
}

// Scoped runs helm, the Helm reconciler, then forgets what its render
// expected: the post-renderer and the drift repair run inside the Helm
// reconcile, after its translation. A Challenge is reconciled by one worker
// of one controller at a time, so no other reconcile of it can come between
// its translation and its render.
func (g *Gate) Scoped(helm reconcile.Reconciler) reconcile.Reconciler {
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		defer g.inProgress.Delete(req.NamespacedName)
		return helm.Reconcile(ctx, req)
	})
}
