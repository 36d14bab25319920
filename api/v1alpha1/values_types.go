package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// The patterns below keep every string that reaches the chart free of control
// and line-break characters (U+2028, U+2029 and U+0085 are YAML line breaks
// too), so that no value can start a new YAML line or document in a release.

// Values are the Helm values of charts/challenge that a Challenge or a
// ChallengeTemplate may set. They are typed, rather than free-form, so that the
// API server checks every one at admission and bounds their size and depth.
// Values the operator enforces (the instance's identity, its flag, its
// namespace and its network boundaries) are deliberately not among them.
type Values struct {
	// Image is the challenge container image.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9._/:@+-]*$`
	// +optional
	Image string `json:"image,omitempty"`

	// ImagePullPolicy of the challenge image.
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	// +optional
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`

	// ImagePullSecrets names Secrets in the instance's namespace used to pull the image.
	// +kubebuilder:validation:MaxItems=8
	// +optional
	ImagePullSecrets []ObjectName `json:"imagePullSecrets,omitempty"`

	// Replicas of the challenge pod; the template's policy caps it (1 by default).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// Ports the challenge listens on.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Ports []ChallengePort `json:"ports,omitempty"`

	// Env is extra environment for the challenge container.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Env []EnvVar `json:"env,omitempty"`

	// Resources of the challenge container.
	// +optional
	Resources *Resources `json:"resources,omitempty"`

	// Expose says how participants reach the instance.
	// +optional
	Expose *Expose `json:"expose,omitempty"`

	// PodAnnotations are extra annotations of the challenge pod. Reserved keys
	// (Kubernetes', Helm's, the operator's, AppArmor and seccomp) are refused.
	// +optional
	PodAnnotations Metadata `json:"podAnnotations,omitempty"`

	// PodLabels are extra labels of the challenge pod. Reserved keys are refused.
	// +optional
	PodLabels Metadata `json:"podLabels,omitempty"`

	// ReadOnlyRootFilesystem keeps the root filesystem read-only; /tmp is always writable.
	// +optional
	ReadOnlyRootFilesystem *bool `json:"readOnlyRootFilesystem,omitempty"`

	// TmpSizeLimit bounds the /tmp emptyDir: at most 1Ti here, and at most
	// the ephemeral-storage ceiling (--max-ephemeral-storage, or the
	// template's policy) when rendered.
	// +kubebuilder:validation:XValidation:rule="isQuantity(self) && quantity(self).compareTo(quantity('1Ti')) <= 0",message="must be at most 1Ti"
	// +optional
	TmpSizeLimit *Quantity `json:"tmpSizeLimit,omitempty"`

	// ReadinessProbe is the TCP probe on the primary port.
	// +optional
	ReadinessProbe *ReadinessProbe `json:"readinessProbe,omitempty"`
}

// ObjectName is the name of an object in the instance's namespace (a DNS subdomain).
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=253
// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
type ObjectName string

// Metadata is a set of labels or annotations: at most 32, each key a
// Kubernetes qualified name and each value free of control characters.
// +kubebuilder:validation:MaxProperties=32
// +kubebuilder:validation:XValidation:rule="self.all(k, k.size() <= 253 && k.matches('^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$'))",message="keys must be qualified names (an optional DNS prefix and '/', then at most 63 of [-A-Za-z0-9_.])"
type Metadata map[string]MetadataValue

// MetadataValue is a label or annotation value.
// +kubebuilder:validation:MaxLength=1024
// +kubebuilder:validation:Pattern=`^[^\p{Cc}\p{Zl}\p{Zp}]*$`
type MetadataValue string

// Quantity is a resource quantity such as "500m" or "128Mi", kept as the
// string the user wrote. The pattern admits only what resource.ParseQuantity
// reads quickly: the exponent has at most two digits, because parsing
// 1e999999999999 takes forever (in the API server's own isQuantity() too).
// +kubebuilder:validation:MaxLength=32
// +kubebuilder:validation:Pattern=`^[0-9]{1,15}(\.[0-9]{1,9})?([eE][0-9]{1,2}|[numkMGTPE]|[KMGTPE]i)?$`
type Quantity string

// Parse returns the quantity; admission has checked that it parses.
func (q Quantity) Parse() (resource.Quantity, error) { return resource.ParseQuantity(string(q)) }

// Resources are the requests and limits of the challenge container.
type Resources struct {
	// Requests are what the scheduler reserves.
	// +optional
	Requests *ResourceAmounts `json:"requests,omitempty"`
	// Limits are the most the container may use; the operator always sets cpu
	// and memory limits, within the template's ceilings.
	// +optional
	Limits *ResourceAmounts `json:"limits,omitempty"`
}

// ResourceAmounts are amounts of the resources a challenge may ask for.
type ResourceAmounts struct {
	// CPU, e.g. "500m".
	// +optional
	CPU *Quantity `json:"cpu,omitempty"`
	// Memory, e.g. "256Mi".
	// +optional
	Memory *Quantity `json:"memory,omitempty"`
	// EphemeralStorage, e.g. "1Gi": at most 1Ti here, and at most the
	// ephemeral-storage ceiling when rendered.
	// +kubebuilder:validation:XValidation:rule="isQuantity(self) && quantity(self).compareTo(quantity('1Ti')) <= 0",message="must be at most 1Ti"
	// +optional
	EphemeralStorage *Quantity `json:"ephemeral-storage,omitempty"`
}

// ReadinessProbe configures the TCP readiness probe on the primary port.
type ReadinessProbe struct {
	// Enabled turns the probe on (the default).
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// PeriodSeconds between probes.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=300
	// +optional
	PeriodSeconds *int32 `json:"periodSeconds,omitempty"`
}
