package lifecycle

import (
	"errors"
	"fmt"
	"regexp"
)

// Reasons for specs that retrying cannot fix, found before anything is installed.
const (
	ReasonTemplateNotFound = "TemplateNotFound"
	ReasonValueNotAllowed  = "ValueNotAllowed"
	ReasonLifetimeTooLong  = "LifetimeTooLong"
	ReasonQuotaExceeded    = "QuotaExceeded"
)

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
	ReasonTemplateNotFound: true, ReasonValueNotAllowed: true, ReasonLifetimeTooLong: true, ReasonQuotaExceeded: true,
}

var reasonPrefix = regexp.MustCompile(`^([A-Z][A-Za-z]+): (?s)(.*)$`)

// splitReason recovers a ReasonedError's reason from a condition message.
func splitReason(message string) (reason, rest string, ok bool) {
	m := reasonPrefix.FindStringSubmatch(message)
	if m == nil || !specReasons[m[1]] {
		return "", message, false
	}
	return m[1], m[2], true
}
