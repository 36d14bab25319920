package main

import "testing"

// TestSentRequestsLeaveOutThoseAnswered: what the operator answered
// without the API server is counted by client-go but was never sent.
func TestSentRequestsLeaveOutThoseAnswered(t *testing.T) {
	body := `# HELP rest_client_requests_total Number of HTTP requests
rest_client_requests_total{code="201",host="h",method="POST"} 40
rest_client_requests_total{code="404",host="h",method="GET"} 20
challenge_helm_requests_answered_total{verb="GET"} 16
challenge_helm_requests_answered_total{verb="DELETE"} 1
`
	if got := sentRequests(body); got != 43 {
		t.Fatalf("sentRequests = %v, want 43", got)
	}
	if got := sentRequests(`rest_client_requests_total{code="200"} 7`); got != 7 {
		t.Fatalf("without the counter (stock): %v, want 7", got)
	}
}
