package metrics

import "github.com/prometheus/client_golang/prometheus"

// templateLabel names a series' template.
const templateLabel = "template"

var (
	templateDegraded = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "challenge_template_degraded",
		Help: "1 while a template's newest instances keep failing and its new starts wait for a canary instance to run, else 0.",
	}, []string{templateLabel})
	solverHealthy = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "challenge_solver_healthy",
		Help: "1 while a template's last solver check run solved its canary, 0 while it did not; absent before the first run.",
	}, []string{templateLabel})
	solverRuns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "challenge_solver_check_runs_total",
		Help: "Solver check runs against a template's canary, by result: passed or failed.",
	}, []string{templateLabel, "result"})
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

// ObserveSolverHealth records a template's SolverHealthy condition:
// healthy, or not; unknown drops the series (no run has ended yet).
func ObserveSolverHealth(template string, healthy, unknown bool) {
	switch {
	case unknown:
		solverHealthy.DeleteLabelValues(template)
	case healthy:
		solverHealthy.WithLabelValues(template).Set(1)
	default:
		solverHealthy.WithLabelValues(template).Set(0)
	}
}

// ObserveSolverRun counts a solver run's result.
func ObserveSolverRun(template string, passed bool) {
	result := "failed"
	if passed {
		result = "passed"
	}
	solverRuns.WithLabelValues(template, result).Inc()
}

// ForgetSolver drops the solver series of a template without a check.
func ForgetSolver(template string) {
	solverHealthy.DeleteLabelValues(template)
	solverRuns.DeleteLabelValues(template, "passed")
	solverRuns.DeleteLabelValues(template, "failed")
}
