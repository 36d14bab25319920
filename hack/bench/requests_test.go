package main

import (
	"reflect"
	"testing"
)

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

// TestRequestsIn: the API server's requests are counted by verb, resource
// and subresource, with their time; its closed watchers and ClusterIP
// allocations are rows of their own.
func TestRequestsIn(t *testing.T) {
	body := `apiserver_request_total{code="201",component="apiserver",group="ctf.challenge-operator.io",resource="challenges",scope="namespace",subresource="",verb="POST",version="v1alpha1"} 400
apiserver_request_total{code="403",component="apiserver",group="ctf.challenge-operator.io",resource="challenges",scope="namespace",subresource="",verb="POST",version="v1alpha1"} 100
apiserver_request_duration_seconds_sum{component="apiserver",group="ctf.challenge-operator.io",resource="challenges",scope="namespace",subresource="",verb="POST",version="v1alpha1"} 5
apiserver_terminated_watchers_total{group="ctf.challenge-operator.io",resource="challenges"} 18
kube_apiserver_clusterip_allocator_allocation_duration_seconds_count{scope="dynamic"} 4
kube_apiserver_clusterip_allocator_allocation_duration_seconds_sum{scope="dynamic"} 0.2
`
	got := requestsIn(body)
	want := map[string]requests{
		"challenges  POST":                {n: 500, seconds: 5},
		"challenges" + terminatedWatchers: {n: 18},
		clusterIPAllocations:              {n: 4, seconds: 0.2},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("requestsIn = %v, want %v", got, want)
	}
}
