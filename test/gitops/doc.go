// Package gitops tests what the operator ships for GitOps tools: Argo CD's
// health checks of a Challenge and a ChallengeTemplate (config/argocd), run by
// the Lua interpreter Argo CD embeds, on the cases of their health_test.yaml.
package gitops
