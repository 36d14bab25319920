// Package challenge holds the controllers that reconcile a Challenge: the
// ones that run the embedded Helm reconciler on it (what starts a Helm
// reconcile, and in which order), the status controller and the status
// writer every status update of a Challenge goes through, with what they
// observe, expiry, the teardown an uninstall ends with, the recount of an
// instance namespace's quota, and the deletion of an instance namespace
// whose Challenge is gone.
package challenge

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/admission"
	"github.com/challenge-operator/challenge-operator/internal/controller/challengepool"
	"github.com/challenge-operator/challenge-operator/internal/endpoint"
	"github.com/challenge-operator/challenge-operator/internal/identity"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
	"github.com/challenge-operator/challenge-operator/internal/pool"
	"github.com/challenge-operator/challenge-operator/internal/values"
)

// Observer gathers what the lifecycle of a Challenge depends on.
type Observer struct {
	// Reader reads the release's objects, usually the manager's cache.
	Reader client.Reader
	// NodeAddress, when set, is the host of NodePort endpoints instead of a node's IP.
	NodeAddress string
	// NamespacePerInstance says instances run in namespaces of their own.
	NamespacePerInstance bool
	// Gateways says instances may be exposed by Gateway API routes, whose
	// kinds then exist.
	Gateways bool
	// Queue places instances waiting for capacity; nil for none.
	Queue *admission.Queue
	// Pools finds the pooled instance a Challenge claimed; nil for no pools.
	Pools *pool.Pools
	// Indexed says Reader is a cache that indexes Deployments and pods by
	// InstanceField: an instance's are then found without a pass over
	// every one of its namespace (measured, two thirds of the operator's CPU
	// with 9,000 instances in one namespace, and the reason each install
	// took longer as more were resident).
	Indexed bool
	// Rollouts stand in for the Deployments an upgrade changed until the
	// cache has them; nil for none.
	Rollouts *Rollouts
}

// InstanceField indexes an instance's Deployments and pods by its name
// (the instance label) in the manager's cache.
const InstanceField = "metadata.labels.instance"

// IndexInstance is InstanceField's index function.
func IndexInstance(o client.Object) []string {
	if name, ok := o.GetLabels()[ctfv1alpha1.InstanceLabel]; ok {
		return []string{name}
	}
	return nil
}

// ofInstance selects the objects of inst in its namespace, by index where
// there is one.
func (o *Observer) ofInstance(inst *ctfv1alpha1.Challenge) []client.ListOption {
	if o.Indexed {
		return []client.ListOption{client.InNamespace(o.namespace(inst)), client.MatchingFields{InstanceField: inst.Name}}
	}
	return []client.ListOption{client.InNamespace(o.namespace(inst)), client.MatchingLabels{ctfv1alpha1.InstanceLabel: inst.Name}}
}

// namespace is where the instance's objects live.
func (o *Observer) namespace(ch *ctfv1alpha1.Challenge) string {
	if o.NamespacePerInstance {
		return identity.Namespace(ch)
	}
	return ch.Namespace
}

// Observe reads the Challenge's workloads, Service, Ingress and nodes.
func (o *Observer) Observe(ctx context.Context, ch *ctfv1alpha1.Challenge) (lifecycle.Observation, error) {
	obs := lifecycle.Observation{
		Deleting:   !ch.DeletionTimestamp.IsZero(),
		Conditions: ch.Status.Conditions,
		Created:    ch.CreationTimestamp,
		RenewedAt:  ch.Spec.RenewedAt,
	}
	tmpl, err := o.template(ctx, ch)
	if err != nil {
		return obs, err
	}
	// The instance is the pooled one ch claimed, if it claimed one.
	inst := ch
	ref, pooled, err := o.Pools.Of(ctx, ch)
	if err != nil {
		return obs, err
	}
	if ref != nil {
		obs.PooledInstance, obs.PooledInstanceGone = ref, pooled == nil
		if pooled == nil {
			return obs, nil
		}
		inst = pooled
	}
	o.lifetime(ch, inst, tmpl, &obs)
	if ref == nil {
		if err := o.queuePosition(ctx, ch, tmpl, &obs); err != nil {
			return obs, err
		}
	}
	deployments, err := o.deployments(ctx, inst)
	if err != nil {
		return obs, err
	}
	if obs.Workloads, err = workloadsOf(deployments); err != nil {
		return obs, err
	}
	var pods corev1.PodList
	if err := o.Reader.List(ctx, &pods, append(o.ofInstance(inst), client.UnsafeDisableDeepCopy)...); err != nil {
		return obs, fmt.Errorf("listing pods of %s/%s: %w", inst.Namespace, inst.Name, err)
	}
	obs.PodProblems = append(lifecycle.DeploymentProblems(deployments), lifecycle.PodProblems(pods.Items)...)
	if ref != nil {
		// Nobody connects before the team's flags are in every pod: no
		// endpoint yet, nor while a pod that came since waits for them.
		obs.FlagsPending, obs.FlagsFailed = challengepool.ClaimFlags(tmpl, inst, ch.UID, pods.Items)
		if obs.FlagsPending || obs.FlagsFailed != "" {
			return obs, nil
		}
	}
	obs.Endpoints, err = o.endpoints(ctx, inst, tmpl)
	return obs, err
}

func (o *Observer) deployments(ctx context.Context, ch *ctfv1alpha1.Challenge) ([]appsv1.Deployment, error) {
	var list appsv1.DeploymentList
	if err := o.Reader.List(ctx, &list, append(o.ofInstance(ch), client.UnsafeDisableDeepCopy)...); err != nil {
		return nil, fmt.Errorf("listing Deployments of %s/%s: %w", ch.Namespace, ch.Name, err)
	}
	return o.Rollouts.Fresh(list.Items), nil
}

func workloadsOf(deployments []appsv1.Deployment) ([]lifecycle.Workload, error) {
	out := make([]lifecycle.Workload, 0, len(deployments))
	for i := range deployments {
		w, err := workloadOf(&deployments[i])
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, nil
}

// workloadOf asks kstatus whether dep has reached its desired state.
func workloadOf(dep *appsv1.Deployment) (lifecycle.Workload, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(kstatusView(dep))
	if err != nil {
		return lifecycle.Workload{}, fmt.Errorf("converting Deployment %s: %w", dep.Name, err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetKind("Deployment")
	u.SetAPIVersion("apps/v1")
	res, err := kstatus.Compute(u)
	if err != nil {
		return lifecycle.Workload{}, fmt.Errorf("computing status of Deployment %s: %w", dep.Name, err)
	}
	msg := res.Message
	if res.Status == kstatus.InProgressStatus {
		msg = progressOf(dep)
	}
	return lifecycle.Workload{Kind: "Deployment", Name: dep.Name, Component: dep.Labels[ctfv1alpha1.ComponentLabel], Status: res.Status, Message: msg}, nil
}

// kstatusView is what kstatus reads of a Deployment: its generation and
// deletion, spec.replicas and spec.progressDeadlineSeconds, and its status.
// Converting the pod template as well was most of the CPU of a status.
func kstatusView(dep *appsv1.Deployment) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: dep.Name, Namespace: dep.Namespace, Generation: dep.Generation, DeletionTimestamp: dep.DeletionTimestamp},
		Spec:       appsv1.DeploymentSpec{Replicas: dep.Spec.Replicas, ProgressDeadlineSeconds: dep.Spec.ProgressDeadlineSeconds},
		Status:     dep.Status,
	}
}

// progressOf says how far a Deployment on its way is, in one message that
// changes only when a replica becomes available. kstatus's own steps through
// "Replicas: 0/1", "Updated: 0/1", "Ready: 0/1" and "Available: 0/1", and each
// would be one more status write per instance while it starts.
func progressOf(dep *appsv1.Deployment) string {
	want := int32(1)
	if dep.Spec.Replicas != nil {
		want = *dep.Spec.Replicas
	}
	return fmt.Sprintf("%d/%d replicas available", dep.Status.AvailableReplicas, want)
}

// endpoints are where participants connect: the primary component's every
// port, then every exposed component of tmpl's (nil: none, or the template
// is gone); nil while one of them has no address yet.
func (o *Observer) endpoints(ctx context.Context, ch *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate) ([]ctfv1alpha1.Endpoint, error) {
	// HTTPS when the values ask for it, as CHALLENGE_URL says; not while the
	// template they are composed with is gone.
	https := (ch.Spec.Template == "" || tmpl != nil) && values.WantsTLS(ch, tmpl)
	var exposePorts []ctfv1alpha1.PortExposure
	if tmpl != nil {
		exposePorts = tmpl.Spec.ExposePorts
	}
	out, err := o.serviceEndpoints(ctx, ch, ch.Name, https, exposePorts)
	if err != nil || out == nil || tmpl == nil {
		return out, err
	}
	for i := range tmpl.Spec.Components {
		c := &tmpl.Spec.Components[i]
		if !values.Reachable(c) {
			continue
		}
		eps, err := o.serviceEndpoints(ctx, ch, identity.ComponentObject(ch.Name, c.Name), c.Expose != nil && c.Expose.TLS != nil, c.ExposePorts)
		if err != nil || eps == nil {
			return nil, err
		}
		for _, e := range eps {
			// A component reached by its exposePorts only shows those.
			if !values.Exposed(c) && !slices.ContainsFunc(c.ExposePorts, func(x ctfv1alpha1.PortExposure) bool { return x.Port == e.Name }) {
				continue
			}
			e.Component = c.Name
			out = append(out, e)
		}
	}
	return out, nil
}

// serviceEndpoints are the endpoints of the Service name and its Ingress or
// route, of the same name, and of the Ingress or route of each of its
// exposePorts; https says whether an HTTPRoute is served on its Gateway's
// HTTPS listener. nil while one of them is missing.
func (o *Observer) serviceEndpoints(ctx context.Context, ch *ctfv1alpha1.Challenge, name string, https bool, exposePorts []ctfv1alpha1.PortExposure) ([]ctfv1alpha1.Endpoint, error) {
	key := client.ObjectKey{Namespace: o.namespace(ch), Name: name}
	var in endpoint.Inputs
	svc := &corev1.Service{}
	if err := o.Reader.Get(ctx, key, svc); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	in.Service = svc
	switch svc.Spec.Type {
	case corev1.ServiceTypeNodePort:
		addr, err := o.nodeAddress(ctx)
		if err != nil {
			return nil, err
		}
		in.NodeAddress = addr
	case corev1.ServiceTypeClusterIP:
		if o.Gateways {
			route, err := o.route(ctx, key, https)
			if err != nil {
				return nil, err
			}
			if route != nil {
				in.Route = route
				break
			}
		}
		ing := &networkingv1.Ingress{}
		err := o.Reader.Get(ctx, key, ing)
		switch {
		case err == nil:
			in.Ingress = ing
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("reading Ingress %s: %w", key, err)
		}
	}
	for _, e := range exposePorts {
		portKey := client.ObjectKey{Namespace: key.Namespace, Name: identity.PortObject(name, e.Port)}
		if e.Type == ctfv1alpha1.ExposeIngress {
			ing := &networkingv1.Ingress{}
			if err := o.Reader.Get(ctx, portKey, ing); err != nil {
				return nil, client.IgnoreNotFound(err)
			}
			in.PortIngresses = mapWith(in.PortIngresses, e.Port, ing)
			continue
		}
		if !o.Gateways {
			return nil, nil
		}
		route, err := o.route(ctx, portKey, e.TLS != nil)
		if err != nil || route == nil {
			return nil, err
		}
		in.PortRoutes = mapWith(in.PortRoutes, e.Port, route)
	}
	return endpoint.For(in), nil
}

// mapWith is m with key set to v, made when nil.
func mapWith[V any](m map[string]V, key string, v V) map[string]V {
	if m == nil {
		m = map[string]V{}
	}
	m[key] = v
	return m
}

// template reads the Challenge's template: nil without one, or when it is
// gone (then nothing the template says is known).
func (o *Observer) template(ctx context.Context, ch *ctfv1alpha1.Challenge) (*ctfv1alpha1.ChallengeTemplate, error) {
	if ch.Spec.Template == "" {
		return nil, nil
	}
	tmpl := &ctfv1alpha1.ChallengeTemplate{}
	if err := o.Reader.Get(ctx, client.ObjectKey{Name: ch.Spec.Template}, tmpl); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return tmpl, nil
}

// queuePosition places an instance not installed yet in the queue for capacity.
func (o *Observer) queuePosition(ctx context.Context, ch *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate, obs *lifecycle.Observation) error {
	gone := ch.Spec.Template != "" && tmpl == nil
	if o.Queue == nil || gone || lifecycle.Installed(&ch.Status) || !ch.DeletionTimestamp.IsZero() || o.Pools.IsPooled(ch) {
		return nil
	}
	var err error
	obs.QueuePosition, err = o.Queue.Position(ctx, ch, tmpl)
	return err
}

// lifetime sets the instance's lifetime and renewal limit, from the
// Challenge or its template, and its template's components; inst is the
// Challenge whose objects serve ch (ch, or the pooled instance it claimed).
// An unclaimed pooled instance waits without a lifetime; once claimed, its
// claimant's counts from the claim (its creation), and deleting the
// claimant deletes it.
func (o *Observer) lifetime(ch, inst *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate, obs *lifecycle.Observation) {
	if tmpl != nil {
		if tmpl.Spec.Flag != nil || len(tmpl.Spec.Flags) > 0 {
			obs.FlagSecretName = identity.FlagSecret(inst.Name)
		}
		for _, c := range tmpl.Spec.Components {
			obs.Components = append(obs.Components, c.Name)
		}
	}
	if o.Pools.IsPooled(ch) {
		return
	}
	if ch.Spec.Lifetime != nil {
		obs.Lifetime, obs.OwnLifetime = ch.Spec.Lifetime.Duration, true
	}
	if ch.Spec.Template == "" {
		return
	}
	if tmpl == nil {
		// Gone or renamed: keep the expiry and the renewals as they are,
		// rather than let the instance live forever.
		obs.LifetimeUnknown = true
		return
	}
	if tmpl.Spec.IsShared() {
		return // the organiser's: only its own spec.lifetime ends it
	}
	if lt := tmpl.Spec.Lifetime; lt != nil {
		// Without a default, the template's maximum is the lifetime: an
		// instance under a template that bounds lifetimes always expires.
		for _, d := range []*metav1.Duration{lt.Default, lt.Max} {
			if obs.Lifetime == 0 && d != nil {
				obs.Lifetime = d.Duration
			}
		}
		obs.MaxRenewals = lt.MaxRenewals
		if lt.Max != nil {
			obs.MaxLifetime = lt.Max.Duration
		}
	}
}

func (o *Observer) nodeAddress(ctx context.Context) (string, error) {
	if o.NodeAddress != "" {
		return o.NodeAddress, nil
	}
	var nodes corev1.NodeList
	if err := o.Reader.List(ctx, &nodes); err != nil {
		return "", fmt.Errorf("listing nodes: %w", err)
	}
	return endpoint.NodeAddress(nodes.Items), nil
}
