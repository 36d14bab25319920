package metrics

import "github.com/prometheus/client_golang/prometheus"

var (
	poolInstances = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "challenge_pool_instances",
		Help: "Unclaimed instances of a template's warm pool, by state: ready (Running, claimable) or starting.",
	}, []string{templateLabel, "state"})
	poolTarget = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "challenge_pool_target",
		Help: "How many unclaimed instances the operator keeps in a template's pool now, between its min and max.",
	}, []string{templateLabel})
	poolClaims = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "challenge_pool_claims_total",
		Help: "Challenges of a pooled template by how they started: claimed (a pooled instance) or missed (the pool had none ready: a fresh install).",
	}, []string{templateLabel, "result"})
)

// ObservePool records a template's pool: its unclaimed instances, the ready
// ones among them, and how many it should hold.
func ObservePool(template string, size, ready, target int32) {
	poolInstances.WithLabelValues(template, "ready").Set(float64(ready))
	poolInstances.WithLabelValues(template, "starting").Set(float64(size - ready))
	poolTarget.WithLabelValues(template).Set(float64(target))
}

// ForgetPool drops the series of a template that no longer has a pool.
func ForgetPool(template string) {
	poolInstances.DeleteLabelValues(template, "ready")
	poolInstances.DeleteLabelValues(template, "starting")
	poolTarget.DeleteLabelValues(template)
}

// ObserveClaim counts a Challenge of a pooled template: claimed or missed.
func ObserveClaim(template string, claimed bool) {
	result := "missed"
	if claimed {
		result = "claimed"
	}
	poolClaims.WithLabelValues(template, result).Inc()
}
