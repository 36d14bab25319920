package v1alpha1

// The label and annotation keys the operator, its chart and the instancer
// write and read. They are the API: platforms select instances by them and
// the gate refuses any other object that carries them. Every use names these
// constants; none spells a key out again.
const (
	// InstanceLabel is on every object of an instance: its Challenge's name.
	InstanceLabel = "ctf.challenge-operator.io/instance"
	// InstanceNamespaceLabel is on every object of an instance: its
	// Challenge's namespace (the objects live elsewhere with a namespace per
	// instance).
	InstanceNamespaceLabel = "ctf.challenge-operator.io/instance-namespace"
	// ParticipantLabel names whose an instance is: on its objects, and on
	// the Challenges the instancer creates.
	ParticipantLabel = "ctf.challenge-operator.io/participant"
	// ChallengeLabel names what an instance is: its template, or its
	// Challenge's own name without one.
	ChallengeLabel = "ctf.challenge-operator.io/challenge"
	// CreatedByLabel marks the Challenges the instancer created ("instancer").
	CreatedByLabel = "ctf.challenge-operator.io/created-by"

	// PoolLabel marks a pooled Challenge with its template's name.
	PoolLabel = "ctf.challenge-operator.io/pool"
	// ClaimedLabel is "true" on a pooled Challenge a Challenge has claimed.
	ClaimedLabel = "ctf.challenge-operator.io/claimed"
	// ClaimantAnnotation names the Challenge that claimed a pooled one:
	// "<namespace>/<name>/<uid>".
	ClaimantAnnotation = "ctf.challenge-operator.io/claimed-by"
	// ClaimantParticipantAnnotation is the claimant's participant, whose
	// identity the claimed instance's objects then carry.
	ClaimantParticipantAnnotation = "ctf.challenge-operator.io/claimed-by-participant"
	// FlagsDeliveredAnnotation on a claimed pooled instance names the claim
	// (FlagClaim) whose perTeam flags every pod of it holds, as the kubelet
	// reported the operator's writers to have written them.
	FlagsDeliveredAnnotation = "ctf.challenge-operator.io/flags-delivered"
	// ClaimLabel on a claimed pooled instance's claim Secret names the claim
	// whose flags it holds.
	ClaimLabel = "ctf.challenge-operator.io/claim"
	// CanaryLabel marks a canary instance, a Challenge the operator tries
	// in its canary namespace while a template is Degraded, with the
	// template's name.
	CanaryLabel = "ctf.challenge-operator.io/canary"
	// SolverCanaryLabel marks the canary instance a template's solver check
	// runs against, with the template's name.
	SolverCanaryLabel = "ctf.challenge-operator.io/solver-canary"
	// SolverLabel is on a solver check's Job, pods, Secret and
	// NetworkPolicy: the canary's name.
	SolverLabel = "ctf.challenge-operator.io/solver"
	// TemplateGenerationAnnotation is the template generation a pooled or
	// canary Challenge was created for: a pooled one of an older generation
	// is replaced unclaimed, a canary tried again.
	TemplateGenerationAnnotation = "ctf.challenge-operator.io/template-generation"

	// InstancerLimitsAnnotation holds a team's brakes on its Lease, as JSON.
	InstancerLimitsAnnotation = "ctf.challenge-operator.io/instancer-limits"

	// OrganiserSecretLabel marks a Secret as the organiser's, for templates
	// to read (a flag key, a static flag, a secretEnv value): set to "true"
	// by whoever may write Secrets in the operator's --flag-secret-namespaces.
	// A Secret without it (the instancer's token signing key, an instance's
	// own flag Secret, a Helm release record) is never read through a
	// template, so writing a template does not make its author any team.
	OrganiserSecretLabel = "ctf.challenge-operator.io/organiser-secret"
)

// The well-known keys of kubernetes.io the chart sets on an instance's
// objects (https://kubernetes.io/docs/concepts/overview/working-with-objects/common-labels/).
const (
	// NameLabel is "challenge" on the primary component's objects, the
	// component's name on another's.
	NameLabel = "app.kubernetes.io/name"
	// AppInstanceLabel is the Challenge's name: with NameLabel, the selector
	// of a component's pods.
	AppInstanceLabel = "app.kubernetes.io/instance"
	// ComponentLabel names an instance's component on its objects; the
	// primary component's carry none.
	ComponentLabel = "app.kubernetes.io/component"
	// ManagedByLabel is "Helm", which Helm needs to adopt live objects.
	ManagedByLabel = "app.kubernetes.io/managed-by"
)

// UninstallFinalizer is the Helm reconciler's finalizer on every Challenge
// (helm-operator-plugins' own, which it adds before anything is installed
// and removes once the release and every object of the instance are gone).
// The webhook sets it at creation, which spares the reconciler an update of
// each new Challenge.
const UninstallFinalizer = "uninstall-helm-release"
