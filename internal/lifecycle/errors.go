package lifecycle

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
)

// Reasons for specs that retrying cannot fix, found before anything is installed.
const (
	ReasonTemplateNotFound = "TemplateNotFound"
	ReasonValueNotAllowed  = "ValueNotAllowed"
	ReasonLifetimeTooLong  = "LifetimeTooLong"
	ReasonQuotaExceeded    = "QuotaExceeded"
	// ReasonBudgetExceeded means the participant's live instances and this
	// one would request more than the team budget the cluster admin set
	// (--team-budget-cpu, --team-budget-memory); the message gives the
	// budget, what is in use and what this instance needs.
	ReasonBudgetExceeded = "BudgetExceeded"
	// ReasonPolicyViolation means what the instance would run breaks the
	// operator's security policy; the message names the rule and the object.
	ReasonPolicyViolation = "PolicyViolation"
	// ReasonFlagInvalid means the template's static flag cannot be rendered;
	// the message names its Secret and key, never its value.
	ReasonFlagInvalid = "FlagInvalid"
	// ReasonSecretEnvInvalid means a value of the template's secretEnv cannot
	// be rendered; the message names its Secret and key, never its value.
	ReasonSecretEnvInvalid = "SecretEnvInvalid"
	// ReasonSecretFileInvalid means a secret file's content cannot be
	// rendered (not text, too long); the message names the field, its
	// Secret and key, never the value.
	ReasonSecretFileInvalid = "SecretFileInvalid"
	// ReasonValuesTooLarge means the text an instance's values carry (its
	// files, secret files, secretEnv, env, flags) is more than Helm's release
	// record can hold; the message names the total and the largest fields,
	// never a value.
	ReasonValuesTooLarge = "ValuesTooLarge"
	// ReasonSharedServiceNotFound: a Service the template lets instances
	// reach does not exist (yet); the operator retries until it does.
	ReasonSharedServiceNotFound = "SharedServiceNotFound"
	// ReasonQueued means the instance waits for capacity (phase Queued).
	ReasonQueued = "Queued"
	// ReasonClaimed means the instance is one the Challenge claimed from its
	// template's warm pool: nothing is installed for the Challenge itself.
	ReasonClaimed = "Claimed"
	// ReasonPooledInstanceGone means the pooled instance a Challenge claimed
	// was deleted from under it; delete the Challenge and start another.
	ReasonPooledInstanceGone = "PooledInstanceGone"
)

// PooledInstanceGone is the error of a Challenge whose claimed pooled
// instance was deleted from under it.
func PooledInstanceGone(pooled *ctfv1alpha1.PooledInstanceRef) *ReasonedError {
	return &ReasonedError{Reason: ReasonPooledInstanceGone, Message: fmt.Sprintf(
		"the pooled instance %s/%s this Challenge claimed was deleted; delete this Challenge to start another", pooled.Namespace, pooled.Name)}
}

// ReasonedError is an error with the CamelCase reason the phase should carry.
// The Helm reconciler keeps only error text in its condition, so the reason
// travels as a "Reason: message" prefix that PhaseFor reads back.
type ReasonedError struct {
	Reason  string
	Message string
}

// Errorf returns a ReasonedError.
func Errorf(reason, format string, args ...any) error {
	return &ReasonedError{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

func (e *ReasonedError) Error() string { return e.Reason + ": " + e.Message }

// IsReason reports whether err is a ReasonedError with the given reason.
func IsReason(err error, reason string) bool {
	var re *ReasonedError
	return errors.As(err, &re) && re.Reason == reason
}

// specReasons are the reasons splitReason trusts, so that no Helm error text
// that happens to start with a capitalised word is taken for one.
var specReasons = map[string]bool{
	ReasonTemplateNotFound: true, ReasonValueNotAllowed: true, ReasonLifetimeTooLong: true, ReasonQuotaExceeded: true, ReasonBudgetExceeded: true,
	ReasonPolicyViolation: true, ReasonFlagInvalid: true, ReasonSecretEnvInvalid: true, ReasonSecretFileInvalid: true, ReasonValuesTooLarge: true, ReasonSharedServiceNotFound: true,
	ReasonQueued: true, ReasonClaimed: true, ReasonPooledInstanceGone: true,
}

var reasonPrefix = regexp.MustCompile(`^([A-Z][A-Za-z]+): (?s)(.*)$`)

// terminalPrefix is how controller-runtime's reconcile.TerminalError reads.
const terminalPrefix = "terminal error: "

// splitReason recovers a ReasonedError's reason from a condition message,
// also once Helm and the reconciler have wrapped it in their own words (the
// post-render gate's refusal, a template gone between translation and
// post-rendering): the earliest "<Reason>: " in the message wins.
func splitReason(message string) (reason, rest string, ok bool) {
	if m := reasonPrefix.FindStringSubmatch(strings.TrimPrefix(message, terminalPrefix)); m != nil && specReasons[m[1]] {
		return m[1], m[2], true
	}
	at := -1
	for r := range specReasons {
		if i := strings.Index(message, r+": "); i >= 0 && (at < 0 || i < at) {
			at, reason = i, r
		}
	}
	if at < 0 {
		return "", message, false
	}
	return reason, message[at+len(reason)+2:], true
}

// InstanceFailed tells whether a status says its instance failed to start
// or run (a Helm install error, an unpullable image, a crash): the
// template's failure, not a refusal of this Challenge's own spec or its
// team's bounds, nor a wait.
func InstanceFailed(st *ctfv1alpha1.ChallengeStatus) bool {
	return st.Phase == ctfv1alpha1.PhaseError && !specReasons[st.Reason]
}
