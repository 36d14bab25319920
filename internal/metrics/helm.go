package metrics

import "github.com/prometheus/client_golang/prometheus"

var helmAnswered = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "challenge_helm_requests_answered_total",
	Help: "Requests of Helm's client the operator answered without sending them to the API server, by verb: GET (an install's check that an object does not exist yet, answered from the cache) and DELETE (an install's rollback of an object it found was not its own, not sent).",
}, []string{"verb"})

// ObserveHelmRequestAnswered counts a request of Helm's client answered
// without the API server.
func ObserveHelmRequestAnswered(verb string) { helmAnswered.WithLabelValues(verb).Inc() }
