package instancer

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// apiError is every error the API returns: a stable code for programs and a
// sentence a participant understands.
type apiError struct {
	Status     int    `json:"-"`
	Code       string `json:"code"`
	Message    string `json:"message"`
	RetryAfter int    `json:"retryAfterSeconds,omitempty"`
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

var (
	errInternal = &apiError{http.StatusInternalServerError, "internal", "Something went wrong on our side; try again in a moment.", 0}
	errNotFound = &apiError{http.StatusNotFound, "not_found", "You have no instance of this challenge.", 0}
)

func errUnauthorized(msg string) *apiError {
	return &apiError{Status: http.StatusUnauthorized, Code: "unauthorized", Message: msg}
}

func errBadRequest(msg string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: "bad_request", Message: msg}
}

func errNotStartable(template string) *apiError {
	return &apiError{Status: http.StatusNotFound, Code: "template_not_startable",
		Message: fmt.Sprintf("The challenge %q cannot be started from here.", template)}
}

func errWait(code, what string, wait time.Duration) *apiError {
	secs := int(wait.Round(time.Second) / time.Second)
	secs = max(secs, 1)
	return &apiError{Status: http.StatusTooManyRequests, Code: code, RetryAfter: secs,
		Message: fmt.Sprintf("%s Try again in %d seconds.", what, secs)}
}

func writeError(w http.ResponseWriter, err *apiError) {
	if err.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(err.RetryAfter))
	}
	writeJSON(w, err.Status, err)
}
