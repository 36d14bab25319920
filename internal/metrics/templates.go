package metrics

import "github.com/prometheus/client_golang/prometheus"

// templateLabel names a series' template.
const templateLabel = "template"

var (
	templateDegraded = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "challenge_template_degraded",
		Help: "1 while a template's newest instances keep failing and its new starts wait for a canary instance to run, else 0.",
	}, []string{templateLabel})
	canaries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "challenge_template_canaries_total",
		Help: "Canary instances the operator tried for a Degraded template, by result: ran (the hold is lifted) or failed.",
	}, []string{templateLabel, "result"})
)

// ObserveTemplateHealth records whether a template is Degraded and, when
// ran is not nil, a canary's result.
func ObserveTemplateHealth(template string, degraded bool, ran *bool) {
	v := 0.0
	if degraded {
		v = 1
	}
	templateDegraded.WithLabelValues(template).Set(v)
	if ran != nil {
		result := "failed"
		if *ran {
			result = "ran"
		}
		canaries.WithLabelValues(template, result).Inc()
	}
}

// ForgetTemplateHealth drops the series of a deleted template.
func ForgetTemplateHealth(template string) {
	templateDegraded.DeleteLabelValues(template)
	canaries.DeleteLabelValues(template, "ran")
	canaries.DeleteLabelValues(template, "failed")
}
