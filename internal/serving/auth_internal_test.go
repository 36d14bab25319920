package serving

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// TestReviewFailed: what the token authenticators return for a token the
// API server does not authenticate is a 401; a review that could not be
// made is a 500.
func TestReviewFailed(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "authentication.k8s.io", Resource: "tokenreviews"}, "", errors.New("no"))
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"the review's own error message", errors.New("[invalid bearer token, square/go-jose: error in cryptographic primitive]"), false},
		{"invalid bearer token", errors.New("invalid bearer token"), false},
		{"an aggregate of refusals", utilerrors.NewAggregate([]error{errors.New("invalid bearer token"), errors.New("token expired")}), false},
		{"the API server refuses the review", forbidden, true},
		{"the API server is unreachable", &url.Error{Op: "Post", URL: "https://api/", Err: errors.New("connection refused")}, true},
		{"the review timed out", fmt.Errorf("reviewing: %w", context.DeadlineExceeded), true},
		{"an aggregate with a failure", utilerrors.NewAggregate([]error{errors.New("invalid bearer token"), forbidden}), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := reviewFailed(tc.err); got != tc.want {
				t.Fatalf("reviewFailed(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}
