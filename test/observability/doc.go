// Package observability tests what the operator ships for Prometheus and
// Grafana (config/prometheus, config/grafana): the alerts, run through
// promtool's rule unit tests, and their runbooks (docs/runbooks.md); the
// ServiceMonitors against the Services they scrape; the dashboard's queries
// and its picture. It has no code of its own.
package observability
