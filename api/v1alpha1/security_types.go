package v1alpha1

// SecurityProfile names a Pod Security Standard level: what a template's
// instances may do on their node.
// +kubebuilder:validation:Enum=restricted;baseline;privileged
type SecurityProfile string

// The profiles, weakest grant first.
const (
	// ProfileRestricted runs one non-root container with every capability
	// dropped but NET_BIND_SERVICE, no privilege escalation and the
	// runtime's default seccomp profile: the default.
	ProfileRestricted SecurityProfile = "restricted"
	// ProfileBaseline may run as root, escalate privileges (setuid helpers)
	// and add the capabilities of the baseline standard (CHOWN, SETUID,
	// SYS_CHROOT, ...), still without host namespaces or host paths.
	ProfileBaseline SecurityProfile = "baseline"
	// ProfilePrivileged may also add any capability the operator's
	// --allowed-capabilities lists, run privileged and unconfined: only in a
	// sandbox runtime class (--sandbox-runtime-classes) unless the operator
	// allows otherwise.
	ProfilePrivileged SecurityProfile = "privileged"
)

// Capability is a Linux capability without its CAP_ prefix, e.g. SYS_ADMIN.
// +kubebuilder:validation:MaxLength=32
// +kubebuilder:validation:Pattern=`^[A-Z][A-Z_]*$`
type Capability string

// Capabilities are added to the container, whose every other capability is
// dropped.
type Capabilities struct {
	// Add lists the capabilities the container keeps.
	// +kubebuilder:validation:MaxItems=41
	// +listType=set
	// +optional
	Add []Capability `json:"add,omitempty"`
}

// ConfinementType is how a seccomp or AppArmor profile confines the container.
// +kubebuilder:validation:Enum=RuntimeDefault;Localhost;Unconfined
type ConfinementType string

// The confinement types, as Kubernetes names them.
const (
	// ConfinementRuntimeDefault is the container runtime's default profile.
	ConfinementRuntimeDefault ConfinementType = "RuntimeDefault"
	// ConfinementLocalhost is a profile file on the node, named by
	// LocalhostProfile; the operator's --allowed-localhost-profiles lists
	// those templates may name.
	ConfinementLocalhost ConfinementType = "Localhost"
	// ConfinementUnconfined is none at all: privileged templates only.
	ConfinementUnconfined ConfinementType = "Unconfined"
)

// Confinement is a seccomp or AppArmor profile.
// +kubebuilder:validation:XValidation:rule="(self.type == 'Localhost') == has(self.localhostProfile)",message="localhostProfile is required with type Localhost, and only then"
type Confinement struct {
	// Type of the profile.
	Type ConfinementType `json:"type"`
	// LocalhostProfile is the profile's name on the node (type Localhost).
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9][-a-zA-Z0-9_./]*$`
	// +optional
	LocalhostProfile string `json:"localhostProfile,omitempty"`
}

// Security is what the organiser grants a template's instances, within the
// operator's flags (--max-pod-security and the allowlists). Nothing a
// Challenge, its values or overridableValues say reaches it. Unset fields
// keep the restricted defaults: user and group 1000, no privilege escalation,
// every capability dropped, the runtime's default seccomp profile.
// +kubebuilder:validation:XValidation:rule="self.profile != 'restricted' || ((!has(self.runAsUser) || self.runAsUser > 0) && (!has(self.runAsGroup) || self.runAsGroup > 0))",message="runAsUser and runAsGroup 0 (root) need profile baseline or privileged"
// +kubebuilder:validation:XValidation:rule="self.profile != 'restricted' || !has(self.allowPrivilegeEscalation) || !self.allowPrivilegeEscalation",message="allowPrivilegeEscalation needs profile baseline or privileged"
// +kubebuilder:validation:XValidation:rule="self.profile != 'restricted' || !has(self.capabilities) || !has(self.capabilities.add) || self.capabilities.add.all(c, c == 'NET_BIND_SERVICE')",message="profile restricted may add NET_BIND_SERVICE only"
// +kubebuilder:validation:XValidation:rule="self.profile == 'privileged' || !has(self.privileged) || !self.privileged",message="privileged needs profile privileged"
// +kubebuilder:validation:XValidation:rule="self.profile == 'privileged' || ((!has(self.seccompProfile) || self.seccompProfile.type != 'Unconfined') && (!has(self.appArmorProfile) || self.appArmorProfile.type != 'Unconfined'))",message="an Unconfined seccomp or AppArmor profile needs profile privileged"
// +kubebuilder:validation:XValidation:rule="!has(self.allowPrivilegeEscalation) || self.allowPrivilegeEscalation || !((has(self.privileged) && self.privileged) || (has(self.capabilities) && has(self.capabilities.add) && 'SYS_ADMIN' in self.capabilities.add))",message="allowPrivilegeEscalation cannot be false with privileged or SYS_ADMIN (the API server refuses such a pod)"
type Security struct {
	// Profile is the Pod Security Standard the instances' pods meet.
	// +kubebuilder:default=restricted
	// +optional
	Profile SecurityProfile `json:"profile,omitempty"`

	// RunAsUser is the user the container runs as; 0 (root) from baseline.
	// Unset: 1000 in restricted, the image's own user otherwise.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	RunAsUser *int64 `json:"runAsUser,omitempty"`

	// RunAsGroup is the group the container runs as, and the group of its
	// volumes; 0 (root) from baseline. Unset: 1000 in restricted, the
	// image's own group otherwise.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=2147483647
	// +optional
	RunAsGroup *int64 `json:"runAsGroup,omitempty"`

	// AllowPrivilegeEscalation lets a setuid helper (a /readflag) gain its
	// owner's rights; from baseline.
	// +optional
	AllowPrivilegeEscalation *bool `json:"allowPrivilegeEscalation,omitempty"`

	// Capabilities the container keeps: restricted may add NET_BIND_SERVICE,
	// baseline the baseline standard's set, privileged also those of the
	// operator's --allowed-capabilities.
	// +optional
	Capabilities *Capabilities `json:"capabilities,omitempty"`

	// SeccompProfile of the pod; RuntimeDefault when unset.
	// +optional
	SeccompProfile *Confinement `json:"seccompProfile,omitempty"`

	// AppArmorProfile of the pod; the runtime's default when unset.
	// +optional
	AppArmorProfile *Confinement `json:"appArmorProfile,omitempty"`

	// Privileged runs the container privileged (a jail that builds its own
	// sandbox, such as pwn.red/jail); profile privileged only.
	// +optional
	Privileged *bool `json:"privileged,omitempty"`

	// NodeSelector places the pods on labelled nodes (a pool for pwn, a node
	// with /dev/kvm): each label one of the operator's --allowed-node-selectors.
	// +kubebuilder:validation:MaxProperties=8
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.size() <= 253 && k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$'))",message="keys must be label keys"
	// +optional
	NodeSelector map[string]LabelValue `json:"nodeSelector,omitempty"`

	// Tolerations let the pods onto tainted nodes: each taint key one of the
	// operator's --allowed-tolerations.
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Tolerations []Toleration `json:"tolerations,omitempty"`

	// ExtendedResources the container needs, such as a KVM device
	// (devices.kubevirt.io/kvm: 1): each one of the operator's
	// --allowed-extended-resources.
	// +kubebuilder:validation:MaxProperties=4
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.size() <= 253 && k.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$') && self[k] >= 1 && self[k] <= 16)",message="keys must be extended resource names (a domain, '/', a name) and amounts 1 to 16"
	// +optional
	ExtendedResources map[string]int32 `json:"extendedResources,omitempty"`

	// RuntimeClassName runs the pods in a sandbox runtime (gVisor, Kata): one
	// of the operator's --sandbox-runtime-classes. A privileged template must
	// name one unless the operator allows unsandboxed privileged pods.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	RuntimeClassName string `json:"runtimeClassName,omitempty"`
}

// Toleration lets a template's pods onto nodes with a taint.
type Toleration struct {
	// Key of the taint.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`
	Key string `json:"key"`
	// Value of the taint; any value when empty.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$`
	// +optional
	Value string `json:"value,omitempty"`
	// Effect of the taint; every effect when empty.
	// +kubebuilder:validation:Enum=NoSchedule;PreferNoSchedule;NoExecute
	// +optional
	Effect string `json:"effect,omitempty"`
}

// LabelValue is the value of a label.
// +kubebuilder:validation:MaxLength=63
// +kubebuilder:validation:Pattern=`^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$`
type LabelValue string
