package v1alpha1

// OrganiserSecretLabel marks a Secret as the organiser's, for templates to
// read (a flag key, a static flag, a secretEnv value): set to "true" by
// whoever may write Secrets in the operator's --flag-secret-namespaces. A
// Secret without it (the instancer's token signing key, an instance's own
// flag Secret, a Helm release record) is never read through a template, so
// writing a template does not make its author any team.
const OrganiserSecretLabel = "ctf.challenge-operator.io/organiser-secret"
