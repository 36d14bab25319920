// Package operator wires the embedded helm-operator reconciler and the Go
// controllers into one manager.
package operator

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"time"

	helmclient "github.com/operator-framework/helm-operator-plugins/pkg/client"
	"github.com/operator-framework/helm-operator-plugins/pkg/hook"
	"github.com/operator-framework/helm-operator-plugins/pkg/reconciler"
	helmvalues "github.com/operator-framework/helm-operator-plugins/pkg/values"
	"github.com/operator-framework/helm-operator-plugins/pkg/watches"
	"helm.sh/helm/v3/pkg/chartutil"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/action"
	"github.com/challenge-operator/challenge-operator/internal/admission"
	"github.com/challenge-operator/challenge-operator/internal/containment"
	"github.com/challenge-operator/challenge-operator/internal/controller/challenge"
	"github.com/challenge-operator/challenge-operator/internal/controller/challengepool"
	"github.com/challenge-operator/challenge-operator/internal/controller/challengetemplate"
	"github.com/challenge-operator/challenge-operator/internal/flagtag"
	"github.com/challenge-operator/challenge-operator/internal/identity"
	"github.com/challenge-operator/challenge-operator/internal/metrics"
	"github.com/challenge-operator/challenge-operator/internal/organisersecret"
	"github.com/challenge-operator/challenge-operator/internal/policy"
	"github.com/challenge-operator/challenge-operator/internal/policyhelm"
	"github.com/challenge-operator/challenge-operator/internal/pool"
	"github.com/challenge-operator/challenge-operator/internal/render"
	"github.com/challenge-operator/challenge-operator/internal/values"
	"github.com/challenge-operator/challenge-operator/internal/webhook"
)

// Options configure the operator beside the manager's own options.
type Options struct {
	// WatchesFile is the helm-operator watches.yaml naming the chart per kind.
	WatchesFile string
	// NodeAddress overrides the host of NodePort endpoints.
	NodeAddress string
	// MaxConcurrentReconciles is the default number of Challenges reconciled at once.
	MaxConcurrentReconciles int
	// Events bounds the Events the operator writes; zero, unbounded.
	Events EventLimit
	// MaxInstancesPerParticipant is the operator-wide cap on one participant's
	// active instances; a template's own limit wins; 0 means none.
	MaxInstancesPerParticipant int32
	// TeamBudgetCPU and TeamBudgetMemory bound what one participant's live
	// instances request together, across templates (the cluster admin's
	// alone: no template or Challenge raises them); zero bounds nothing.
	TeamBudgetCPU, TeamBudgetMemory resource.Quantity
	// MaxInstances bounds the cluster's live instances, a template's
	// maxInstances its own; the others are Queued; 0 means no bound.
	MaxInstances int32
	// Values are enforced on every instance.
	Values values.Settings
	// Limits are the ceilings and allowances the post-render gate holds every
	// release to, unless a template's policy says otherwise. Its network
	// fields are taken from Values.
	Limits policy.Limits
	// Webhook serves the admission webhooks for Challenges: the mutating one
	// a creation goes through (checks and the Helm reconciler's finalizer),
	// and the validating one of updates.
	Webhook bool
	// Namespaces are those Challenges are reconciled in (the cache's);
	// empty, all. The creation webhook finalizes no other Challenge.
	Namespaces []string
	// PoolNamespace is where templates' warm pools keep their instances;
	// empty means no pools.
	PoolNamespace string
	// CanaryNamespace is where the operator tries a Degraded template's
	// canary instances; empty means none (an edit of the template lifts it).
	CanaryNamespace string
	// FlagCodec seals the teams' perTeam flags; nil refuses them.
	FlagCodec *flagtag.Codec
	// FlagWriterImage runs `write-flags` in a claimed pooled instance's pods
	// (challengepool.FlagDeliveryReconciler): the operator's own image.
	FlagWriterImage string
}

// Features are the operator's optional parts, decided once from its
// options: the cache, Setup and the controllers ask this value.
type Features struct {
	// Gateways: instances may be exposed by Gateway API routes (--gateways),
	// so the route kinds are cached and watched.
	Gateways bool
	// NamespacePerInstance renders each instance into a namespace of its own.
	NamespacePerInstance bool
	// Pools keep warm instances of pooled templates (--pool-namespace).
	Pools bool
	// Webhook serves the validating admission webhook.
	Webhook bool
}

// Features decides which optional parts o turns on.
func (o Options) Features() Features {
	return Features{Gateways: len(o.Values.Gateways) > 0, NamespacePerInstance: o.Values.NamespacePerInstance,
		Pools: o.PoolNamespace != "", Webhook: o.Webhook}
}

// Setup adds a Helm reconciler per watch, and the status controller, to mgr.
func Setup(mgr ctrl.Manager, opts Options) error {
	features := opts.Features()
	ws, err := watches.Load(opts.WatchesFile)
	if err != nil {
		return fmt.Errorf("loading watches file %s: %w", opts.WatchesFile, err)
	}
	if err := challenge.AddIndexes(mgr, features.Gateways); err != nil {
		return err
	}
	recorder, err := eventRecorder(mgr, "challenge-operator", opts.Events)
	if err != nil {
		return err
	}
	var pools *pool.Pools
	if features.Pools {
		pools = &pool.Pools{Namespace: opts.PoolNamespace, Reader: mgr.GetClient(), Client: mgr.GetClient(), Demand: &pool.Demand{}}
	}
	canaries := &containment.Canaries{Namespace: opts.CanaryNamespace}
	queue := &admission.Queue{Reader: mgr.GetClient(), MaxInstances: opts.MaxInstances, Pools: pools, Canaries: canaries}
	// The operator's own instances, which no team waits on: a claimed pooled
	// instance is counted as its claimant.
	operatorsOwn := func(ch *ctfv1alpha1.Challenge) bool {
		return pools.IsPooled(ch) || canaries.IsAny(ch)
	}
	writer := &challenge.StatusWriter{
		Client: mgr.GetClient(),
		Reader: mgr.GetClient(),
		Live:   mgr.GetAPIReader(),
		Observer: &challenge.Observer{Reader: mgr.GetClient(), Indexed: true, NodeAddress: opts.NodeAddress,
			NamespacePerInstance: features.NamespacePerInstance, Gateways: features.Gateways, Queue: queue, Pools: pools,
			Rollouts: &challenge.Rollouts{Live: mgr.GetAPIReader()}},
		Recorder:     recorder,
		OperatorsOwn: operatorsOwn,
	}
	metrics.Register(mgr.GetClient(), operatorsOwn)
	if err := action.IndexRecords(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	records := &action.Records{Reader: mgr.GetCache()}
	// The kinds the Helm controllers watch (SetupHelmControllers).
	existence, err := action.NewExistence(mgr.GetCache(), mgr.GetRESTMapper(), mgr.GetScheme(), challenge.ReleaseKinds(features.NamespacePerInstance))
	if err != nil {
		return fmt.Errorf("mapping the kinds a release renders: %w", err)
	}
	actionConfig, err := helmclient.NewActionConfigGetter(mgr.GetConfig(), mgr.GetRESTMapper(),
		helmclient.StorageDriverMapper(action.MemoizedStorage(action.RecordSecrets(), records)),
		helmclient.ClientRestConfigMapper(existence.RestConfig))
	if err != nil {
		return fmt.Errorf("creating Helm action config getter: %w", err)
	}
	limits := gateLimits(opts)
	policyGate := &policyhelm.Gate{Reader: mgr.GetClient(), NamespacePerInstance: features.NamespacePerInstance}
	actions, err := action.NewClientGetter(actionConfig, recorder)
	if err != nil {
		return fmt.Errorf("creating Helm action client getter: %w", err)
	}
	actions.Leftovers = challenge.Teardown{Client: mgr.GetClient(), Pools: pools, NamespacePerInstance: features.NamespacePerInstance,
		Gateways: features.Gateways, Indexed: true}.Leftovers
	actions.RenderInputs = renderInputs(mgr.GetClient(), limits)
	actions.CheckRecord = policyGate.CheckRecord
	actions.PostRenderer = policyGate.PostRenderer
	actions.Records = records
	actions.Existence = existence
	if features.NamespacePerInstance {
		actions.RecountQuota = challenge.QuotaRecount{Live: mgr.GetAPIReader(), Client: mgr.GetClient(), Recorder: recorder}.Recount
	}
	quota := &admission.Quota{Reader: mgr.GetClient(), DefaultMax: opts.MaxInstancesPerParticipant}
	budget := teamBudget(mgr.GetClient(), mgr.GetAPIReader(), opts, quota)
	if features.Webhook {
		if err := webhook.Setup(mgr, quota, budget, opts.Values, opts.Namespaces); err != nil {
			return fmt.Errorf("setting up the webhook: %w", err)
		}
	}
	// The Helm reconciler reads Challenges as unstructured objects, which the
	// manager's client reads live from the API server: a request per
	// reconcile. This client serves them from the typed informer.
	helmClient, err := client.New(mgr.GetConfig(), client.Options{
		Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(), HTTPClient: mgr.GetHTTPClient(),
		Cache: &client.CacheOptions{Reader: typedChallenges{Reader: mgr.GetCache()}, Unstructured: true},
	})
	if err != nil {
		return err
	}
	wiring := reconcilerWiring{
		client:  &challenge.StatusClient{Client: helmClient, Writer: writer},
		actions: actions,
		preHook: challenge.MarkReleasingHook(writer),
		translator: renderingTranslator{writer: writer, gate: policyGate, Translator: render.Translator{
			Reader:          mgr.GetClient(),
			OrganiserReader: mgr.GetAPIReader(),
			Admission:       admission.Admission{Quota: quota, Budget: budget, Queue: queue, Pools: pools, Canaries: canaries},
			Rules:           values.Rules{Settings: opts.Values, Limits: limits, FlagCodec: opts.FlagCodec},
		}},
		extraWatches: challenge.HelmWatches(mgr, actions.InstallFailing, pools, queue),
		recorder:     mgr.GetEventRecorderFor(challenge.HelmControllerName), //nolint:staticcheck // the Helm reconciler takes the old recorder
	}
	for _, w := range ws {
		if w.GroupVersionKind != challengeGVK {
			return fmt.Errorf("watches file %s: unsupported kind %s: this operator reconciles only Challenges", opts.WatchesFile, w.GroupVersionKind)
		}
		r, err := reconciler.New(reconcilerOptions(w, wiring)...)
		if err != nil {
			return fmt.Errorf("creating reconciler for %s: %w", w.GroupVersionKind, err)
		}
		helm := policyGate.Scoped(r)
		if err := challenge.SetupHelmControllers(mgr, helm, concurrency(w, opts), wiring.extraWatches, features.NamespacePerInstance, actions.InstallFailing, pools); err != nil {
			return fmt.Errorf("setting up reconciler for %s: %w", w.GroupVersionKind, err)
		}
	}
	statusReconciler := &challenge.StatusReconciler{Client: mgr.GetClient(), Writer: writer, MaxConcurrentReconciles: opts.MaxConcurrentReconciles,
		Gateways: features.Gateways, Pools: pools}
	if err := statusReconciler.SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&challenge.ExpiryReconciler{Client: mgr.GetClient(), Recorder: recorder}).SetupWithManager(mgr); err != nil {
		return err
	}
	if features.NamespacePerInstance {
		orphans := &challenge.OrphanedNamespaceReconciler{Client: mgr.GetClient(), Live: mgr.GetAPIReader(), Recorder: recorder}
		if err := orphans.SetupWithManager(mgr); err != nil {
			return err
		}
	}
	// A template's status has one writer; its controllers hand it each part.
	templateStatus := &challengetemplate.TemplateStatusWriter{Client: mgr.GetClient(), Live: mgr.GetAPIReader()}
	if features.Pools {
		if err := (&challengepool.PoolReconciler{Pools: pools, Status: templateStatus, Live: mgr.GetAPIReader(), Recorder: recorder}).SetupWithManager(mgr); err != nil {
			return err
		}
		delivery := &challengepool.FlagDeliveryReconciler{Client: mgr.GetClient(), Live: mgr.GetAPIReader(), Pools: pools, Codec: opts.FlagCodec,
			Image: opts.FlagWriterImage, MaxConcurrentReconciles: opts.MaxConcurrentReconciles}
		if err := delivery.SetupWithManager(mgr); err != nil {
			return err
		}
	}
	// The static flags' digests and the solver check read the organiser's
	// Secrets as the render does: within the admin's namespaces, marked.
	organiserSecrets := organisersecret.Reader{Client: mgr.GetAPIReader(), Namespaces: opts.Values.FlagSecretNamespaces}
	if opts.FlagCodec != nil {
		static := &challengetemplate.StaticFlagsReconciler{Client: mgr.GetClient(), Status: templateStatus, Organiser: organiserSecrets, Live: mgr.GetAPIReader(), Codec: opts.FlagCodec, Recorder: recorder}
		if err := static.SetupWithManager(mgr); err != nil {
			return err
		}
	}
	checker := wiring.translator.Translator
	solver := &challengetemplate.SolverCheckReconciler{Client: mgr.GetClient(), Status: templateStatus, Live: mgr.GetAPIReader(), Organiser: organiserSecrets,
		Codec: opts.FlagCodec, Canaries: canaries, IngressNamespaces: opts.Values.IngressFromNamespaces, DNSNamespace: opts.Values.EffectiveDNSNamespace(),
		NamespacePerInstance: features.NamespacePerInstance, Limits: limits, Recorder: recorder}
	if err := solver.SetupWithManager(mgr); err != nil {
		return err
	}
	conditions := &challengetemplate.TemplateConditionsReconciler{Client: mgr.GetClient(), Status: templateStatus, Check: checker.CheckTemplate, Canaries: canaries, Recorder: recorder}
	if err := conditions.SetupWithManager(mgr); err != nil {
		return err
	}
	return (&challengetemplate.TemplateStatusReconciler{Client: mgr.GetClient(), Status: templateStatus}).SetupWithManager(mgr)
}

// teamBudget is the team budget of opts, priced by the values the
// operator renders, after quota; nil without one.
func teamBudget(cl, live client.Reader, opts Options, quota *admission.Quota) *admission.Budget {
	b := &admission.Budget{Reader: cl, Live: live, CPU: opts.TeamBudgetCPU, Memory: opts.TeamBudgetMemory, Cost: opts.Values.RequestsOf, Quota: quota}
	if !b.Enabled() {
		return nil
	}
	return b
}

// reconcilerWiring is what connects the Helm reconciler to the Go side.
type reconcilerWiring struct {
	client       *challenge.StatusClient
	actions      *action.ClientGetter
	preHook      hook.PreHook
	translator   renderingTranslator
	extraWatches reconciler.ControllerSetupFunc
	recorder     record.EventRecorder
}

// renderingTranslator tells the status writer which generation each render
// is of, before translating it into values, and hands the policy gate what
// the render of those values may contain.
type renderingTranslator struct {
	render.Translator
	writer *challenge.StatusWriter
	gate   *policyhelm.Gate
}

func (t renderingTranslator) Translate(ctx context.Context, u *unstructured.Unstructured) (chartutil.Values, error) {
	t.writer.Rendering(u)
	r, err := t.Render(ctx, u)
	if err != nil {
		return nil, err
	}
	t.gate.Expect(client.ObjectKeyFromObject(u), r.Expected)
	return r.Values, nil
}

// concurrency is how many Challenges are reconciled at once: the watch's own
// setting, else the operator's.
func concurrency(w watches.Watch, opts Options) int {
	n := opts.MaxConcurrentReconciles
	if w.MaxConcurrentReconciles != nil {
		n = *w.MaxConcurrentReconciles
	}
	return max(n, 1)
}

// reconcilerOptions configure the Helm reconciler completely: it runs under
// setupHelmController, never its own SetupWithManager, which would fill in
// defaults and register watches.
func reconcilerOptions(w watches.Watch, wiring reconcilerWiring) []reconciler.Option {
	var period time.Duration
	if w.ReconcilePeriod != nil {
		period = w.ReconcilePeriod.Duration
	}
	return []reconciler.Option{
		reconciler.WithGroupVersionKind(w.GroupVersionKind),
		reconciler.WithChart(*w.Chart),
		reconciler.WithOverrideValues(w.OverrideValues),
		reconciler.WithSelector(*w.Selector),
		reconciler.WithReconcilePeriod(period),
		// The typed API is registered in the scheme; keep it there.
		reconciler.SkipPrimaryGVKSchemeRegistration(true),
		reconciler.WithValueTranslator(wiring.translator),
		reconciler.WithValueMapper(identityMapper), //nolint:staticcheck // deprecated, but required until SetupWithManager stops defaulting it
		reconciler.WithLog(helmLogger(ctrl.Log.WithName("controllers").WithName("Helm"))),
		reconciler.WithEventRecorder(wiring.recorder),
		reconciler.WithMaxReleaseHistory(maxReleaseHistory),
		reconciler.WithWaitForDeletionTimeout(30 * time.Second),
		reconciler.WithClient(wiring.client),
		reconciler.WithActionClientGetter(wiring.actions),
		reconciler.WithPreHook(wiring.preHook),
	}
}

// identityMapper leaves values as the translator made them; the reconciler
// needs a mapper, and its default comes only with its SetupWithManager.
var identityMapper = helmvalues.MapperFunc(func(v chartutil.Values) chartutil.Values { return v }) //nolint:staticcheck

// maxReleaseHistory is how many release records Helm keeps per Challenge.
const maxReleaseHistory = 10

// Operator-wide ceilings when the options leave them out.
var (
	DefaultMaxCPU    = resource.MustParse("2")
	DefaultMaxMemory = resource.MustParse("2Gi")
	// DefaultMaxEphemeralStorage bounds a container's ephemeral-storage and
	// its /tmp; templates may only lower it.
	DefaultMaxEphemeralStorage = resource.MustParse("1Gi")
)

// DefaultMaxInstancesPerParticipant is the default of the operator's
// --max-instances-per-participant: a team cannot start instances without
// bound unless the cluster admin says so (0).
const DefaultMaxInstancesPerParticipant int32 = 5

// CheckIngressFrom refuses, at start-up, an ingress-from namespace that
// instances run in: its pods, the other instances' among them, would be let
// into every instance. challengeNamespaces are those Challenges are created
// in (the watched ones, the instancer's; none means any). Instances run there,
// or, with a namespace per instance, in namespaces named after them
// (identity.Namespace); pooled instances in --pool-namespace. It also
// refuses a pool namespace that is not watched. The gate also refuses an instance's own
// namespace as a peer, whatever the mode.
func CheckIngressFrom(opts Options, challengeNamespaces []string) error {
	if poolNS := opts.PoolNamespace; poolNS != "" {
		if len(challengeNamespaces) > 0 && !slices.Contains(challengeNamespaces, poolNS) {
			return fmt.Errorf("--pool-namespace %q is not among the watched namespaces %v: its pooled instances would never be installed", poolNS, challengeNamespaces)
		}
	}
	for _, ns := range opts.Values.IngressFromNamespaces {
		shared := !opts.Values.NamespacePerInstance && (slices.Contains(challengeNamespaces, ns) || ns == opts.PoolNamespace)
		own := opts.Values.NamespacePerInstance && identity.MayBeNamespace(ns, challengeNamespaces)
		if shared || own {
			return fmt.Errorf("--ingress-from-namespaces lists %q, where instances run: every instance would be open to the others", ns)
		}
	}
	return nil
}

// gateLimits completes the gate's limits with defaults and with the network
// boundaries the values enforce, so that the chart and the gate agree.
func gateLimits(opts Options) policy.Limits {
	l := opts.Limits
	if l.CPU.IsZero() {
		l.CPU = DefaultMaxCPU
	}
	if l.Memory.IsZero() {
		l.Memory = DefaultMaxMemory
	}
	if l.EphemeralStorage.IsZero() {
		l.EphemeralStorage = DefaultMaxEphemeralStorage
	}
	if l.MaxReplicas == 0 {
		l.MaxReplicas = 1
	}
	l.InternalCIDRs = nil
	for _, c := range opts.Values.EffectiveInternalCIDRs() {
		if p, err := netip.ParsePrefix(c); err == nil { // the flag was checked with the same parser
			l.InternalCIDRs = append(l.InternalCIDRs, p)
		}
	}
	l.IngressFromNamespaces = opts.Values.IngressFromNamespaces
	l.IngressDomain = opts.Values.IngressDomain
	l.Gateways = nil
	for _, g := range opts.Values.Gateways {
		l.Gateways = append(l.Gateways, types.NamespacedName{Namespace: g.Namespace, Name: g.Name})
	}
	l.DNSNamespace = opts.Values.EffectiveDNSNamespace()
	return l
}

// renderInputs names what a render depends on besides the chart and the
// values: the policy the gate holds it to, and the generation of the
// Challenge's template, whose policy the gate reads.
func renderInputs(cl client.Reader, limits policy.Limits) func(context.Context, client.Object) (string, error) {
	encoded, _ := json.Marshal(limits) // quantities and prefixes marshal canonically
	policyInForce := string(encoded)
	return func(ctx context.Context, obj client.Object) (string, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return "", fmt.Errorf("unexpected %T", obj)
		}
		name, _, _ := unstructured.NestedString(u.Object, "spec", "template")
		if name == "" {
			return policyInForce, nil
		}
		tmpl := &ctfv1alpha1.ChallengeTemplate{}
		if err := cl.Get(ctx, client.ObjectKey{Name: name}, tmpl); err != nil {
			// The translator reports a missing template; nothing is rendered.
			return policyInForce, client.IgnoreNotFound(err)
		}
		return fmt.Sprintf("%s\x00%s/%d", policyInForce, tmpl.UID, tmpl.Generation), nil
	}
}
