// Package lifecycle decides what a Challenge's status says: a pure function of
// what was observed in the cluster, so that every writer computes the same truth.
package lifecycle

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// Condition types written by the embedded helm-operator reconciler.
const (
	ConditionInitialized    = "Initialized"
	ConditionDeployed       = "Deployed"
	ConditionReleaseFailed  = "ReleaseFailed"
	ConditionIrreconcilable = "Irreconcilable"
)

// ConditionReady summarises the phase: True exactly when the phase is Running,
// so that `kubectl wait --for=condition=Ready` works.
const ConditionReady = "Ready"

// Reasons of the phases this package decides itself; failures of the release
// carry the reconciler's own reasons (InstallError, UpgradeError, ...).
const (
	ReasonNotInstalled      = "NotInstalled"
	ReasonWorkloadsNotReady = "WorkloadsNotReady"
	ReasonWorkloadFailed    = "WorkloadFailed"
	ReasonEndpointPending   = "EndpointPending"
	// ReasonDeliveringFlags: a claimed pooled instance is getting its
	// team's flags, written into its running pods; not shown to the team
	// until every pod holds them.
	ReasonDeliveringFlags = "DeliveringFlags"
	// ReasonFlagDeliveryFailed: a pod of a claimed pooled instance had every
	// writer of its team's flags fail, and gets no more (phase Error, no
	// address); the team deletes the Challenge to start another.
	ReasonFlagDeliveryFailed = "FlagDeliveryFailed"
	ReasonReady              = "Ready"
	ReasonUninstalling       = "Uninstalling"
)

// Operation is a release action that has been asked for but has not finished.
type Operation string

const (
	// NoOperation means the release reflects the Challenge's current generation.
	NoOperation Operation = ""
	// Installing means the first install of the release is under way.
	Installing Operation = "Installing"
	// Upgrading means a changed spec is being rolled out to an installed release.
	Upgrading Operation = "Upgrading"
)

// Workload is the readiness of one object the release rendered, as kstatus sees it.
type Workload struct {
	Kind string
	Name string
	// Component names the instance's component the workload runs; "" for
	// the primary one.
	Component string
	Status    kstatus.Status
	Message   string
}

// Observation is everything the phase depends on.
type Observation struct {
	// Deleting is true once the Challenge has a deletion timestamp.
	Deleting bool
	// Conditions are the Challenge's current conditions, the reconciler's among them.
	Conditions []metav1.Condition
	// Workloads are the release's objects that have a readiness of their own.
	Workloads []Workload
	// QueuePosition is the instance's place in the queue for capacity (1 is
	// next), 0 when it is not queued.
	QueuePosition int32
	// Components are the instance's components besides its primary one,
	// each of which has a workload once the release is applied.
	Components []string
	// Endpoints are where participants connect; empty until addresses are known.
	Endpoints []ctfv1alpha1.Endpoint
	// Operation is the release action in flight, if any.
	Operation Operation
	// PodProblems are reasons the release's pods cannot become ready.
	PodProblems []PodProblem
	// Created is when the Challenge was created; the lifetime of one that
	// never waited counts from it.
	Created metav1.Time
	// Lifetime is how long the instance lives; 0 means until deleted.
	Lifetime time.Duration
	// MaxLifetime is the template's maximum lifetime, 0 for none: an
	// installed instance's expiry is capped at it, so an organiser lowering
	// it shortens running instances instead of failing them.
	MaxLifetime time.Duration
	// OwnLifetime says Lifetime is the Challenge's own spec.lifetime (which
	// may only be lowered), not its template's.
	OwnLifetime bool
	// LifetimeUnknown is set while the template that gives the lifetime
	// cannot be read: expiry and renewals then stay as they are.
	LifetimeUnknown bool
	// RenewedAt is the Challenge's spec.renewedAt.
	RenewedAt *metav1.Time
	// MaxRenewals caps accepted renewals; nil means no cap.
	MaxRenewals *int32
	// FlagSecretName names the instance's flag Secret, if it has a flag.
	FlagSecretName string
	// PooledInstance is the pooled instance the Challenge claimed, whose
	// objects the workloads and endpoints are; nil for one installed itself.
	PooledInstance *ctfv1alpha1.PooledInstanceRef
	// PooledInstanceGone says the claimed pooled instance was deleted from
	// under the Challenge.
	PooledInstanceGone bool
	// FlagsPending says the claimed pooled instance's pods do not hold the
	// team's perTeam flags yet.
	FlagsPending bool
	// FlagsFailed, when not "", says why the team's perTeam flags could not
	// be written into the claimed pooled instance's pods, and never will.
	FlagsFailed string
}

// Verdict is the phase with the reason and message that explain it.
type Verdict struct {
	Phase   ctfv1alpha1.Phase
	Reason  string
	Message string
}

// Deleting is the verdict on a Challenge being deleted, whatever its
// status said before: nobody should connect to it any more.
var Deleting = Verdict{ctfv1alpha1.PhaseDeleted, ReasonUninstalling, "the instance is being removed"}

// PhaseFor decides the phase. Order matters: deletion wins over everything,
// a failed release over workload state, and Running needs every workload ready
// and an endpoint.
func PhaseFor(o Observation) Verdict {
	if o.Deleting {
		return Deleting
	}
	if o.PooledInstanceGone {
		return Verdict{ctfv1alpha1.PhaseError, ReasonPooledInstanceGone, PooledInstanceGone(o.PooledInstance).Message}
	}
	switch o.Operation {
	case Installing:
		return Verdict{ctfv1alpha1.PhasePending, string(Installing), "the instance is being installed"}
	case Upgrading:
		return Verdict{ctfv1alpha1.PhasePending, string(Upgrading), "a changed spec is being rolled out"}
	}
	for _, t := range []string{ConditionReleaseFailed, ConditionIrreconcilable} {
		if c := meta.FindStatusCondition(o.Conditions, t); c != nil && c.Status == metav1.ConditionTrue {
			if reason, msg, ok := splitReason(c.Message); ok {
				switch reason {
				case ReasonQueued:
					return Verdict{ctfv1alpha1.PhaseQueued, reason, msg}
				case ReasonClaimed:
					// Claimed, but the claim is not in the cache yet.
					return Verdict{ctfv1alpha1.PhasePending, reason, msg}
				case ReasonSharedServiceNotFound:
					if meta.IsStatusConditionTrue(o.Conditions, ConditionDeployed) {
						// The release stands as it was: a blink of a shared
						// Service is a condition, not a failure (only an
						// install waits for it).
						continue
					}
				}
				return Verdict{ctfv1alpha1.PhaseError, reason, msg}
			}
			return Verdict{ctfv1alpha1.PhaseError, c.Reason, c.Message}
		}
	}
	if !meta.IsStatusConditionTrue(o.Conditions, ConditionDeployed) {
		return Verdict{ctfv1alpha1.PhaseNone, ReasonNotInstalled, "the instance has not been installed yet"}
	}
	// A release always renders a workload. Helm creates the Service before
	// the Deployment, so a cache can hold the endpoint and no workload yet:
	// an empty list is not a ready one.
	if len(o.Workloads) == 0 {
		return Verdict{ctfv1alpha1.PhasePending, ReasonWorkloadsNotReady, "waiting for the instance's workloads to appear"}
	}
	for _, name := range o.Components {
		if !slices.ContainsFunc(o.Workloads, func(w Workload) bool { return w.Component == name }) {
			return Verdict{ctfv1alpha1.PhasePending, ReasonWorkloadsNotReady, componentPrefix(name) + "waiting for its workload to appear"}
		}
	}
	if failed := workloadsWhere(o.Workloads, func(s kstatus.Status) bool { return s == kstatus.FailedStatus }); len(failed) > 0 {
		return Verdict{ctfv1alpha1.PhaseError, ReasonWorkloadFailed, describe(failed)}
	}
	if notReady := workloadsWhere(o.Workloads, func(s kstatus.Status) bool { return s != kstatus.CurrentStatus }); len(notReady) > 0 {
		// A pod that cannot start explains why; a ready workload does not
		// need one (e.g. a broken new pod behind a serving old one).
		if len(o.PodProblems) > 0 {
			p := o.PodProblems[0]
			return Verdict{ctfv1alpha1.PhaseError, p.Reason, fmt.Sprintf("%s: %s", p.where(), p.Message)}
		}
		return Verdict{ctfv1alpha1.PhasePending, ReasonWorkloadsNotReady, describe(notReady)}
	}
	if o.FlagsFailed != "" {
		return Verdict{ctfv1alpha1.PhaseError, ReasonFlagDeliveryFailed, o.FlagsFailed}
	}
	if o.FlagsPending {
		return Verdict{ctfv1alpha1.PhasePending, ReasonDeliveringFlags, "writing the team's flags into the instance"}
	}
	if len(o.Endpoints) == 0 {
		return Verdict{ctfv1alpha1.PhasePending, ReasonEndpointPending, "waiting for an address to connect to"}
	}
	return Verdict{ctfv1alpha1.PhaseRunning, ReasonReady, "the instance is ready at " + o.Endpoints[0].Address}
}

// OperationFor says which release action is outstanding: none once the Helm
// reconciler has written the status of this generation (whatever the
// outcome), otherwise an install until the release is deployed, else an upgrade.
func OperationFor(generation, observedGeneration int64, conditions []metav1.Condition) Operation {
	switch {
	case observedGeneration == generation:
		return NoOperation
	case meta.IsStatusConditionTrue(conditions, ConditionDeployed):
		return Upgrading
	default:
		return Installing
	}
}

// workloadsWhere keeps the workloads whose readiness satisfies keep.
func workloadsWhere(ws []Workload, keep func(kstatus.Status) bool) []Workload {
	var out []Workload
	for _, w := range ws {
		if keep(w.Status) {
			out = append(out, w)
		}
	}
	return out
}

// componentPrefix names a component at the start of a message, e.g.
// "component redis: "; nothing for the primary one.
func componentPrefix(component string) string {
	if component == "" {
		return ""
	}
	return "component " + component + ": "
}

// describe says which workloads are in question and why, e.g.
// "Deployment web: 0/1 replicas available".
func describe(ws []Workload) string {
	parts := make([]string, 0, len(ws))
	for _, w := range ws {
		parts = append(parts, componentPrefix(w.Component)+fmt.Sprintf("%s %s: %s", w.Kind, w.Name, w.Message))
	}
	return strings.Join(parts, "; ")
}
