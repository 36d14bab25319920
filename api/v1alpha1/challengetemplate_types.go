package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FlagMount says how the flag reaches the challenge container.
// +kubebuilder:validation:Enum=File;Env
type FlagMount string

const (
	// FlagMountFile mounts the flag as a read-only file at FlagSpec.Path.
	FlagMountFile FlagMount = "File"
	// FlagMountEnv sets the flag in the environment variable FlagSpec.EnvName.
	FlagMountEnv FlagMount = "Env"
)

// SecretKeyRef points at one key of a Secret in a given namespace.
// The operator reads it only from its own namespace or one it is told to allow.
type SecretKeyRef struct {
	// Namespace of the Secret; the organiser's, not the participants'.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespace string `json:"namespace"`
	// Name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
	// Key in the Secret's data.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key"`
}

// FlagSpec says where an instance's flag comes from and how it is mounted.
// Exactly one of static and dynamic is set.
// +kubebuilder:validation:XValidation:rule="has(self.static) != has(self.dynamic)",message="set exactly one of flag.static and flag.dynamic"
// +kubebuilder:validation:XValidation:rule="self.mount != 'Env' || has(self.envName)",message="flag.envName is required when flag.mount is Env"
type FlagSpec struct {
	// Static is one flag for every instance, read from a Secret.
	// +optional
	Static *SecretKeyRef `json:"static,omitempty"`

	// Dynamic derives a flag per instance: HMAC-SHA256 of the template name and
	// the participant under the secret key, in Format.
	// +optional
	Dynamic *DynamicFlag `json:"dynamic,omitempty"`

	// FlagDelivery is how the primary workload's container receives it.
	FlagDelivery `json:",inline"`
}

// FlagDelivery says how a container receives the instance's flag: as a
// file (by default, at /flag/flag.txt) or in an environment variable.
type FlagDelivery struct {
	// Mount is File (default) or Env.
	// +kubebuilder:default=File
	// +optional
	Mount FlagMount `json:"mount,omitempty"`

	// Path of the flag file (mount File): absolute, without "." or ".."
	// segments, not /tmp itself.
	// +kubebuilder:default="/flag/flag.txt"
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^(/[A-Za-z0-9_][-A-Za-z0-9_.]*)+$`
	// +kubebuilder:validation:XValidation:rule="self != '/tmp'",message="flag.path must not be /tmp, where the writable emptyDir is mounted"
	// +optional
	Path string `json:"path,omitempty"`

	// Mode of the flag file (mount File), 0444 (292) when unset. The file
	// belongs to root; a mode without the group's read bit, such as 0400
	// (256), keeps it root's alone, for a setuid /readflag to read: the pod
	// then gets no fsGroup, which would hand the file to the container's group.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=511
	// +optional
	FileMode *int32 `json:"fileMode,omitempty"`

	// EnvName is the variable holding the flag (mount Env).
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_]*$`
	// +kubebuilder:validation:XValidation:rule="!(self in ['CHALLENGE_HOST', 'CHALLENGE_URL', 'CHALLENGE_PORT']) && !self.matches('_PUBLIC_(HOST|URL|PORT)$')",message="CHALLENGE_HOST, CHALLENGE_URL, CHALLENGE_PORT and <COMPONENT>_PUBLIC_HOST, _URL and _PORT are set by the operator to the instance's and its components' addresses"
	// +optional
	EnvName string `json:"envName,omitempty"`
}

// NamedFlag is one of an instance's flags: one value for every team
// (static) or each team's own (perTeam), delivered to one container as a
// file or an environment variable.
// +kubebuilder:validation:XValidation:rule="has(self.static) != has(self.perTeam)",message="set exactly one of static and perTeam"
// +kubebuilder:validation:XValidation:rule="self.mount != 'Env' || has(self.envName)",message="envName is required when mount is Env"
type NamedFlag struct {
	// Name of the flag, which the platform names when it verifies a
	// submission: a DNS label.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Static is one flag for every team, read from an organiser's Secret.
	// +optional
	Static *SecretKeyRef `json:"static,omitempty"`

	// PerTeam makes each team's own flag, which says whose it is: the
	// platform's verification tells a team's flag from another team's.
	// +optional
	PerTeam *PerTeamFlag `json:"perTeam,omitempty"`

	// Component receives the flag: one of spec.components by name; the
	// primary workload when unset.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Component string `json:"component,omitempty"`

	// Sidecar receives the flag instead of its workload's main container:
	// one of that workload's sidecars by name.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Sidecar string `json:"sidecar,omitempty"`

	// FlagDelivery is how that container receives it.
	FlagDelivery `json:",inline"`
}

// PerTeamFlag makes each team's own flag: Format with its %s replaced by the
// team's id sealed under the operator's flag key (--flag-key-file), bound to
// the template and the flag's name. Nothing of the key or of another team's
// flag can be read from one.
type PerTeamFlag struct {
	// Format is the flag with one %s where the sealed body goes (lower-case
	// letters and digits), no other % and no control characters.
	// +kubebuilder:default="flag{%s}"
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.matches('^[^%\\\\p{Cc}\\\\p{Zl}\\\\p{Zp}]*%s[^%\\\\p{Cc}\\\\p{Zl}\\\\p{Zp}]*$')",message="perTeam.format must contain %s exactly once, no other %, and no control characters"
	// +optional
	Format string `json:"format,omitempty"`
}

// Sharing says whether a template's instances are each team's own or one
// shared by every team.
type Sharing string

const (
	// SharingPerTeam gives each team its own instance.
	SharingPerTeam Sharing = "PerTeam"
	// SharingShared serves one instance, the organiser's, to every team.
	SharingShared Sharing = "Shared"
)

// IsShared tells whether a template serves one instance to every team.
func (s *ChallengeTemplateSpec) IsShared() bool { return s.Sharing == SharingShared }

// SharedFlagAnswer is what verification answers for another team's flag.
// +kubebuilder:validation:Enum=Wrong;CorrectFlagged
type SharedFlagAnswer string

const (
	// SharedFlagWrong answers another team's flag as wrong.
	SharedFlagWrong SharedFlagAnswer = "Wrong"
	// SharedFlagCorrectFlagged accepts it, flagged as shared with its owner.
	SharedFlagCorrectFlagged SharedFlagAnswer = "CorrectFlagged"
)

// Submissions says how the platform's flag verification answers for a
// template. Either way, a shared flag is an Event on both teams' Challenges
// and counted in a metric.
type Submissions struct {
	// SharedFlag is the answer to another team's flag: Wrong (default) or
	// CorrectFlagged.
	// +kubebuilder:default=Wrong
	// +optional
	SharedFlag SharedFlagAnswer `json:"sharedFlag,omitempty"`

	// DestroyOnSolve stops the team's instance when the platform verifies
	// its correct flag or says it solved the challenge, as a stop does.
	// +optional
	DestroyOnSolve bool `json:"destroyOnSolve,omitempty"`
}

// DynamicFlag derives per-instance flags.
type DynamicFlag struct {
	// SecretKey holds the HMAC key; keep it out of participants' reach.
	SecretKey SecretKeyRef `json:"secretKey"`
	// Format is the flag with one %s where the derived hex digest goes, and
	// no other % and no control characters.
	// +kubebuilder:default="flag{%s}"
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="self.matches('^[^%\\\\p{Cc}\\\\p{Zl}\\\\p{Zp}]*%s[^%\\\\p{Cc}\\\\p{Zl}\\\\p{Zp}]*$')",message="flag.dynamic.format must contain %s exactly once, no other %, and no control characters"
	// +optional
	Format string `json:"format,omitempty"`
	// Length is how many hex characters of the digest are used.
	// +kubebuilder:default=32
	// +kubebuilder:validation:Minimum=8
	// +kubebuilder:validation:Maximum=64
	// +optional
	Length int32 `json:"length,omitempty"`
}

// LifetimePolicy bounds how long instances live and how often they are renewed.
// Lifetimes are between 1s and 720h (30 days), so that every stored value decodes.
// +kubebuilder:validation:XValidation:rule="!has(self.default) || !has(self.max) || duration(self.default) <= duration(self.max)",message="lifetime.default must not exceed lifetime.max"
type LifetimePolicy struct {
	// Default lifetime of an instance that does not set spec.lifetime.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]{1,9}(\.[0-9]{1,9})?(ms|s|m|h)){1,4}$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('720h')",message="must be between 1s and 720h (30 days)"
	// +optional
	Default *metav1.Duration `json:"default,omitempty"`
	// Max is the longest spec.lifetime an instance may ask for.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]{1,9}(\.[0-9]{1,9})?(ms|s|m|h)){1,4}$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('720h')",message="must be between 1s and 720h (30 days)"
	// +optional
	Max *metav1.Duration `json:"max,omitempty"`
	// MaxRenewals is how many times an instance may be renewed (spec.renewedAt).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	// +optional
	MaxRenewals *int32 `json:"maxRenewals,omitempty"`
}

// EgressRule allows instances to reach one named destination.
// Internal ranges (the private, link-local, loopback and unique-local ranges
// of IPv4 and IPv6, the metadata addresses, and --internal-cidrs) are refused
// unless the operator allows them on purpose (--allow-egress-cidrs).
type EgressRule struct {
	// Name says what the destination is, e.g. "checker".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
	// CIDR of the destination.
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="isCIDR(self)",message="must be a CIDR such as 198.51.100.0/24"
	CIDR string `json:"cidr"`
	// Ports allowed; all when empty.
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Ports []ChallengePort `json:"ports,omitempty"`
}

// ServiceRef names a Service.
type ServiceRef struct {
	// Namespace of the Service.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespace string `json:"namespace"`
	// Name of the Service.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
}

// ChallengeTemplateSpec is a catalogue entry: everything an instance of the
// challenge needs, written once by the organiser.
// +kubebuilder:validation:XValidation:rule="self.ports.all(p, self.ports.exists_one(q, q.name == p.name))",message="spec.ports names must be unique"
// +kubebuilder:validation:XValidation:rule="self.ports.all(p, self.ports.exists_one(q, q.port == p.port && q.protocol == p.protocol))",message="spec.ports must not repeat a port and protocol"
// +kubebuilder:validation:XValidation:rule="!has(self.egress) || self.egress.all(e, self.egress.exists_one(f, f.name == e.name))",message="spec.egress names must be unique"
// +kubebuilder:validation:XValidation:rule="!has(self.instancer) || !self.instancer.startable || self.sharing == 'Shared' || (has(self.lifetime) && (has(self.lifetime.default) || has(self.lifetime.max)))",message="spec.lifetime.default or spec.lifetime.max is required when spec.instancer.startable is true: instances teams start must expire"
// +kubebuilder:validation:XValidation:rule="!has(self.probes) || ((!has(self.probes.readiness) || ((!has(self.probes.readiness.http) || self.ports.exists(q, q.name == self.probes.readiness.http.port)) && (!has(self.probes.readiness.tcp) || self.ports.exists(q, q.name == self.probes.readiness.tcp.port)))) && (!has(self.probes.startup) || ((!has(self.probes.startup.http) || self.ports.exists(q, q.name == self.probes.startup.http.port)) && (!has(self.probes.startup.tcp) || self.ports.exists(q, q.name == self.probes.startup.tcp.port)))) && (!has(self.probes.liveness) || ((!has(self.probes.liveness.http) || self.ports.exists(q, q.name == self.probes.liveness.http.port)) && (!has(self.probes.liveness.tcp) || self.ports.exists(q, q.name == self.probes.liveness.tcp.port)))))",message="a probe's port must name one of spec.ports"
// +kubebuilder:validation:XValidation:rule="!has(self.sidecars) || self.sidecars.all(s, !has(s.ports) || s.ports.all(p, !self.ports.exists(q, q.name == p.name || (q.port == p.port && q.protocol == p.protocol))))",message="a sidecar's ports must differ in name and number from spec.ports"
// +kubebuilder:validation:XValidation:rule="!has(self.exposePorts) || self.exposePorts.all(e, self.ports.exists(p, p.name == e.port && (!has(p.protocol) || p.protocol == 'TCP')) && self.ports[0].name != e.port)",message="exposePorts names spec.ports' TCP ports but the first, which spec.expose exposes"
// +kubebuilder:validation:XValidation:rule="!has(self.sidecars) || self.sidecars.all(s, !has(s.ports) || s.ports.all(p, self.sidecars.all(t, t.name == s.name || !has(t.ports) || !t.ports.exists(q, q.name == p.name || (q.port == p.port && q.protocol == p.protocol)))))",message="two sidecars of a pod must not share a port name or number"
// +kubebuilder:validation:XValidation:rule="!has(self.bareNames) || !has(self.components) || self.components.all(c, c.name != self.bareNames.primary)",message="bareNames.primary must differ from every component's name"
// +kubebuilder:validation:XValidation:rule="has(self.flag) || ((!has(self.sidecars) || self.sidecars.all(s, !has(s.flag))) && (!has(self.components) || self.components.all(c, !has(c.flag) && (!has(c.sidecars) || c.sidecars.all(s, !has(s.flag))))))",message="a component's or sidecar's flag delivers the template's flag: set spec.flag"
// +kubebuilder:validation:XValidation:rule="!has(self.memoryTmp) || !self.memoryTmp || !has(self.keepImageTmp) || !self.keepImageTmp",message="memoryTmp needs the operator's /tmp: not with keepImageTmp"
// +kubebuilder:validation:XValidation:rule="!has(self.pool) || !has(self.flag) || !has(self.flag.dynamic)",message="spec.pool cannot be used with flag.dynamic: a pooled instance starts before its team is known, and a flag reaches a container only when it starts; use a static flag, or no pool"
// +kubebuilder:validation:XValidation:rule="!has(self.flag) || !has(self.flags)",message="set spec.flag or spec.flags, not both"
// +kubebuilder:validation:XValidation:rule="!has(self.flags) || self.flags.all(f, !has(f.component) || (has(self.components) && self.components.exists(c, c.name == f.component)))",message="a flag's component must be one of spec.components"
// +kubebuilder:validation:XValidation:rule="!has(self.flags) || self.flags.all(f, !has(f.sidecar) || (has(f.component) ? (has(self.components) && self.components.exists(c, c.name == f.component && has(c.sidecars) && c.sidecars.exists(s, s.name == f.sidecar))) : (has(self.sidecars) && self.sidecars.exists(s, s.name == f.sidecar))))",message="a flag's sidecar must be one of its workload's sidecars"
// +kubebuilder:validation:XValidation:rule="!has(self.flags) || self.flags.all(a, self.flags.exists_one(b, (has(b.component) ? b.component : '-') == (has(a.component) ? a.component : '-') && (has(b.sidecar) ? b.sidecar : '-') == (has(a.sidecar) ? a.sidecar : '-') && (a.mount == 'Env') == (b.mount == 'Env') && (a.mount == 'Env' ? a.envName == b.envName : a.path == b.path)))",message="two flags are delivered to the same path or variable of one container: give each its own"
// +kubebuilder:validation:XValidation:rule="!has(self.pool) || !has(self.flags) || self.flags.all(f, !has(f.perTeam) || f.mount != 'Env')",message="a pooled template's perTeam flag is a file: a pooled instance runs before its team is known and gets the team's flags at claim, and a variable cannot change in a running container"
// +kubebuilder:validation:XValidation:rule="!has(self.pool) || !has(self.flags) || self.flags.all(a, !has(a.perTeam) || (a.path.lastIndexOf('/') > 0 && self.flags.all(b, a.name == b.name || (has(a.component) ? a.component : '-') != (has(b.component) ? b.component : '-') || (has(a.sidecar) ? a.sidecar : '-') != (has(b.sidecar) ? b.sidecar : '-') || b.mount == 'Env' || a.path.substring(0, a.path.lastIndexOf('/')) != b.path.substring(0, b.path.lastIndexOf('/')))))",message="a pooled template's perTeam flag has a directory of its own (not /), which the operator fills at claim: no other flag of its container in it"
// +kubebuilder:validation:XValidation:rule="has(self.flags) || !has(self.submissions)",message="spec.submissions needs spec.flags, the flags the platform verifies"
// +kubebuilder:validation:XValidation:rule="self.sharing != 'Shared' || !has(self.pool)",message="a shared template has one instance, the organiser's: no pool"
// +kubebuilder:validation:XValidation:rule="self.sharing != 'Shared' || ((!has(self.flags) || self.flags.all(f, !has(f.perTeam))) && (!has(self.flag) || !has(self.flag.dynamic)))",message="a shared instance serves every team: its flags are static"
// +kubebuilder:validation:XValidation:rule="self.sharing != 'Shared' || !has(self.submissions) || !has(self.submissions.destroyOnSolve) || !self.submissions.destroyOnSolve",message="a shared instance serves every team: one team's solve cannot stop it (destroyOnSolve)"
type ChallengeTemplateSpec struct {
	// Image is the challenge container image.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9._/:@+-]*$`
	Image string `json:"image"`

	// Ports the challenge listens on; the first is the primary endpoint.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	Ports []ChallengePort `json:"ports"`

	// Env is extra environment for the challenge container.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Env []EnvVar `json:"env,omitempty"`

	// Resources of the challenge container.
	// +optional
	Resources *Resources `json:"resources,omitempty"`

	// SecretEnv sets environment variables from the organiser's Secrets (an
	// API key, a bot's password), in the namespaces flags may come from. The
	// operator copies each value into the instance's own Secret, as it does
	// the flag; it never appears in a status, an Event or a log.
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.all(e, self.exists_one(f, f.name == e.name))",message="secretEnv names must be unique"
	// +optional
	SecretEnv []SecretEnvVar `json:"secretEnv,omitempty"`

	// Container is the primary component's command line, probes, files and
	// writable directories.
	Container `json:",inline"`

	// Security is what instances may do on their node: restricted unless
	// the organiser says otherwise here, within the operator's flags.
	// +optional
	Security *Security `json:"security,omitempty"`

	// Components are the instance's services beside the primary one this
	// spec describes (a database, a cache, an admin bot), each its own
	// workload, reachable inside the instance only.
	// +kubebuilder:validation:MaxItems=7
	// +listType=map
	// +listMapKey=name
	// +optional
	Components []Component `json:"components,omitempty"`

	// Sidecars are more containers in the primary workload's pod, sharing
	// its network (localhost) and its security.
	// +kubebuilder:validation:MaxItems=3
	// +kubebuilder:validation:XValidation:rule="self.all(s, self.exists_one(t, t.name == s.name))",message="sidecar names must be unique"
	// +optional
	Sidecars []Sidecar `json:"sidecars,omitempty"`

	// ExposePorts exposes more of the primary workload's ports, each on a
	// host of its own, beside its first port's exposure.
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="self.all(e, self.exists_one(f, f.port == e.port))",message="a port is exposed once"
	// +optional
	ExposePorts []PortExposure `json:"exposePorts,omitempty"`

	// BareNames lets the instance's workloads reach each other by bare name
	// ("db", "redis"), from its own pods only, besides <NAME>_HOST.
	// +optional
	BareNames *BareNames `json:"bareNames,omitempty"`

	// Policy bounds what instances may use and how they may be reached.
	// +optional
	Policy *InstancePolicy `json:"policy,omitempty"`

	// Expose says how participants reach instances.
	// +optional
	Expose *Expose `json:"expose,omitempty"`

	// Lifetime bounds instance lifetimes and renewals.
	// +optional
	Lifetime *LifetimePolicy `json:"lifetime,omitempty"`

	// MaxInstancesPerParticipant caps one participant's active instances of
	// any template; the operator-wide default applies when unset.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +optional
	MaxInstancesPerParticipant *int32 `json:"maxInstancesPerParticipant,omitempty"`

	// MaxInstances caps the template's live instances, all teams together;
	// the others are Queued, installed in creation order as instances go.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	// +optional
	MaxInstances *int32 `json:"maxInstances,omitempty"`

	// Pool keeps instances of this template installed and Running before
	// any team asks, so that a Challenge claims one instead of installing:
	// Running as soon as it is created. Needs the operator's --pool-namespace.
	// +optional
	Pool *PoolSpec `json:"pool,omitempty"`

	// Flag is the instance's flag.
	// +optional
	Flag *FlagSpec `json:"flag,omitempty"`

	// Flags are the instance's named flags, each static or the team's own,
	// each delivered to the container the template names. Not with flag.
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=name
	// +optional
	Flags []NamedFlag `json:"flags,omitempty"`

	// Submissions says how the platform's flag verification answers for
	// this template, and whether a solve stops the team's instance.
	// +optional
	Submissions *Submissions `json:"submissions,omitempty"`

	// Sharing is PerTeam (each team its own instance) or Shared: one
	// instance, which the organiser starts (a Challenge of this template,
	// any participant) and nobody renews, serves every team. It never
	// expires; a second one waits, Queued, until the first is gone; the
	// instancer shows it on every team's page, and teams neither start,
	// renew nor stop it. It is fixed when the template is created: a switch
	// would make a team's private instance the one every team is shown, its
	// network open to every instance and its lifetime stopped; a template
	// of the other kind is a new template.
	// +kubebuilder:validation:Enum=PerTeam;Shared
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="sharing cannot change once the template exists (a team's own instance would become the one every team is shown): create a new template to change it"
	// +kubebuilder:default=PerTeam
	// +optional
	Sharing Sharing `json:"sharing,omitempty"`

	// Egress lists destinations instances may reach besides DNS.
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Egress []EgressRule `json:"egress,omitempty"`

	// SharedServices are Services every instance may reach, on their ports
	// only: a shared admin bot or checker in the organiser's namespace (one
	// of the operator's --shared-service-namespaces), named by namespace and
	// Service rather than by address range.
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=namespace
	// +listMapKey=name
	// +optional
	SharedServices []ServiceRef `json:"sharedServices,omitempty"`

	// Values are Helm values for charts/challenge, above the chart's defaults
	// and below everything a Challenge sets.
	// +optional
	Values *Values `json:"values,omitempty"`

	// OverridableValues are the value paths (dotted, e.g. "env" or
	// "resources.limits") a Challenge may set, through spec.values or its
	// typed fields. Anything else is refused.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="!self.exists(p, p.split('.')[0] in ['security', 'command', 'args', 'workingDir', 'runAsUser', 'runAsGroup'])",message="overridableValues may not name security settings or the container's command (security, command, args, workingDir, runAsUser, runAsGroup): they are the organiser's alone"
	// +optional
	OverridableValues []ValuePath `json:"overridableValues,omitempty"`

	// Instancer lets participants start, renew and stop their own instance
	// of this template from the operator's instancer page and API. Templates
	// are not startable there unless this says so.
	// +optional
	Instancer *InstancerAccess `json:"instancer,omitempty"`

	// Failures contains a template whose instances keep failing (a broken
	// image, a crash at start): after threshold of its newest instances fail
	// with none reaching Running between, the template is Degraded and its
	// new starts wait, Queued with that reason, instead of each team's
	// failing on its own. The operator tries one canary instance of its own
	// at a growing interval, at once after an edit of the template, and the
	// first canary to run lifts it: the waiting starts go ahead.
	// +optional
	Failures *FailurePolicy `json:"failures,omitempty"`

	// SolverCheck runs the organiser's solver against a canary instance of
	// the operator's own, on the operator's timer, so that a challenge that
	// stopped being solvable is known before teams say so. It never drives
	// a probe: a slow solver restarts nothing.
	// +optional
	SolverCheck *SolverCheck `json:"solverCheck,omitempty"`
}

// SolverFailureAction is what a failing solver check does besides telling.
// +kubebuilder:validation:Enum=Alert;Pause
type SolverFailureAction string

const (
	// SolverFailureAlert: the condition, the Events, the metric and its
	// alert; teams go on starting the challenge.
	SolverFailureAlert SolverFailureAction = "Alert"
	// SolverFailurePause also holds new starts and claims of the template,
	// Queued with the reason, until a later run passes.
	SolverFailurePause SolverFailureAction = "Pause"
)

// SolverCheck is a solver run as a Job against a canary instance: ctfcli's
// healthcheck convention, its command given "--connection-info" and the
// canary's address ("nc HOST PORT", or the URL), with the canary's flags
// in FLAG (the first) and FLAG_<NAME>. Passing is exiting 0. The Job runs
// restricted, without a service account token, and may reach the canary's
// public endpoint and DNS only.
// +kubebuilder:validation:XValidation:rule="!has(self.timeout) || !has(self.interval) || duration(self.timeout) < duration(self.interval)",message="solverCheck.timeout must be shorter than its interval"
type SolverCheck struct {
	// Image runs the solver.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9._/:@+-]*$`
	Image string `json:"image"`
	// Command replaces the image's entrypoint.
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Command []Argument `json:"command,omitempty"`
	// Args come before "--connection-info" and the address.
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Args []Argument `json:"args,omitempty"`
	// Interval is the time from one run's end to the next's start.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]{1,9}(\.[0-9]{1,9})?(ms|s|m|h)){1,4}$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10s') && duration(self) <= duration('24h')",message="must be between 10s and 24h"
	// +kubebuilder:default="5m"
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`
	// Timeout fails a run that has not ended.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]{1,9}(\.[0-9]{1,9})?(ms|s|m|h)){1,4}$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('5s') && duration(self) <= duration('30m')",message="must be between 5s and 30m"
	// +kubebuilder:default="2m"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// OnFailure is Alert (the default) or Pause: new starts and claims of
	// the template wait until a run passes again.
	// +kubebuilder:default=Alert
	// +optional
	OnFailure SolverFailureAction `json:"onFailure,omitempty"`
}

// The solver check's defaults, as the API server sets them.
const (
	DefaultSolverInterval = 5 * time.Minute
	DefaultSolverTimeout  = 2 * time.Minute
)

// RunInterval is the check's interval, its default when unset.
func (c *SolverCheck) RunInterval() time.Duration {
	if c.Interval == nil {
		return DefaultSolverInterval
	}
	return c.Interval.Duration
}

// RunTimeout is the check's timeout, its default when unset.
func (c *SolverCheck) RunTimeout() time.Duration {
	if c.Timeout == nil {
		return DefaultSolverTimeout
	}
	return c.Timeout.Duration
}

// DefaultFailureThreshold is how many failed instances in a row make a
// template Degraded when it does not say: enough that one team's bad luck
// does not hold every other team back, few enough that a broken image
// stops at a handful of teams.
const DefaultFailureThreshold = 3

// FailurePolicy says when a template's failing instances hold its starts.
type FailurePolicy struct {
	// Threshold is how many of the template's newest instances may fail in
	// a row before it is Degraded; 0 never holds its starts.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	Threshold *int32 `json:"threshold,omitempty"`
}

// FailureThreshold is the template's threshold, its default when unset.
func (s *ChallengeTemplateSpec) FailureThreshold() int32 {
	if s.Failures == nil || s.Failures.Threshold == nil {
		return DefaultFailureThreshold
	}
	return *s.Failures.Threshold
}

// PoolSpec sizes a template's warm pool: ready, unclaimed instances. The
// operator keeps as many as the busiest of the last five minutes claimed,
// never fewer than min nor more than max, and, around an opening, at least
// the opening's size.
// +kubebuilder:validation:XValidation:rule="!has(self.min) || self.min <= self.max",message="pool.min must not exceed pool.max"
type PoolSpec struct {
	// Min is how many unclaimed instances are kept when nobody claims.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	// +optional
	Min int32 `json:"min,omitempty"`
	// Max is the most unclaimed instances kept, however busy, outside an
	// opening.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	Max int32 `json:"max"`
	// Opening grows the pool ahead of a moment the organiser knows every
	// team will come at once (the CTF's start, or this challenge's release),
	// which demand, counted from the claims of the last minutes, only sees
	// once the first teams have waited for fresh installs.
	// +optional
	Opening *PoolOpening `json:"opening,omitempty"`
}

// PoolOpening is an opening the pool is grown for: from fillBefore before
// time until holdFor after it, the pool keeps at least size unclaimed
// instances (more if demand asks, within max), then goes back to its
// demand. Editing it is an edit of the template, which replaces the pool's
// unclaimed instances: set it well before fillBefore.
type PoolOpening struct {
	// Time is when the CTF, or this challenge, opens: RFC 3339, e.g.
	// 2026-11-28T18:00:00Z. Counted to the second.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`
	Time metav1.Time `json:"time"`
	// Size is how many unclaimed instances the pool holds at the opening.
	// It may exceed the pool's max, which bounds what demand alone may
	// grow the pool to: the opening's size is the organiser's deliberate
	// choice for a known moment, bounded by the same 1000.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	Size int32 `json:"size"`
	// FillBefore is how long before the opening the pool is grown to size:
	// long enough for that many instances to install and start.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]{1,9}(\.[0-9]{1,9})?(ms|s|m|h)){1,4}$`
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s') && duration(self) <= duration('24h')",message="must be positive and at most 24h"
	// +kubebuilder:default="15m"
	// +optional
	FillBefore *metav1.Duration `json:"fillBefore,omitempty"`
	// HoldFor is how long after the opening the pool keeps size before it
	// shrinks back to its demand: the first rush of teams comes over
	// minutes, not at one instant.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]{1,9}(\.[0-9]{1,9})?(ms|s|m|h)){1,4}$`
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s') && duration(self) <= duration('24h')",message="must be positive and at most 24h"
	// +kubebuilder:default="30m"
	// +optional
	HoldFor *metav1.Duration `json:"holdFor,omitempty"`
}

// InstancerAccess is how a template appears in the instancer.
type InstancerAccess struct {
	// Startable lets each team start one instance of the template; a
	// startable template needs a lifetime (default or max).
	Startable bool `json:"startable"`
	// Title is what participants see; the template's name when empty.
	// +kubebuilder:validation:MaxLength=80
	// +kubebuilder:validation:Pattern=`^[^\x00-\x1f\x7f]*$`
	// +optional
	Title string `json:"title,omitempty"`
	// ProofOfWork makes each start and renewal from the instancer cost the
	// caller a little work first: what a page solves in a moment is a
	// brake on a script that starts and renews in a loop. None when absent.
	// +optional
	ProofOfWork *ProofOfWork `json:"proofOfWork,omitempty"`
}

// ProofOfWork is the work the instancer asks for before a start or a
// renewal: an ALTCHA challenge, one SHA-256 per guess.
type ProofOfWork struct {
	// Difficulty is the challenge's maxNumber: the instancer hides a number
	// up to it, and the browser hashes its way up to that number, so a solve
	// costs Difficulty/2 SHA-256 on average and Difficulty at most. A
	// browser hashes about 200,000 a second on one core of a modest machine:
	// 100,000 takes a quarter of a second on average, the top 500,000 at
	// most 2.5 seconds. A native program hashes some 15 times faster: this
	// brakes a loop of starts, it does not stop a determined caller.
	// +kubebuilder:validation:Minimum=1000
	// +kubebuilder:validation:Maximum=500000
	Difficulty int32 `json:"difficulty"`
}

// Probes are the container's probes.
type Probes struct {
	// Readiness decides when the instance is Running (and Pending again).
	// +optional
	Readiness *Probe `json:"readiness,omitempty"`
	// Startup holds the other probes off while a slow service starts.
	// +optional
	Startup *Probe `json:"startup,omitempty"`
	// Liveness restarts a container that stops answering.
	// +optional
	Liveness *Probe `json:"liveness,omitempty"`
}

// Probe is one check of the container: exactly one of http, tcp and exec.
// The kubelet probes the pod itself, never another host.
// +kubebuilder:validation:XValidation:rule="[has(self.http), has(self.tcp), has(self.exec)].filter(x, x).size() == 1",message="exactly one of http, tcp and exec"
type Probe struct {
	// HTTP is a GET of a path on a named port; 2xx and 3xx pass.
	// +optional
	HTTP *HTTPProbe `json:"http,omitempty"`
	// TCP is a connection to a named port.
	// +optional
	TCP *TCPProbe `json:"tcp,omitempty"`
	// Exec runs a command in the container; exit status 0 passes.
	// +optional
	Exec *ExecProbe `json:"exec,omitempty"`
	// PeriodSeconds between checks (10 when unset).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=300
	// +optional
	PeriodSeconds *int32 `json:"periodSeconds,omitempty"`
	// InitialDelaySeconds before the first check.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=600
	// +optional
	InitialDelaySeconds *int32 `json:"initialDelaySeconds,omitempty"`
	// TimeoutSeconds of one check (1 when unset).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=60
	// +optional
	TimeoutSeconds *int32 `json:"timeoutSeconds,omitempty"`
	// FailureThreshold is how many failed checks in a row count (3 when unset).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	FailureThreshold *int32 `json:"failureThreshold,omitempty"`
}

// HTTPProbe is a GET of a path on one of the template's ports.
type HTTPProbe struct {
	// Path, e.g. /healthz.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^/[-._~!$&'()*+,;=:@/%a-zA-Z0-9?]*$`
	Path string `json:"path"`
	// Port names one of spec.ports.
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Port string `json:"port"`
}

// TCPProbe is a connection to one of the template's ports.
type TCPProbe struct {
	// Port names one of spec.ports.
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Port string `json:"port"`
}

// ExecProbe runs a command in the container.
type ExecProbe struct {
	// Command and its arguments.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	Command []Argument `json:"command"`
}

// SecretEnvVar is an environment variable whose value is an organiser's Secret's key.
type SecretEnvVar struct {
	// Name of the variable.
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_]*$`
	// +kubebuilder:validation:XValidation:rule="!(self in ['CHALLENGE_HOST', 'CHALLENGE_URL', 'CHALLENGE_PORT']) && !self.matches('_PUBLIC_(HOST|URL|PORT)$')",message="CHALLENGE_HOST, CHALLENGE_URL, CHALLENGE_PORT and <COMPONENT>_PUBLIC_HOST, _URL and _PORT are set by the operator to the instance's and its components' addresses"
	Name string `json:"name"`
	// Secret is the organiser's Secret and key holding the value: UTF-8, at
	// most 4096 bytes, no control or line-break character.
	Secret SecretKeyRef `json:"secret"`
}

// File is a file the template carries into its instances.
type File struct {
	// Path of the file in the container: absolute, without . or .. segments.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^(/[A-Za-z0-9_@+][-A-Za-z0-9_.@+]*)+$`
	Path string `json:"path"`
	// Content of the file: text, at most 64 KiB, with no control character
	// but tab and line breaks.
	// +kubebuilder:validation:MaxLength=65536
	// +kubebuilder:validation:Pattern=`^[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f]*$`
	Content string `json:"content"`
	// Mode of the file, 0444 (292) when unset; it belongs to root.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=511
	// +optional
	Mode *int32 `json:"mode,omitempty"`
}

// ScratchMount is a writable directory of the container.
type ScratchMount struct {
	// Path where it is mounted: absolute, not / nor /tmp (see KeepImageTmp
	// and values.tmpSizeLimit), without . or .. segments.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^(/[-_.a-zA-Z0-9@+]+)+$`
	// +kubebuilder:validation:XValidation:rule="self != '/tmp' && !self.split('/').exists(s, s == '.' || s == '..')",message="must not be /tmp or contain . or .. segments"
	Path string `json:"path"`
	// SizeLimit bounds it: at most the operator's --max-ephemeral-storage
	// (or the template's policy) when rendered; 64Mi when unset.
	// +kubebuilder:validation:XValidation:rule="isQuantity(self) && quantity(self).compareTo(quantity('1Ti')) <= 0",message="must be at most 1Ti"
	// +optional
	SizeLimit *Quantity `json:"sizeLimit,omitempty"`
	// Memory backs it with memory (tmpfs), counted against the container's
	// memory limit: fast, and gone with the pod.
	// +optional
	Memory bool `json:"memory,omitempty"`
}

// Argument is one word of a command line: any text without control or
// line-break characters.
// +kubebuilder:validation:MaxLength=4096
// +kubebuilder:validation:Pattern=`^[^\p{Cc}\p{Zl}\p{Zp}]*$`
type Argument string

// ValuePath is a dotted path of chart values, e.g. "resources.limits".
// +kubebuilder:validation:MaxLength=128
// +kubebuilder:validation:Pattern=`^[a-zA-Z][-a-zA-Z0-9_]*(\.[a-zA-Z][-a-zA-Z0-9_]*)*$`
type ValuePath string

// InstancePolicy is what the organiser allows instances of a template; the
// operator's defaults (--max-cpu, --max-memory, --max-ephemeral-storage)
// apply where it is silent.
type InstancePolicy struct {
	// MaxCPU is the highest CPU limit an instance's container may have: at
	// most the operator's --max-cpu, or its --template-max-cpu when the admin
	// lets templates go higher; a template asking more is not Accepted.
	// +optional
	MaxCPU *Quantity `json:"maxCPU,omitempty"`
	// MaxMemory is the highest memory limit an instance's container may
	// have: at most the operator's --max-memory, or its --template-max-memory
	// when the admin lets templates go higher.
	// +optional
	MaxMemory *Quantity `json:"maxMemory,omitempty"`
	// MaxEphemeralStorage is the highest ephemeral-storage limit of an
	// instance's container and size of its scratch space (/tmp); it can only
	// lower the operator's --max-ephemeral-storage.
	// +optional
	MaxEphemeralStorage *Quantity `json:"maxEphemeralStorage,omitempty"`
	// MaxReplicas is how many pods an instance may run (1 when unset).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10
	// +optional
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`
	// LoadBalancer allows instances to be exposed by a LoadBalancer Service.
	// +optional
	LoadBalancer bool `json:"loadBalancer,omitempty"`
	// InternetEgress allows instances to reach the internet (everything
	// outside the internal ranges and the metadata address).
	// +optional
	InternetEgress bool `json:"internetEgress,omitempty"`
	// AllowedRegistries are the registry hosts ("ghcr.io",
	// "registry.example:5000") or repository prefixes ("ghcr.io/org")
	// instances' images may come from, within the operator's own list
	// (--allowed-registries). Unset: the operator's list, or any registry
	// named by a public DNS name when it has none.
	// +kubebuilder:validation:MaxItems=32
	// +listType=set
	// +optional
	AllowedRegistries []RegistryPrefix `json:"allowedRegistries,omitempty"`
}

// RegistryPrefix is a registry host, with an optional port, and optionally a
// repository path under it, in lower case.
// +kubebuilder:validation:MaxLength=255
// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?)(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(:[0-9]{1,5})?(/[a-z0-9]+([._-][a-z0-9]+)*)*$`
type RegistryPrefix string

// ChallengeTemplateStatus reports the template's use.
type ChallengeTemplateStatus struct {
	// ObservedGeneration is the generation the conditions were computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions say whether the template is within the cluster admin's
	// bounds (Accepted, with the reason naming the flag when not), whether
	// its instances keep failing (Degraded: its new starts wait) and whether
	// it can serve instances (Ready); Stalled mirrors a refusal, for kstatus.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ActiveInstances is the number of Challenges of this template not being
	// deleted, its pooled instances among them. Defaulted so that the pool
	// controller may write status.pool before the first count is written.
	// +kubebuilder:default=0
	ActiveInstances int32 `json:"activeInstances"`
	// Pool is the state of the template's warm pool, when it has one.
	// +optional
	Pool *PoolStatus `json:"pool,omitempty"`
	// StaticFlags are the digests of the template's static named flags,
	// which the instancer verifies submissions against: a keyed HMAC under
	// the operator's flag key, never the value, which only the key's
	// holders can check.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=8
	// +optional
	StaticFlags []StaticFlagDigest `json:"staticFlags,omitempty"`
	// Health is how the template's newest instances fared, and its canary
	// while it is Degraded.
	// +optional
	Health *TemplateHealth `json:"health,omitempty"`
	// Solver is the state of the template's solver check, when it has one
	// (the SolverHealthy condition says what it concluded).
	// +optional
	Solver *SolverStatus `json:"solver,omitempty"`
}

// SolverStatus is what the operator knows of a template's solver check.
type SolverStatus struct {
	// Canary names the instance the solver runs against, in the operator's
	// canary namespace.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Canary string `json:"canary,omitempty"`
	// Job names the run in flight, if any.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Job string `json:"job,omitempty"`
	// Runs counts the runs started for this canary; each run's Job is named
	// after it.
	// +optional
	Runs int32 `json:"runs,omitempty"`
	// LastRunAt is when the last run ended.
	// +optional
	LastRunAt *metav1.Time `json:"lastRunAt,omitempty"`
	// ConsecutiveFailures counts the runs that failed since one passed.
	// +optional
	ConsecutiveFailures int32 `json:"consecutiveFailures,omitempty"`
	// NextRunAt is when the next run starts.
	// +optional
	NextRunAt *metav1.Time `json:"nextRunAt,omitempty"`
}

// TemplateHealth is what the operator knows of a template's newest
// instances (the Degraded condition says what it concluded).
type TemplateHealth struct {
	// Failures counts the template's instances that failed since one last
	// reached Running or the template was last lifted.
	// +optional
	Failures int32 `json:"failures,omitempty"`
	// Canary names the canary instance being tried, a Challenge of the
	// operator's own in its canary namespace.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Canary string `json:"canary,omitempty"`
	// CanaryAttempts counts the canaries that failed since the template
	// became Degraded or was last edited: each one doubles the wait.
	// +optional
	CanaryAttempts int32 `json:"canaryAttempts,omitempty"`
	// NextCanaryAt is when the next canary is tried.
	// +optional
	NextCanaryAt *metav1.Time `json:"nextCanaryAt,omitempty"`
}

// StaticFlagDigest is one static flag's digest.
type StaticFlagDigest struct {
	// Name of the flag.
	// +kubebuilder:validation:MaxLength=32
	Name string `json:"name"`
	// Digest is the flag's HMAC-SHA256 under a key derived from the
	// operator's flag key, in hex.
	// +kubebuilder:validation:MaxLength=64
	Digest string `json:"digest"`
	// Previous are the digests of the flag's earlier values that running
	// instances still serve: a container reads its flag when it starts, so
	// a changed Secret reaches an instance only when its pods start again.
	// The instancer accepts them as it accepts Digest, so that a team is
	// never told wrong for the flag its own instance shows; each goes once
	// no running instance serves it. Newest last.
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=4
	// +optional
	Previous []PreviousStaticFlag `json:"previous,omitempty"`
}

// PreviousStaticFlag is an earlier value of a static flag, as a digest,
// that running instances still serve.
type PreviousStaticFlag struct {
	// Digest is the earlier value's digest, as StaticFlagDigest's.
	// +kubebuilder:validation:MaxLength=64
	Digest string `json:"digest"`
	// RetiredAt is when the operator saw the flag's Secret change from it.
	RetiredAt metav1.Time `json:"retiredAt"`
	// Instances counts the running instances that may still serve it: their
	// flag Secret holds it, or a container of theirs started before that
	// Secret last changed.
	// +kubebuilder:validation:Minimum=0
	Instances int32 `json:"instances"`
}

// PoolStatus counts a template's pooled instances that no team has claimed.
type PoolStatus struct {
	// Size is how many unclaimed instances the pool holds, ready or not.
	Size int32 `json:"size"`
	// Ready is how many of them are Running, ready to be claimed.
	Ready int32 `json:"ready"`
	// Target is how many the operator keeps now: between min and max, or
	// at least the opening's size within its window.
	Target int32 `json:"target"`
	// Opening is the time of the opening whose window holds the pool now,
	// unset outside any window. It marks the window's start and end as
	// seen, so that each is announced once (Events PoolOpening and
	// PoolOpeningOver), across restarts of the operator too.
	// +optional
	Opening *metav1.Time `json:"opening,omitempty"`
}

// ChallengeTemplate is an organiser's catalogue entry that Challenges instantiate.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=chalt,categories=ctf
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.image`
// +kubebuilder:printcolumn:name="Accepted",type=string,JSONPath=`.status.conditions[?(@.type=="Accepted")].status`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Degraded",type=string,JSONPath=`.status.conditions[?(@.type=="Degraded")].status`
// +kubebuilder:printcolumn:name="Active",type=integer,JSONPath=`.status.activeInstances`
// +kubebuilder:printcolumn:name="Pool",type=integer,JSONPath=`.status.pool.ready`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS label that starts with a letter (it is the value of the instances' challenge label and starts their names, which name Services)"
type ChallengeTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ChallengeTemplateSpec `json:"spec"`
	// +optional
	Status ChallengeTemplateStatus `json:"status,omitempty"`
}

// ChallengeTemplateList is a list of ChallengeTemplates.
// +kubebuilder:object:root=true
type ChallengeTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ChallengeTemplate `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ChallengeTemplate{}, &ChallengeTemplateList{})
}
