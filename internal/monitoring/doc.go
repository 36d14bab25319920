// Package monitoring tests what the operator ships for Prometheus
// (config/prometheus): the alerts, run through promtool's rule unit tests,
// and their runbooks (docs/runbooks.md).
package monitoring
