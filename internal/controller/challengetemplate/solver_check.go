package challengetemplate

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/containment"
	"github.com/challenge-operator/challenge-operator/internal/ctfflag"
	"github.com/challenge-operator/challenge-operator/internal/flagtag"
	"github.com/challenge-operator/challenge-operator/internal/identity"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
	"github.com/challenge-operator/challenge-operator/internal/metrics"
	"github.com/challenge-operator/challenge-operator/internal/organisersecret"
	"github.com/challenge-operator/challenge-operator/internal/policy"
	"github.com/challenge-operator/challenge-operator/internal/solvercheck"
)

// SolverCheckReconciler runs each template's solver check: it keeps the
// template's solver canary (a Challenge of the operator's own, which claims
// a pooled instance where there is a pool), runs the organiser's solver
// against it as a Job on its own timer, and writes the outcome: the
// SolverHealthy condition, status.solver, Events on a change, metrics.
// With onFailure Pause, a failing check holds the template's teams' starts
// and claims (containment.Pause) until a run passes.
type SolverCheckReconciler struct {
	Client client.Client
	// Status reads the template and writes the check's outcome.
	Status *TemplateStatusWriter
	// Live reads what the cache does not hold: the solver's Secret, a Job
	// just created.
	Live client.Reader
	// Organiser reads the organiser's flag Secrets, uncached, only those
	// the template may read: the same check as its render's, whether or
	// not its canary rendered first.
	Organiser organisersecret.Reader
	Codec     *flagtag.Codec
	Canaries  *containment.Canaries
	// IngressNamespaces are where the ingress controllers run, through which
	// a solver reaches a canary exposed by an Ingress or a route.
	IngressNamespaces []string
	// DNSNamespace is where the cluster DNS runs (--dns-namespace, as
	// values.Settings.EffectiveDNSNamespace gives it), the one peer a
	// solver reaches besides its canary.
	DNSNamespace string
	// NamespacePerInstance says an instance's pods run in a namespace of
	// its own (identity.Namespace), the canary's among them.
	NamespacePerInstance bool
	// Limits are the cluster admin's bounds: the solver's image comes from
	// a registry they allow, as the template's policy narrows them, like
	// every image of its instances.
	Limits   policy.Limits
	Recorder events.EventRecorder
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;create;update
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;create;update

// Reconcile runs one template's solver check one step on.
func (r *SolverCheckReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return r.Status.Decide(ctx, req.NamespacedName, metrics.ForgetSolver, r.decide)
}

// decide takes tmpl's solver check one step on (step); what it does to the
// canaries, and the end of a run told (its Event, its count), come once the
// status holds the decision: a refused write (the template read stale, or
// changed meanwhile) is decided again from the template as it is, and did
// nothing to a canary the status names, nor left one it never names.
func (r *SolverCheckReconciler) decide(ctx context.Context, tmpl *ctfv1alpha1.ChallengeTemplate) (TemplateDecision, error) {
	canaries, err := r.solverCanaries(ctx, tmpl)
	if err != nil {
		return TemplateDecision{}, err
	}
	result, then, err := r.step(ctx, tmpl, canaries)
	if err != nil {
		return TemplateDecision{}, err
	}
	return TemplateDecision{Result: result, Then: func(ctx context.Context, written bool) error {
		if err := r.deleteAll(ctx, then.delete); err != nil {
			return err
		}
		if then.create != nil {
			if err := r.Client.Create(ctx, then.create); err != nil {
				return fmt.Errorf("creating the solver canary of %s: %w", tmpl.Name, err)
			}
		}
		if written && then.announce != nil {
			then.announce()
		}
		return nil
	}}, nil
}

// solverThen is what a step of the solver check does once its status is
// written.
type solverThen struct {
	// delete are solver canaries the status does not name.
	delete []*ctfv1alpha1.Challenge
	// create is the canary the status names from now on.
	create *ctfv1alpha1.Challenge
	// announce tells the end of a run; nil when none ended.
	announce func()
}

// step decides for tmpl, whose solver canaries are canaries, leaving the
// status to write in tmpl and what to do once it is written: the canaries
// to delete or create, and what to announce of a run that ended. Its other
// acts repeat safely when the write is refused: a run's Job is named by its
// number.
func (r *SolverCheckReconciler) step(ctx context.Context, tmpl *ctfv1alpha1.ChallengeTemplate, canaries []*ctfv1alpha1.Challenge) (ctrl.Result, solverThen, error) {
	check := tmpl.Spec.SolverCheck
	if check == nil || !r.Canaries.Enabled() {
		tmpl.Status.Solver = nil
		apimeta.RemoveStatusCondition(&tmpl.Status.Conditions, containment.ConditionSolverHealthy)
		metrics.ForgetSolver(tmpl.Name)
		if check != nil {
			r.setCondition(tmpl, metav1.ConditionUnknown, solvercheck.ReasonNoCanaryNamespace, "the operator has no canary namespace (--canary-namespace) to run the solver check in")
		}
		return ctrl.Result{}, solverThen{delete: canaries}, nil
	}
	st := tmpl.Status.Solver
	if st == nil {
		st = &ctfv1alpha1.SolverStatus{}
		tmpl.Status.Solver = st
	}
	var canary *ctfv1alpha1.Challenge
	var extra []*ctfv1alpha1.Challenge
	for _, ch := range canaries {
		if canary == nil && (st.Canary == "" || ch.Name == st.Canary) {
			canary = ch
		} else {
			extra = append(extra, ch)
		}
	}
	then := solverThen{delete: extra}
	if canary == nil {
		if st.Canary != "" && st.Job == "" && st.NextRunAt != nil && r.now().Before(st.NextRunAt.Time) {
			exists, err := r.canaryExists(ctx, st.Canary)
			if err != nil || exists {
				return ctrl.Result{RequeueAfter: st.NextRunAt.Sub(r.now())}, then, err // created, not in the cache yet
			}
		}
		then.create = r.Canaries.NewSolver(tmpl)
		*st = ctfv1alpha1.SolverStatus{Canary: then.create.Name, NextRunAt: &metav1.Time{Time: r.now().Add(containment.CanaryTimeout)}}
		r.initialCondition(tmpl, "the solver canary "+then.create.Name+" is being started")
		return ctrl.Result{}, then, nil
	}
	st.Canary = canary.Name
	if st.Job != "" {
		result, announce, err := r.finish(ctx, tmpl, canary)
		then.announce = announce
		return result, then, err
	}
	if canary.Status.Phase != ctfv1alpha1.PhaseRunning || canary.Status.Endpoint == nil {
		r.initialCondition(tmpl, fmt.Sprintf("the solver canary %s is %s: %s", canary.Name, canary.Status.Phase, canary.Status.Reason))
		return ctrl.Result{}, then, nil // its status changes wake this
	}
	if st.Runs > 0 && st.NextRunAt != nil && r.now().Before(st.NextRunAt.Time) {
		return ctrl.Result{RequeueAfter: st.NextRunAt.Sub(r.now())}, then, nil
	}
	result, err := r.start(ctx, tmpl, canary)
	return result, then, err
}

// canaryExists tells whether the API server holds the solver canary name,
// which the status names and the cache does not hold: one whose creation,
// after its status was written, failed, or one deleted from under the
// operator, is replaced at once, not at its deadline.
func (r *SolverCheckReconciler) canaryExists(ctx context.Context, name string) (bool, error) {
	err := r.Live.Get(ctx, client.ObjectKey{Namespace: r.Canaries.Namespace, Name: name}, &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: ctfv1alpha1.GroupVersion.String(), Kind: "Challenge"}})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// start begins the next run against canary: its expected flags, its
// NetworkPolicy, its Job; the run before is deleted.
func (r *SolverCheckReconciler) start(ctx context.Context, tmpl *ctfv1alpha1.ChallengeTemplate, canary *ctfv1alpha1.Challenge) (ctrl.Result, error) {
	st := tmpl.Status.Solver
	if refused := r.imageRefused(tmpl); refused != "" {
		// The organiser's to fix: no verdict, so no pause of the teams.
		r.setCondition(tmpl, metav1.ConditionUnknown, solvercheck.ReasonImageNotAllowed, "the solver does not run: "+refused)
		return ctrl.Result{}, nil // an edit of the template wakes this
	}
	flags, err := r.expectedFlags(ctx, tmpl, canary)
	if err != nil {
		var re *lifecycle.ReasonedError
		msg := err.Error()
		if errors.As(err, &re) {
			msg = re.Message
		}
		r.setCondition(tmpl, metav1.ConditionUnknown, solvercheck.ReasonFlagUnavailable, "the solver canary's expected flag cannot be read: "+msg)
		return ctrl.Result{RequeueAfter: tmpl.Spec.SolverCheck.RunInterval()}, nil
	}
	if err := r.writeSecret(ctx, solvercheck.Secret(canary, flags)); err != nil {
		return ctrl.Result{}, err
	}
	reach, owner, err := r.reach(ctx, tmpl, canary)
	if err != nil {
		return ctrl.Result{}, err
	}
	ep := canary.Status.Endpoint
	for _, want := range []*networkingv1.NetworkPolicy{solvercheck.NetworkPolicy(canary, ep, reach), solvercheck.CanaryIngress(canary, ep, reach, owner)} {
		if err := r.writePolicy(ctx, want); err != nil {
			return ctrl.Result{}, err
		}
	}
	if st.Runs > 0 {
		old := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: canary.Namespace, Name: solvercheck.JobName(canary.Name, st.Runs)}}
		if err := r.Client.Delete(ctx, old, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("deleting the last solver run: %w", err)
		}
	}
	job := solvercheck.Job(tmpl.Spec.SolverCheck, canary, canary.Status.Endpoint, st.Runs+1)
	if err := r.Client.Create(ctx, job); err != nil && !apierrors.IsAlreadyExists(err) {
		return ctrl.Result{}, fmt.Errorf("starting a solver run: %w", err)
	}
	st.Runs++
	st.Job = job.Name
	st.NextRunAt = nil
	r.initialCondition(tmpl, "the first solver run is under way")
	return ctrl.Result{RequeueAfter: tmpl.Spec.SolverCheck.RunTimeout() + 10*time.Second}, nil
}

// reach is what canary's solver may reach besides DNS: the pods that
// serve canary (those of the pooled instance it claimed, if it claimed
// one), in the namespace they run in, and the ingress namespaces when
// tmpl is exposed through an Ingress or a route. owner is the Challenge
// those pods are of when it is in their namespace, nil otherwise.
func (r *SolverCheckReconciler) reach(ctx context.Context, tmpl *ctfv1alpha1.ChallengeTemplate, canary *ctfv1alpha1.Challenge) (solvercheck.Reach, *ctfv1alpha1.Challenge, error) {
	serving := canary
	if p := canary.Status.PooledInstance; p != nil {
		serving = &ctfv1alpha1.Challenge{}
		if err := r.Client.Get(ctx, client.ObjectKey{Namespace: p.Namespace, Name: p.Name}, serving); err != nil {
			return solvercheck.Reach{}, nil, fmt.Errorf("reading the pooled instance %s/%s the solver canary claimed: %w", p.Namespace, p.Name, err)
		}
	}
	reach := solvercheck.Reach{DNSNamespace: r.DNSNamespace, IngressNamespaces: r.IngressNamespaces, Routed: routed(tmpl),
		PodNamespace: serving.Namespace, Pods: identity.InstancePods(serving)}
	if r.NamespacePerInstance {
		reach.PodNamespace = identity.Namespace(serving)
		return reach, nil, nil
	}
	return reach, serving, nil
}

// routed says tmpl's instances are exposed through an Ingress or a
// Gateway's route: reached by a host the ingress namespaces serve.
func routed(tmpl *ctfv1alpha1.ChallengeTemplate) bool {
	exp := tmpl.Spec.Expose
	if exp == nil && tmpl.Spec.Values != nil {
		exp = tmpl.Spec.Values.Expose
	}
	if exp == nil {
		return false
	}
	switch exp.Type {
	case ctfv1alpha1.ExposeIngress, ctfv1alpha1.ExposeTLSRoute, ctfv1alpha1.ExposeHTTPRoute:
		return true
	}
	return false
}

// writePolicy creates want, or puts its spec back: an operator of an
// earlier version wrote a wider one, which would still add up with it.
// Not cached (its labels are no instance's): read live.
func (r *SolverCheckReconciler) writePolicy(ctx context.Context, want *networkingv1.NetworkPolicy) error {
	got := &networkingv1.NetworkPolicy{}
	err := r.Live.Get(ctx, client.ObjectKeyFromObject(want), got)
	switch {
	case apierrors.IsNotFound(err):
		if err = r.Client.Create(ctx, want); apierrors.IsAlreadyExists(err) {
			err = nil // another reconcile's: the next run compares it
		}
	case err == nil && !equality.Semantic.DeepEqual(got.Spec, want.Spec):
		got.Spec = want.Spec
		err = r.Client.Update(ctx, got)
	}
	if err != nil {
		return fmt.Errorf("writing the solver's NetworkPolicy %s/%s: %w", want.Namespace, want.Name, err)
	}
	return nil
}

// imageRefused says why the solver's image may not run under the admin's
// bounds as tmpl's policy narrows them; "" when it may.
func (r *SolverCheckReconciler) imageRefused(tmpl *ctfv1alpha1.ChallengeTemplate) string {
	limits, err := policy.LimitsFor(r.Limits, tmpl)
	if err == nil {
		err = limits.ImageAllowed(tmpl.Spec.SolverCheck.Image)
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

// finish reads the run in flight and records its outcome once it ended;
// announce gives the Event of a change of verdict and counts the run.
func (r *SolverCheckReconciler) finish(ctx context.Context, tmpl *ctfv1alpha1.ChallengeTemplate, canary *ctfv1alpha1.Challenge) (_ ctrl.Result, announce func(), _ error) {
	st := tmpl.Status.Solver
	job := &batchv1.Job{}
	key := client.ObjectKey{Namespace: canary.Namespace, Name: st.Job}
	err := r.Client.Get(ctx, key, job)
	if apierrors.IsNotFound(err) {
		err = r.Live.Get(ctx, key, job)
	}
	var done, passed bool
	var why string
	switch {
	case apierrors.IsNotFound(err):
		done, why = true, "its Job "+st.Job+" was deleted before it ended"
	case err != nil:
		return ctrl.Result{}, nil, err
	default:
		done, passed, why = solvercheck.Outcome(job)
	}
	if !done {
		return ctrl.Result{RequeueAfter: tmpl.Spec.SolverCheck.RunTimeout()}, nil, nil
	}
	now := r.now()
	st.Job, st.LastRunAt = "", &metav1.Time{Time: now}
	st.NextRunAt = &metav1.Time{Time: now.Add(tmpl.Spec.SolverCheck.RunInterval())}
	was := apimeta.FindStatusCondition(tmpl.Status.Conditions, containment.ConditionSolverHealthy)
	var event func()
	if passed {
		st.ConsecutiveFailures = 0
		msg := fmt.Sprintf("run %d solved the canary %s", st.Runs, canary.Name)
		if was != nil && was.Status == metav1.ConditionFalse {
			event = func() {
				r.Recorder.Eventf(tmpl, job, corev1.EventTypeNormal, solvercheck.ReasonPassed, "SolverCheck", "the solver solves it again: %s", msg)
			}
		} else if was == nil || was.Status != metav1.ConditionTrue {
			event = func() {
				r.Recorder.Eventf(tmpl, job, corev1.EventTypeNormal, solvercheck.ReasonPassed, "SolverCheck", "%s", msg)
			}
		}
		r.setCondition(tmpl, metav1.ConditionTrue, solvercheck.ReasonPassed, msg)
	} else {
		st.ConsecutiveFailures++
		msg := fmt.Sprintf("run %d did not solve the canary %s (%s), %d in a row", st.Runs, canary.Name, why, st.ConsecutiveFailures)
		if tmpl.Spec.SolverCheck.OnFailure == ctfv1alpha1.SolverFailurePause {
			msg += "; new starts and claims wait until a run passes"
		}
		if was == nil || was.Status != metav1.ConditionFalse {
			event = func() {
				r.Recorder.Eventf(tmpl, job, corev1.EventTypeWarning, solvercheck.ReasonFailed, "SolverCheck", "%s", msg)
			}
		}
		r.setCondition(tmpl, metav1.ConditionFalse, solvercheck.ReasonFailed, msg)
	}
	announce = func() {
		if event != nil {
			event()
		}
		metrics.ObserveSolverRun(tmpl.Name, passed)
	}
	return ctrl.Result{RequeueAfter: tmpl.Spec.SolverCheck.RunInterval()}, announce, nil
}

// expectedFlags are the canary's flags as the platform would verify them,
// by the variable the solver reads each from: FLAG (the first) and
// FLAG_<NAME>.
func (r *SolverCheckReconciler) expectedFlags(ctx context.Context, tmpl *ctfv1alpha1.ChallengeTemplate, canary *ctfv1alpha1.Challenge) (map[string]string, error) {
	flags := map[string]string{}
	if tmpl.Spec.Flag != nil {
		value, err := ctfflag.Resolve(ctx, r.Organiser, tmpl, canary.Spec.Participant)
		if err != nil {
			return nil, err
		}
		flags["FLAG"] = value
	}
	for i := range tmpl.Spec.Flags {
		f := &tmpl.Spec.Flags[i]
		value, err := ctfflag.ResolveNamed(ctx, r.Organiser, r.Codec, tmpl, f, canary.Spec.Participant)
		if err != nil {
			return nil, err
		}
		flags[solvercheck.FlagEnv(f.Name)] = value
		if _, ok := flags["FLAG"]; !ok {
			flags["FLAG"] = value
		}
	}
	return flags, nil
}

// writeSecret creates or updates the solver's Secret (not cached: read live).
func (r *SolverCheckReconciler) writeSecret(ctx context.Context, want *corev1.Secret) error {
	got := &corev1.Secret{}
	err := r.Live.Get(ctx, client.ObjectKeyFromObject(want), got)
	switch {
	case apierrors.IsNotFound(err):
		err = r.Client.Create(ctx, want)
	case err == nil && !maps.EqualFunc(got.Data, want.Data, func(a, b []byte) bool { return string(a) == string(b) }):
		got.Data = want.Data
		err = r.Client.Update(ctx, got)
	}
	if err != nil {
		return fmt.Errorf("writing the solver's flags: %w", err)
	}
	return nil
}

// initialCondition says SolverHealthy is Unknown until the first run ends;
// a verdict already given stands until the next.
func (r *SolverCheckReconciler) initialCondition(tmpl *ctfv1alpha1.ChallengeTemplate, message string) {
	if c := apimeta.FindStatusCondition(tmpl.Status.Conditions, containment.ConditionSolverHealthy); c != nil && c.Status != metav1.ConditionUnknown {
		return
	}
	r.setCondition(tmpl, metav1.ConditionUnknown, solvercheck.ReasonCanaryNotRunning, message)
}

func (r *SolverCheckReconciler) setCondition(tmpl *ctfv1alpha1.ChallengeTemplate, status metav1.ConditionStatus, reason, message string) {
	apimeta.SetStatusCondition(&tmpl.Status.Conditions, metav1.Condition{Type: containment.ConditionSolverHealthy, Status: status,
		Reason: reason, Message: message, ObservedGeneration: tmpl.Generation})
	metrics.ObserveSolverHealth(tmpl.Name, status == metav1.ConditionTrue, status == metav1.ConditionUnknown)
}

// solverCanaries lists tmpl's solver canaries (read-only, from the cache).
func (r *SolverCheckReconciler) solverCanaries(ctx context.Context, tmpl *ctfv1alpha1.ChallengeTemplate) ([]*ctfv1alpha1.Challenge, error) {
	if !r.Canaries.Enabled() {
		return nil, nil
	}
	var list ctfv1alpha1.ChallengeList
	if err := r.Client.List(ctx, &list, client.InNamespace(r.Canaries.Namespace),
		client.MatchingLabels{ctfv1alpha1.SolverCanaryLabel: tmpl.Name}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	var out []*ctfv1alpha1.Challenge
	for i := range list.Items {
		if ch := &list.Items[i]; r.Canaries.IsSolver(ch) && ch.DeletionTimestamp.IsZero() {
			out = append(out, ch)
		}
	}
	return out, nil
}

func (r *SolverCheckReconciler) deleteAll(ctx context.Context, chs []*ctfv1alpha1.Challenge) error {
	for _, ch := range chs {
		if err := r.Client.Delete(ctx, ch.DeepCopy(), client.Preconditions{UID: &ch.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting solver canary %s/%s: %w", ch.Namespace, ch.Name, err)
		}
	}
	return nil
}

func (r *SolverCheckReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// SetupWithManager watches templates, their solver canaries and runs.
func (r *SolverCheckReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("challengetemplate-solver-check").
		For(&ctfv1alpha1.ChallengeTemplate{}).
		Watches(&ctfv1alpha1.Challenge{}, handler.EnqueueRequestsFromMapFunc(r.templateOfCanary), builder.WithPredicates(outcomeChanged)).
		Watches(&batchv1.Job{}, handler.EnqueueRequestsFromMapFunc(r.templateOfRun)).
		Complete(r)
}

// templateOfCanary maps a solver canary to its template.
func (r *SolverCheckReconciler) templateOfCanary(_ context.Context, obj client.Object) []reconcile.Request {
	ch, ok := obj.(*ctfv1alpha1.Challenge)
	if !ok || !r.Canaries.IsSolver(ch) {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: ch.Spec.Template}}}
}

// templateOfRun maps a solver run's Job to its canary's template, which
// the canary's name does not say: every canary's template is asked.
func (r *SolverCheckReconciler) templateOfRun(ctx context.Context, obj client.Object) []reconcile.Request {
	canary := obj.GetLabels()[ctfv1alpha1.SolverLabel]
	if canary == "" || obj.GetNamespace() != r.Canaries.Namespace {
		return nil
	}
	ch := &ctfv1alpha1.Challenge{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: obj.GetNamespace(), Name: canary}, ch); err != nil || !r.Canaries.IsSolver(ch) {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: ch.Spec.Template}}}
}
