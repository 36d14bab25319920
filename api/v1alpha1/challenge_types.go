package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Protocol is the transport protocol of a challenge port.
// +kubebuilder:validation:Enum=TCP;UDP
type Protocol string

const (
	// ProtocolTCP is a TCP port; most challenges (web, netcat) use it.
	ProtocolTCP Protocol = "TCP"
	// ProtocolUDP is a UDP port, for the rare challenge that needs datagrams.
	ProtocolUDP Protocol = "UDP"
)

// ExposeType says how participants reach an instance.
// +kubebuilder:validation:Enum=ClusterIP;NodePort;LoadBalancer;Ingress;TLSRoute;HTTPRoute
type ExposeType string

const (
	// ExposeClusterIP keeps the instance inside the cluster, e.g. behind the platform's own proxy.
	ExposeClusterIP ExposeType = "ClusterIP"
	// ExposeNodePort opens a port on every node.
	ExposeNodePort ExposeType = "NodePort"
	// ExposeLoadBalancer asks the cloud for an external address.
	ExposeLoadBalancer ExposeType = "LoadBalancer"
	// ExposeIngress publishes the first port as HTTP on the instance's own host.
	ExposeIngress ExposeType = "Ingress"
	// ExposeTLSRoute routes the first port's raw TCP, inside TLS, by SNI on a
	// Gateway's shared TLS port to the instance's own host: participants
	// connect with "ncat --ssl <host> <port>", and no node port is used.
	ExposeTLSRoute ExposeType = "TLSRoute"
	// ExposeHTTPRoute publishes the first port as HTTP on the instance's own
	// host through a Gateway's HTTP listener (HTTPS with expose.tls).
	ExposeHTTPRoute ExposeType = "HTTPRoute"
)

// Phase is the lifecycle stage of a Challenge instance as a CTF platform sees it.
// +kubebuilder:validation:Enum=None;Queued;Pending;Running;Error;Deleted
type Phase string

const (
	// PhaseNone means accepted, nothing installed yet.
	PhaseNone Phase = "None"
	// PhaseQueued means the instance waits for capacity (the operator's
	// --max-instances or its template's maxInstances): it is installed, in
	// creation order, once the instances ahead of it are; status.queuePosition
	// says where it stands.
	PhaseQueued Phase = "Queued"
	// PhasePending means the release is being installed or its workloads are not yet ready.
	PhasePending Phase = "Pending"
	// PhaseRunning means every workload is ready and the endpoint is known.
	PhaseRunning Phase = "Running"
	// PhaseError means the instance failed; reason and message say why.
	PhaseError Phase = "Error"
	// PhaseDeleted means the instance is being torn down.
	PhaseDeleted Phase = "Deleted"
)

// ChallengePort is one port the challenge container listens on.
type ChallengePort struct {
	// Name identifies the port in the Service (an IANA service name).
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Port is the container port, also used as the Service port.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port"`

	// Protocol is TCP (default) or UDP.
	// +kubebuilder:default=TCP
	// +optional
	Protocol Protocol `json:"protocol,omitempty"`
}

// EnvVar is a plain environment variable for the challenge container. Secret
// references are deliberately not offered: flags are handled by the operator.
type EnvVar struct {
	// Name of the variable. CHALLENGE_HOST, CHALLENGE_URL, CHALLENGE_PORT
	// and <COMPONENT>_PUBLIC_HOST, _URL and _PORT are the operator's: they
	// carry the instance's address and its exposed components'.
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z][-._a-zA-Z0-9]*$`
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule="!(self in ['CHALLENGE_HOST', 'CHALLENGE_URL', 'CHALLENGE_PORT']) && !self.matches('_PUBLIC_(HOST|URL|PORT)$')",message="CHALLENGE_HOST, CHALLENGE_URL, CHALLENGE_PORT and <COMPONENT>_PUBLIC_HOST, _URL and _PORT are set by the operator to the instance's and its components' addresses"
	Name string `json:"name"`

	// Value of the variable: any text without control or line-break
	// characters. It may use the operator's address variables, which
	// Kubernetes expands: "BASE_URL=$(CHALLENGE_URL)", "$(ADMIN_PUBLIC_HOST)",
	// and its own container's secretEnv variables, expanded by Kubernetes
	// after them: "DATABASE_URL=postgres://app:$(DB_PASSWORD)@db/app".
	// +kubebuilder:validation:MaxLength=4096
	// +kubebuilder:validation:Pattern=`^[^\p{Cc}\p{Zl}\p{Zp}]*$`
	// +optional
	Value string `json:"value,omitempty"`
}

// Expose says how the instance is reached from outside its pod. There is no
// host to choose: with type Ingress every instance gets a host of its own,
// which the operator derives from the instance's identity under
// --ingress-domain, so no two instances can ever share one.
type Expose struct {
	// Type of exposure; ClusterIP by default.
	// +kubebuilder:default=ClusterIP
	// +optional
	Type ExposeType `json:"type,omitempty"`

	// IngressClassName selects the ingress controller (type Ingress only):
	// one of the operator's --ingress-classes, or empty for the cluster's
	// default class.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	IngressClassName string `json:"ingressClassName,omitempty"`

	// TLS serves the Ingress over HTTPS (type Ingress), with the ingress
	// controller's default certificate or the organiser's wildcard
	// certificate Secret, or attaches an HTTPRoute to its Gateway's HTTPS
	// listener (type HTTPRoute); URLs in status and CHALLENGE_URL are then
	// https.
	// +optional
	TLS *IngressTLS `json:"tls,omitempty"`

	// Gateway is the Gateway a TLSRoute or HTTPRoute attaches to: one of the
	// operator's --gateways, the first of them when unset.
	// +optional
	Gateway *GatewayRef `json:"gateway,omitempty"`

	// Annotations for the Service (e.g. a cloud load balancer's settings) and
	// the Ingress. Reserved keys are refused unless the operator allows them.
	// +optional
	Annotations Metadata `json:"annotations,omitempty"`
}

// GatewayRef names a Gateway of the Gateway API.
type GatewayRef struct {
	// Namespace of the Gateway.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespace string `json:"namespace"`
	// Name of the Gateway.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
}

// IngressTLS is how an instance's Ingress serves HTTPS.
type IngressTLS struct {
	// SecretName is a certificate Secret in the instance's namespace, one of
	// the operator's --ingress-tls-secrets (a wildcard certificate for
	// --ingress-domain covers every instance's host); empty for the ingress
	// controller's default certificate.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	SecretName string `json:"secretName,omitempty"`
}

// ChallengeSpec is what the platform asks for: one instance of a challenge for one participant.
// +kubebuilder:validation:XValidation:rule="has(self.template) || (has(self.image) && has(self.ports))",message="spec.image and spec.ports are required unless spec.template names a ChallengeTemplate"
// +kubebuilder:validation:XValidation:rule="!has(self.ports) || self.ports.all(p, self.ports.exists_one(q, q.name == p.name))",message="spec.ports names must be unique"
// +kubebuilder:validation:XValidation:rule="!has(self.ports) || self.ports.all(p, self.ports.exists_one(q, q.port == p.port && q.protocol == p.protocol))",message="spec.ports must not repeat a port and protocol"
// +kubebuilder:validation:XValidation:rule="has(self.template) == has(oldSelf.template)",message="spec.template cannot be added or removed"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.renewedAt) || (has(self.renewedAt) && self.renewedAt >= oldSelf.renewedAt)",message="spec.renewedAt can only move forward"
// +kubebuilder:validation:XValidation:rule="has(oldSelf.lifetime) ? has(self.lifetime) && duration(self.lifetime) <= duration(oldSelf.lifetime) : !has(self.lifetime)",message="spec.lifetime can only be lowered after creation, not added, removed or raised (renew with spec.renewedAt)"
type ChallengeSpec struct {
	// Template names the ChallengeTemplate this is an instance of; its
	// settings apply unless this Challenge overrides them where allowed.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.template is immutable"
	// +optional
	Template string `json:"template,omitempty"`

	// RenewedAt extends the instance: it then expires a lifetime after this
	// time. Set it to now to renew; the template caps how often. RFC 3339 in
	// the form Go reads back, e.g. 2026-11-23T10:00:00Z; a fraction of a
	// second (as JavaScript writes it) is accepted and dropped: renewals
	// count to the second.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Format=date-time
	// +kubebuilder:validation:Pattern=`^[0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])$`
	// +optional
	RenewedAt *metav1.Time `json:"renewedAt,omitempty"`

	// Participant is the team or user id the instance belongs to (a DNS label).
	// It labels every object of the instance and cannot change.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.participant is immutable"
	Participant string `json:"participant"`

	// Image is the challenge container image; required without a template.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9._/:@+-]*$`
	// +optional
	Image string `json:"image,omitempty"`

	// Ports the challenge listens on; the first is the primary endpoint.
	// Required without a template.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Ports []ChallengePort `json:"ports,omitempty"`

	// Env is extra environment for the challenge container.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Env []EnvVar `json:"env,omitempty"`

	// Resources of the challenge container; the chart's defaults apply when empty.
	// +optional
	Resources *Resources `json:"resources,omitempty"`

	// Expose says how participants reach the instance.
	// +optional
	Expose *Expose `json:"expose,omitempty"`

	// Lifetime is how long the instance lives after it starts, e.g. "30m" or
	// "2h": from 1s to 30 days (720h). After creation it may only be lowered.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^([0-9]{1,9}(\.[0-9]{1,9})?(ms|s|m|h)){1,4}$`
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('720h')",message="must be between 1s and 720h (30 days)"
	// +optional
	Lifetime *metav1.Duration `json:"lifetime,omitempty"`

	// Values are Helm values for charts/challenge that override the chart's
	// defaults for this instance; typed fields above take precedence over them.
	// +optional
	Values *Values `json:"values,omitempty"`
}

// PooledInstanceRef names a pooled instance's Challenge.
type PooledInstanceRef struct {
	// Namespace of the pooled Challenge, the operator's --pool-namespace.
	Namespace string `json:"namespace"`
	// Name of the pooled Challenge.
	Name string `json:"name"`
}

// Endpoint is where a participant connects to one port of an instance.
type Endpoint struct {
	// Name of the port this endpoint serves.
	// +optional
	Name string `json:"name,omitempty"`
	// Host is a DNS name or IP address.
	Host string `json:"host"`
	// Port is the port to connect to on Host.
	Port int32 `json:"port"`
	// Protocol is TCP or UDP.
	Protocol Protocol `json:"protocol"`
	// Address is host:port, ready to paste into nc.
	Address string `json:"address"`
	// URL is set for HTTP endpoints (Ingress, HTTPRoute).
	// +optional
	URL string `json:"url,omitempty"`
	// Connect is the command that connects to an endpoint that is not a
	// plain TCP or UDP port: "ncat --ssl <host> <port>" for TCP inside TLS
	// (TLSRoute).
	// +optional
	Connect string `json:"connect,omitempty"`
	// Component names the exposed component the endpoint reaches; empty for
	// the primary one.
	// +optional
	Component string `json:"component,omitempty"`
}

// DeployedRelease names the Helm release of the instance. The rendered
// manifest that helm-operator would copy here is dropped on purpose: it
// would make every Challenge as large as its chart.
type DeployedRelease struct {
	// Name of the Helm release (the Challenge name).
	Name string `json:"name"`
}

// ChallengeStatus is the truth about the instance, for the platform to show.
// The renewal count and the last renewal counted never go back, so that
// rewriting the status cannot restore a spent renewal budget, expiresAt
// moves later (or goes) only with a counted renewal, and admittedAt, once
// set, never moves.
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.expiresAt) || (has(self.expiresAt) && self.expiresAt <= oldSelf.expiresAt) || (has(self.renewals) ? self.renewals : 0) > (has(oldSelf.renewals) ? oldSelf.renewals : 0)",message="status.expiresAt can only move later, or be removed, with a renewal"

// +kubebuilder:validation:XValidation:rule="!has(oldSelf.admittedAt) || (has(self.admittedAt) && self.admittedAt == oldSelf.admittedAt)",message="status.admittedAt cannot change once set"
// +kubebuilder:validation:XValidation:rule="(has(self.renewals) ? self.renewals : 0) >= (has(oldSelf.renewals) ? oldSelf.renewals : 0)",message="status.renewals cannot decrease"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.lastRenewalRequest) || (has(self.lastRenewalRequest) && self.lastRenewalRequest >= oldSelf.lastRenewalRequest)",message="status.lastRenewalRequest cannot be removed or move back"
type ChallengeStatus struct {
	// Phase is None, Pending, Running, Error or Deleted.
	// +optional
	Phase Phase `json:"phase,omitempty"`

	// Reason is a CamelCase word explaining the phase.
	// +optional
	Reason string `json:"reason,omitempty"`

	// Message is a human-readable explanation of the phase.
	// +optional
	Message string `json:"message,omitempty"`

	// Endpoint is where to connect to the primary (first) port.
	// +optional
	Endpoint *Endpoint `json:"endpoint,omitempty"`

	// Endpoints lists where to connect for every port.
	// +optional
	Endpoints []Endpoint `json:"endpoints,omitempty"`

	// ExpiresAt is when the instance will be deleted: a lifetime after
	// admittedAt, or after the last accepted renewal. Unset without a
	// lifetime, and while the instance waits to be admitted (Queued, or
	// refused before anything was installed): waiting costs no lifetime.
	// +optional
	ExpiresAt *metav1.Time `json:"expiresAt,omitempty"`

	// AdmittedAt is when the instance was admitted and its lifetime began:
	// its creation, or, for one that waited (Queued, or refused until the
	// cause was fixed), the moment it left the wait (its release installed
	// or a pooled instance claimed). Set once.
	// +optional
	AdmittedAt *metav1.Time `json:"admittedAt,omitempty"`

	// Renewals counts the accepted renewals.
	// +optional
	Renewals int32 `json:"renewals,omitempty"`

	// RenewedAt is when the last accepted renewal took effect: its
	// spec.renewedAt, or the moment it was seen if that was in the future.
	// +optional
	RenewedAt *metav1.Time `json:"renewedAt,omitempty"`

	// LastRenewalRequest is the spec.renewedAt last counted (accepted or
	// refused), so that every renewal is counted exactly once.
	// +optional
	LastRenewalRequest *metav1.Time `json:"lastRenewalRequest,omitempty"`

	// FlagSecretName names the Secret (in the Challenge's namespace) holding
	// the instance's flag under the key "flag". The flag itself never appears here.
	// +optional
	FlagSecretName string `json:"flagSecretName,omitempty"`

	// PooledInstance is, for a Challenge that claimed an instance from its
	// template's warm pool, that instance: a Challenge the operator created,
	// whose objects (named after it, in its namespace) serve this one. It
	// is deleted with this Challenge.
	// +optional
	PooledInstance *PooledInstanceRef `json:"pooledInstance,omitempty"`

	// QueuePosition is, in phase Queued, how many instances are installed
	// before this one, itself included: 1 is next.
	// +kubebuilder:validation:Minimum=1
	// +optional
	QueuePosition *int32 `json:"queuePosition,omitempty"`

	// StartedAt is when the release was first installed.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`

	// ReadyAt is when the instance first became Running.
	// +optional
	ReadyAt *metav1.Time `json:"readyAt,omitempty"`

	// ObservedGeneration is the generation the status was computed for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// DeployedRelease names the Helm release once installed.
	// +optional
	DeployedRelease *DeployedRelease `json:"deployedRelease,omitempty"`

	// Conditions hold Ready plus the Helm reconciler's own conditions
	// (Initialized, Deployed, ReleaseFailed, Irreconcilable). A Challenge
	// that claimed a pooled instance has no release of its own: of these it
	// carries Initialized and Deployed (reason Claimed) alone.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Challenge is one participant's private instance of a CTF challenge.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=chal,categories=ctf
// +kubebuilder:printcolumn:name="Participant",type=string,JSONPath=`.spec.participant`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Queue",type=integer,JSONPath=`.status.queuePosition`,priority=1
// +kubebuilder:printcolumn:name="Endpoint",type=string,JSONPath=`.status.endpoint.address`
// +kubebuilder:printcolumn:name="Expires",type=string,JSONPath=`.status.expiresAt`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.reason`,priority=1
// +kubebuilder:printcolumn:name="Template",type=string,JSONPath=`.spec.template`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 53 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS label of at most 53 characters (it names the Helm release)"
// +kubebuilder:validation:XValidation:rule="!self.metadata.name.contains('--')",message="metadata.name must not contain \"--\", which separates an instance's name from its components' in their objects' names"
type Challenge struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ChallengeSpec `json:"spec"`

	// Status starts as phase None, so a platform sees "accepted, nothing
	// installed yet" from the moment the Challenge exists.
	// +kubebuilder:default={phase: None}
	// +optional
	Status ChallengeStatus `json:"status,omitempty"`
}

// ChallengeList is a list of Challenges.
// +kubebuilder:object:root=true
type ChallengeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Challenge `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Challenge{}, &ChallengeList{})
}
