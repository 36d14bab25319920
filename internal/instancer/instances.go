package instancer

import (
	"fmt"
	"time"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
)

// Template is a startable ChallengeTemplate as a participant sees it.
type Template struct {
	Name  string `json:"name"`
	Title string `json:"title"`
	// Lifetime of an instance, as Go prints durations ("1h0m0s"); empty when
	// the operator's default applies.
	Lifetime    string `json:"lifetime,omitempty"`
	MaxRenewals *int32 `json:"maxRenewals,omitempty"`
	// ProofOfWork is true when each start and renewal needs a proof of work
	// (GET /api/v1/instances/{template}/challenge).
	ProofOfWork bool `json:"proofOfWork,omitempty"`
	// Shared says the template has one instance, the organisers', which
	// every team sees and none starts, stops or renews.
	Shared bool `json:"shared,omitempty"`
}

// Instance is a team's instance of a template as a participant sees it.
type Instance struct {
	Template string `json:"template"`
	Name     string `json:"name"`
	// Phase is None, Queued, Pending, Running, Error or Deleted.
	Phase   string `json:"phase"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Connect is ready to copy: a URL, or "nc host port".
	Connect   string     `json:"connect,omitempty"`
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
	// RenewalsLeft is absent when renewals are not limited.
	RenewalsLeft *int32 `json:"renewalsLeft,omitempty"`
	// QueuePosition is, while Queued, the instance's place: 1 is next.
	QueuePosition *int32 `json:"queuePosition,omitempty"`
}

func templateView(t *ctfv1alpha1.ChallengeTemplate) Template {
	v := Template{Name: t.Name, Title: t.Name, ProofOfWork: asksProofOfWork(t), Shared: t.Spec.IsShared()}
	if t.Spec.Instancer != nil && t.Spec.Instancer.Title != "" {
		v.Title = t.Spec.Instancer.Title
	}
	if l := t.Spec.Lifetime; l != nil && !v.Shared {
		if l.Default != nil {
			v.Lifetime = l.Default.Duration.String()
		}
		v.MaxRenewals = l.MaxRenewals
	}
	return v
}

func instanceView(ch *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate) Instance {
	st := ch.Status
	v := Instance{Template: ch.Spec.Template, Name: ch.Name, Phase: string(st.Phase), Reason: st.Reason}
	if v.Phase == "" {
		v.Phase = string(ctfv1alpha1.PhaseNone)
	}
	deleting := ch.DeletionTimestamp != nil
	if deleting {
		// The status may still say Running until the operator writes Deleted.
		v.Phase, v.Reason = string(lifecycle.Deleting.Phase), lifecycle.Deleting.Reason
	}
	v.Message = participantMessage(ctfv1alpha1.Phase(v.Phase), v.Reason)
	if st.Phase == ctfv1alpha1.PhaseQueued && !deleting {
		v.QueuePosition = st.QueuePosition
		if p := st.QueuePosition; p != nil && *p > 0 {
			v.Message = queuedMessage(*p)
		}
	}
	if e := st.Endpoint; e != nil && st.Phase == ctfv1alpha1.PhaseRunning && !deleting {
		v.Connect = connectString(e)
	}
	if st.ExpiresAt != nil {
		at := st.ExpiresAt.UTC()
		v.ExpiresAt = &at
	}
	if tmpl != nil && tmpl.Spec.Lifetime != nil && tmpl.Spec.Lifetime.MaxRenewals != nil {
		left := max(0, *tmpl.Spec.Lifetime.MaxRenewals-st.Renewals)
		v.RenewalsLeft = &left
	}
	return v
}

// connectString is what a participant pastes: the URL of an HTTP endpoint,
// the endpoint's own command (ncat --ssl for TCP inside TLS), else an nc
// command (with -u for UDP).
func connectString(e *ctfv1alpha1.Endpoint) string {
	if e.URL != "" {
		return e.URL
	}
	if e.Connect != "" {
		return e.Connect
	}
	if e.Protocol == ctfv1alpha1.ProtocolUDP {
		return fmt.Sprintf("nc -u %s %d", e.Host, e.Port)
	}
	return fmt.Sprintf("nc %s %d", e.Host, e.Port)
}

// participantMessage is what a team reads about its instance: a fixed
// sentence per phase and reason, never the status message, which is written
// for organisers and names pods, quotas, nodes and the scheduler's reasoning.
func participantMessage(phase ctfv1alpha1.Phase, reason string) string {
	switch phase {
	case ctfv1alpha1.PhaseRunning:
		return "Your instance is ready."
	case ctfv1alpha1.PhaseNone:
		// Accepted, and the operator has not decided yet: not queued
		// (Queued is a phase of its own).
		return "Your instance is being accepted; it starts in a moment."
	case ctfv1alpha1.PhaseQueued:
		return "Your instance is queued: it starts when others end." + waitingCostsNoTime
	case ctfv1alpha1.PhasePending:
		return "Your instance is starting."
	case ctfv1alpha1.PhaseDeleted:
		return "Your instance is being removed."
	case ctfv1alpha1.PhaseError:
		switch reason {
		case lifecycle.ReasonQuotaExceeded:
			return "Your team has too many instances running; stop one first."
		case lifecycle.ReasonBudgetExceeded:
			return "Your team's running instances use all its share of the cluster; stop one first."
		case "CrashLoopBackOff":
			return "The challenge keeps crashing; the organisers have been told."
		}
		return "Your instance could not start; the organisers have been told."
	}
	return "Your instance is being prepared."
}

// waitingCostsNoTime tells a team with a Queued instance that its lifetime
// counts from admission (status.admittedAt), not from its start request.
const waitingCostsNoTime = " Its time runs from when it starts, not while it waits."

// queuedMessage is a Queued instance's sentence at position (1 is next).
func queuedMessage(position int32) string {
	if position == 1 {
		return "Your instance is queued, next in line: it starts when another ends." + waitingCostsNoTime
	}
	return fmt.Sprintf("Your instance is queued, %s in line: it starts when others end.", ordinal(position)) + waitingCostsNoTime
}

// ordinal writes n as "1st", "2nd", "3rd", "4th", "11th", "22nd"...
func ordinal(n int32) string {
	suffix := "th"
	switch {
	case n%100 >= 11 && n%100 <= 13:
	case n%10 == 1:
		suffix = "st"
	case n%10 == 2:
		suffix = "nd"
	case n%10 == 3:
		suffix = "rd"
	}
	return fmt.Sprintf("%d%s", n, suffix)
}
