package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
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
type SecretKeyRef struct {
	// Namespace of the Secret; the organiser's, not the participants'.
	Namespace string `json:"namespace"`
	// Name of the Secret.
	Name string `json:"name"`
	// Key in the Secret's data.
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

	// Mount is File (default) or Env.
	// +kubebuilder:default=File
	// +optional
	Mount FlagMount `json:"mount,omitempty"`

	// Path of the flag file (mount File).
	// +kubebuilder:default="/flag/flag.txt"
	// +kubebuilder:validation:Pattern=`^/[^:]*[^/]$`
	// +optional
	Path string `json:"path,omitempty"`

	// EnvName is the variable holding the flag (mount Env).
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_]*$`
	// +optional
	EnvName string `json:"envName,omitempty"`
}

// DynamicFlag derives per-instance flags.
type DynamicFlag struct {
	// SecretKey holds the HMAC key; keep it out of participants' reach.
	SecretKey SecretKeyRef `json:"secretKey"`
	// Format is the flag with one %s where the derived hex digest goes.
	// +kubebuilder:default="flag{%s}"
	// +kubebuilder:validation:XValidation:rule="self.indexOf('%s') >= 0 && self.indexOf('%s') == self.lastIndexOf('%s')",message="flag.dynamic.format must contain %s exactly once"
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
type LifetimePolicy struct {
	// Default lifetime of an instance that does not set spec.lifetime.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +optional
	Default *metav1.Duration `json:"default,omitempty"`
	// Max is the longest spec.lifetime an instance may ask for.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +optional
	Max *metav1.Duration `json:"max,omitempty"`
	// MaxRenewals is how many times an instance may be renewed (spec.renewedAt).
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxRenewals *int32 `json:"maxRenewals,omitempty"`
}

// EgressRule allows instances to reach one named destination.
type EgressRule struct {
	// Name says what the destination is, e.g. "checker".
	Name string `json:"name"`
	// CIDR of the destination.
	// +kubebuilder:validation:Pattern=`^[0-9a-fA-F:.]+/[0-9]+$`
	CIDR string `json:"cidr"`
	// Ports allowed; all when empty.
	// +optional
	Ports []ChallengePort `json:"ports,omitempty"`
}

// ChallengeTemplateSpec is a catalogue entry: everything an instance of the
// challenge needs, written once by the organiser.
type ChallengeTemplateSpec struct {
	// Image is the challenge container image.
	// +kubebuilder:validation:MinLength=1
	Image string `json:"image"`

	// Ports the challenge listens on; the first is the primary endpoint.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	Ports []ChallengePort `json:"ports"`

	// Env is extra environment for the challenge container.
	// +optional
	Env []EnvVar `json:"env,omitempty"`

	// Resources of the challenge container.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`

	// Expose says how participants reach instances.
	// +optional
	Expose *Expose `json:"expose,omitempty"`

	// Lifetime bounds instance lifetimes and renewals.
	// +optional
	Lifetime *LifetimePolicy `json:"lifetime,omitempty"`

	// MaxInstancesPerParticipant caps one participant's active instances of
	// any template; the operator-wide default applies when unset.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxInstancesPerParticipant *int32 `json:"maxInstancesPerParticipant,omitempty"`

	// Flag is the instance's flag.
	// +optional
	Flag *FlagSpec `json:"flag,omitempty"`

	// Egress lists destinations instances may reach besides DNS.
	// +optional
	Egress []EgressRule `json:"egress,omitempty"`

	// Values are Helm values for charts/challenge, above the chart's defaults
	// and below everything a Challenge sets.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Type=object
	// +optional
	Values *apiextensionsv1.JSON `json:"values,omitempty"`

	// OverridableValues are the value paths (dotted, e.g. "env" or
	// "resources.limits") a Challenge may set, through spec.values or its
	// typed fields. Anything else is refused.
	// +optional
	OverridableValues []string `json:"overridableValues,omitempty"`
}

// ChallengeTemplateStatus reports the template's use.
type ChallengeTemplateStatus struct {
	// ActiveInstances is the number of Challenges of this template not being deleted.
	ActiveInstances int32 `json:"activeInstances"`
}

// ChallengeTemplate is an organiser's catalogue entry that Challenges instantiate.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=chalt,categories=ctf
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.image`
// +kubebuilder:printcolumn:name="Active",type=integer,JSONPath=`.status.activeInstances`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
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
