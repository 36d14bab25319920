// Package security turns what an organiser grants a template's instances
// (the template's security section) into the security settings of their
// pods, within what the cluster admin allows with the operator's flags.
//
// The trust rule: the admin bounds (Bounds, from flags), the organiser
// chooses per cluster-scoped ChallengeTemplate within them, and nothing a
// platform or participant writes reaches either. The chart renders exactly
// the Context this package computes, and the policy gate requires exactly it.
package security

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/utils/ptr"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
)

// DefaultUser and DefaultGroup run restricted containers whose template
// names neither: a non-root user, and a group that is not root's.
const (
	DefaultUser  int64 = 1000
	DefaultGroup int64 = 1000
)

// DefaultMaxProfile is the highest profile templates may use unless the
// admin says otherwise: baseline lets most real challenges run (root,
// setuid helpers, low ports) without any way out of the container.
const DefaultMaxProfile = ctfv1alpha1.ProfileBaseline

// Bounds are the cluster admin's: what any template may ask for at most.
type Bounds struct {
	// MaxProfile is the highest profile a template may use
	// (--max-pod-security); "" means DefaultMaxProfile.
	MaxProfile ctfv1alpha1.SecurityProfile
	// SandboxRuntimeClasses are the runtime classes (gVisor, Kata) templates
	// may name, and one of which a privileged template must name
	// (--sandbox-runtime-classes).
	SandboxRuntimeClasses []string
	// AllowUnsandboxedPrivileged lets a privileged template run without a
	// sandbox runtime class, straight on the node's kernel
	// (--allow-unsandboxed-privileged).
	AllowUnsandboxedPrivileged bool
	// AllowedCapabilities are capabilities beyond the baseline standard's
	// that privileged templates may add (--allowed-capabilities).
	AllowedCapabilities []string
	// LocalhostProfiles are the seccomp and AppArmor profiles on the nodes
	// that templates may name (--allowed-localhost-profiles).
	LocalhostProfiles []string
	// NodeSelectors are the node labels, "key=value", templates may select
	// (--allowed-node-selectors).
	NodeSelectors []string
	// Tolerations are the taint keys templates may tolerate
	// (--allowed-tolerations).
	Tolerations []string
	// ExtendedResources are the extended resources (a KVM device, a GPU)
	// templates may ask for (--allowed-extended-resources).
	ExtendedResources []string
}

// Context is what an instance's pod runs with: its Pod Security level and
// the exact security settings of the pod and its container.
type Context struct {
	// Profile is the template's profile.
	Profile ctfv1alpha1.SecurityProfile
	// Pod is the pod's securityContext.
	Pod *corev1.PodSecurityContext
	// Container is the container's securityContext, but for
	// readOnlyRootFilesystem, which is a value of the chart's.
	Container *corev1.SecurityContext
	// RuntimeClassName is the pod's runtime class; nil for the default.
	RuntimeClassName *string
	// NodeSelector and Tolerations place the pod; empty for anywhere.
	NodeSelector map[string]string
	Tolerations  []corev1.Toleration
	// ExtendedResources are the container's limits (and requests) beyond
	// cpu, memory and ephemeral-storage.
	ExtendedResources corev1.ResourceList
}

// Level is the Pod Security Standard level the pod meets.
func (c Context) Level() psaapi.Level {
	return psaapi.Level(c.Profile)
}

// baselineCapabilities are the capabilities the baseline Pod Security
// Standard allows adding: those a container runtime grants by default.
var baselineCapabilities = []string{
	"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE",
	"SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
}

// BaselineCapability reports whether the baseline standard allows adding
// the capability (named without CAP_).
func BaselineCapability(name string) bool { return slices.Contains(baselineCapabilities, name) }

// rank orders the profiles by what they grant.
func rank(p ctfv1alpha1.SecurityProfile) int {
	return slices.Index([]ctfv1alpha1.SecurityProfile{ctfv1alpha1.ProfileRestricted, ctfv1alpha1.ProfileBaseline, ctfv1alpha1.ProfilePrivileged}, p)
}

// ProfileOf is a template's profile: restricted unless it says otherwise.
func ProfileOf(sec *ctfv1alpha1.Security) ctfv1alpha1.SecurityProfile {
	if sec == nil || sec.Profile == "" {
		return ctfv1alpha1.ProfileRestricted
	}
	return sec.Profile
}

// ParseProfile reads a profile name, as --max-pod-security takes it.
func ParseProfile(s string) (ctfv1alpha1.SecurityProfile, error) {
	p := ctfv1alpha1.SecurityProfile(s)
	if rank(p) < 0 {
		return "", fmt.Errorf("%q is not a profile: restricted, baseline or privileged", s)
	}
	return p, nil
}

// Check refuses what sec asks beyond the admin's bounds, naming the flag
// that would allow it. The CRD's CEL rules already keep each profile's own
// limits; this is what only the operator's flags decide.
func (b Bounds) Check(sec *ctfv1alpha1.Security) error {
	profile, ceiling := ProfileOf(sec), b.MaxProfile
	if ceiling == "" {
		ceiling = DefaultMaxProfile
	}
	if rank(profile) > rank(ceiling) {
		return fmt.Errorf("profile %s is above --max-pod-security=%s", profile, ceiling)
	}
	if sec == nil {
		return nil
	}
	if err := b.checkCapabilities(profile, sec.Capabilities); err != nil {
		return err
	}
	if err := b.checkRuntimeClass(profile, sec.RuntimeClassName); err != nil {
		return err
	}
	for _, c := range []*ctfv1alpha1.Confinement{sec.SeccompProfile, sec.AppArmorProfile} {
		if c != nil && c.Type == ctfv1alpha1.ConfinementLocalhost && !slices.Contains(b.LocalhostProfiles, c.LocalhostProfile) {
			return fmt.Errorf("the Localhost profile %q is not in --allowed-localhost-profiles (%s)", c.LocalhostProfile, list(b.LocalhostProfiles))
		}
	}
	return b.checkPlacement(sec)
}

// CheckTemplate is Check of a template's security section, as the reason an
// instance of it is refused (Error/PolicyViolation naming the template).
func (b Bounds) CheckTemplate(tmpl *ctfv1alpha1.ChallengeTemplate) error {
	if err := b.Check(tmpl.Spec.Security); err != nil {
		return lifecycle.Errorf(lifecycle.ReasonPolicyViolation, "security: ChallengeTemplate %s: %v", tmpl.Name, err)
	}
	for _, c := range tmpl.Spec.Components {
		if err := b.Check(c.Security); err != nil {
			return lifecycle.Errorf(lifecycle.ReasonPolicyViolation, "security: ChallengeTemplate %s: component %s: %v", tmpl.Name, c.Name, err)
		}
	}
	return nil
}

// Widest is the profile granting most among profiles (restricted for none):
// what a namespace holding all of an instance's pods must allow.
func Widest(profiles ...ctfv1alpha1.SecurityProfile) ctfv1alpha1.SecurityProfile {
	out := ctfv1alpha1.ProfileRestricted
	for _, p := range profiles {
		if rank(p) > rank(out) {
			out = p
		}
	}
	return out
}

// checkPlacement allows the node labels, taints and extended resources the
// admin listed: they steer pods onto nodes the admin set aside.
func (b Bounds) checkPlacement(sec *ctfv1alpha1.Security) error {
	for _, k := range slices.Sorted(maps.Keys(sec.NodeSelector)) {
		if pair := k + "=" + string(sec.NodeSelector[k]); !slices.Contains(b.NodeSelectors, pair) {
			return fmt.Errorf("node selector %s is not in --allowed-node-selectors (%s)", pair, list(b.NodeSelectors))
		}
	}
	for _, t := range sec.Tolerations {
		if !slices.Contains(b.Tolerations, t.Key) {
			return fmt.Errorf("toleration of %s is not in --allowed-tolerations (%s)", t.Key, list(b.Tolerations))
		}
	}
	for _, r := range slices.Sorted(maps.Keys(sec.ExtendedResources)) {
		if !slices.Contains(b.ExtendedResources, r) {
			return fmt.Errorf("extended resource %s is not in --allowed-extended-resources (%s)", r, list(b.ExtendedResources))
		}
	}
	return nil
}

// checkCapabilities allows restricted NET_BIND_SERVICE, baseline the
// baseline standard's set, privileged also the admin's list.
func (b Bounds) checkCapabilities(profile ctfv1alpha1.SecurityProfile, caps *ctfv1alpha1.Capabilities) error {
	if caps == nil {
		return nil
	}
	for _, c := range caps.Add {
		name := string(c)
		switch {
		case name == "NET_BIND_SERVICE", profile != ctfv1alpha1.ProfileRestricted && BaselineCapability(name):
		case profile == ctfv1alpha1.ProfileRestricted:
			return fmt.Errorf("capability %s needs profile baseline or privileged", name)
		case profile == ctfv1alpha1.ProfileBaseline:
			return fmt.Errorf("capability %s is not in the baseline standard's set: it needs profile privileged", name)
		case !slices.Contains(b.AllowedCapabilities, name):
			return fmt.Errorf("capability %s is not in --allowed-capabilities (%s)", name, list(b.AllowedCapabilities))
		}
	}
	return nil
}

// checkRuntimeClass allows the admin's sandbox runtime classes only, and
// requires one for a privileged template unless the admin says otherwise.
func (b Bounds) checkRuntimeClass(profile ctfv1alpha1.SecurityProfile, class string) error {
	if class != "" && !slices.Contains(b.SandboxRuntimeClasses, class) {
		return fmt.Errorf("runtime class %q is not in --sandbox-runtime-classes (%s)", class, list(b.SandboxRuntimeClasses))
	}
	if class == "" && profile == ctfv1alpha1.ProfilePrivileged && !b.AllowUnsandboxedPrivileged {
		return fmt.Errorf("a privileged template must name a runtime class of --sandbox-runtime-classes (%s), unless the operator runs with --allow-unsandboxed-privileged",
			list(b.SandboxRuntimeClasses))
	}
	return nil
}

// ForTemplate is the Context of a template's instances (nil: an instance
// without a template, restricted with the defaults).
func ForTemplate(tmpl *ctfv1alpha1.ChallengeTemplate) Context {
	if tmpl == nil {
		return For(nil, false)
	}
	return For(tmpl.Spec.Security, PrivateFlag(tmpl.Spec.Flag) || PrivateFiles(tmpl.Spec.SecretFiles) || privateSidecars(tmpl.Spec.Sidecars) ||
		privateNamedFlags(tmpl.Spec.Flags, ""))
}

// privateNamedFlags reports whether a named flag delivered to a container
// of component's workload ("" the primary's) is a file root's alone.
func privateNamedFlags(flags []ctfv1alpha1.NamedFlag, component string) bool {
	return slices.ContainsFunc(flags, func(f ctfv1alpha1.NamedFlag) bool {
		return f.Component == component && privateDelivery(&f.FlagDelivery)
	})
}

// privateSidecars reports whether a sidecar's flag or secret file is root's
// alone: its pod then gets no fsGroup either, as for its main container's.
func privateSidecars(sidecars []ctfv1alpha1.Sidecar) bool {
	return slices.ContainsFunc(sidecars, func(sc ctfv1alpha1.Sidecar) bool { return privateDelivery(sc.Flag) || PrivateFiles(sc.SecretFiles) })
}

// ForComponent is the Context of a template's component: its own section
// (restricted when unset), never the template's; without an fsGroup when its
// flag, a secret file of its or one of the template's flags (named flags
// names them) delivered to it is root's alone.
func ForComponent(c *ctfv1alpha1.Component, named []ctfv1alpha1.NamedFlag) Context {
	return For(c.Security, privateDelivery(c.Flag) || PrivateFiles(c.SecretFiles) || privateSidecars(c.Sidecars) || privateNamedFlags(named, c.Name))
}

// PrivateFlag reports whether a flag file is root's alone: mounted as a
// file whose mode gives its group no read bit.
func PrivateFlag(f *ctfv1alpha1.FlagSpec) bool {
	return f != nil && privateDelivery(&f.FlagDelivery)
}

func privateDelivery(f *ctfv1alpha1.FlagDelivery) bool {
	return f != nil && f.Mount != ctfv1alpha1.FlagMountEnv && f.FileMode != nil && *f.FileMode&0o040 == 0
}

// PrivateFiles reports whether a secret file is root's alone, as a flag
// file can be: its mode gives its group no read bit.
func PrivateFiles(files []ctfv1alpha1.SecretFile) bool {
	return slices.ContainsFunc(files, func(f ctfv1alpha1.SecretFile) bool { return f.Mode != nil && *f.Mode&0o040 == 0 })
}

// For is the Context of the instances of a template whose security section
// is sec (nil: restricted with the defaults). With privateFlag the pod gets
// no fsGroup: the kubelet would make the flag file the group's and readable
// by it, and the container's processes are of that group.
func For(sec *ctfv1alpha1.Security, privateFlag bool) Context {
	if sec == nil {
		sec = &ctfv1alpha1.Security{}
	}
	profile := ProfileOf(sec)
	ctx := Context{Profile: profile, Pod: podContext(profile, sec), Container: containerContext(sec)}
	if privateFlag {
		ctx.Pod.FSGroup = nil
	}
	if sec.RuntimeClassName != "" {
		ctx.RuntimeClassName = ptr.To(sec.RuntimeClassName)
	}
	for k, v := range sec.NodeSelector {
		if ctx.NodeSelector == nil {
			ctx.NodeSelector = map[string]string{}
		}
		ctx.NodeSelector[k] = string(v)
	}
	for _, t := range sec.Tolerations {
		tol := corev1.Toleration{Key: t.Key, Value: t.Value, Effect: corev1.TaintEffect(t.Effect), Operator: corev1.TolerationOpEqual}
		if t.Value == "" {
			tol.Operator = corev1.TolerationOpExists
		}
		ctx.Tolerations = append(ctx.Tolerations, tol)
	}
	for name, n := range sec.ExtendedResources {
		if ctx.ExtendedResources == nil {
			ctx.ExtendedResources = corev1.ResourceList{}
		}
		ctx.ExtendedResources[corev1.ResourceName(name)] = *resource.NewQuantity(int64(n), resource.DecimalSI)
	}
	return ctx
}

// podContext runs restricted pods as DefaultUser and DefaultGroup unless the
// template names others; from baseline, unset means the image's own.
func podContext(profile ctfv1alpha1.SecurityProfile, sec *ctfv1alpha1.Security) *corev1.PodSecurityContext {
	user, group := sec.RunAsUser, sec.RunAsGroup
	if profile == ctfv1alpha1.ProfileRestricted {
		user, group = ptr.To(ptr.Deref(user, DefaultUser)), ptr.To(ptr.Deref(group, DefaultGroup))
	}
	pod := &corev1.PodSecurityContext{RunAsUser: user, RunAsGroup: group, SeccompProfile: seccomp(sec.SeccompProfile)}
	if user != nil && *user > 0 {
		pod.RunAsNonRoot = ptr.To(true)
	}
	if group != nil && *group > 0 {
		// Volumes (scratch space, the flag) belong to the container's group.
		pod.FSGroup = ptr.To(*group)
	}
	if a := sec.AppArmorProfile; a != nil {
		pod.AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileType(a.Type), LocalhostProfile: localhost(a)}
	}
	return pod
}

// containerContext drops every capability but those the template adds.
// Privilege escalation stays off unless the template turns it on, or runs
// privileged or with SYS_ADMIN, which the API server does not allow with it
// off.
func containerContext(sec *ctfv1alpha1.Security) *corev1.SecurityContext {
	privileged := ptr.Deref(sec.Privileged, false)
	ctr := &corev1.SecurityContext{
		Privileged:   ptr.To(privileged),
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
	if sec.Capabilities != nil {
		for _, c := range sec.Capabilities.Add {
			ctr.Capabilities.Add = append(ctr.Capabilities.Add, corev1.Capability(c))
		}
	}
	sysAdmin := slices.Contains(ctr.Capabilities.Add, "SYS_ADMIN")
	switch {
	case sec.AllowPrivilegeEscalation != nil:
		ctr.AllowPrivilegeEscalation = ptr.To(*sec.AllowPrivilegeEscalation)
	case !privileged && !sysAdmin:
		ctr.AllowPrivilegeEscalation = ptr.To(false)
	}
	return ctr
}

// seccomp is the pod's seccomp profile: the runtime's default unless the
// template names another.
func seccomp(c *ctfv1alpha1.Confinement) *corev1.SeccompProfile {
	if c == nil {
		return &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}
	}
	return &corev1.SeccompProfile{Type: corev1.SeccompProfileType(c.Type), LocalhostProfile: localhost(c)}
}

func localhost(c *ctfv1alpha1.Confinement) *string {
	if c.Type != ctfv1alpha1.ConfinementLocalhost {
		return nil
	}
	return ptr.To(c.LocalhostProfile)
}

func list(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
