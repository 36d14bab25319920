// Package gitops tests what the operator ships for GitOps tools: Argo CD's
// health check of a Challenge (config/argocd), run by the Lua interpreter
// Argo CD embeds, on the cases of its health_test.yaml.
package gitops
