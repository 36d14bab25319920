package values

import (
	"slices"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/identity"
	"github.com/challenge-operator/challenge-operator/internal/security"
)

// workload is one workload of an instance as the operator renders it: the
// primary first, then each of its template's components, each computed once
// per render. Both its chart values (Compose) and what the policy gate lets
// its objects be (expectation) are made from it, so the two cannot disagree.
type workload struct {
	// component is the template's component; nil for the primary.
	component *ctfv1alpha1.Component
	// name is the component's name; "" for the primary.
	name string
	// secretEnv are its main container's variables read from the
	// organiser's Secrets; flag is how that container receives the
	// instance's flag (nil: it does not).
	secretEnv []ctfv1alpha1.SecretEnvVar
	flag      *ctfv1alpha1.FlagDelivery
	// secretFiles are its main container's secret files.
	secretFiles []ctfv1alpha1.SecretFile
	sidecars    []ctfv1alpha1.Sidecar
	exposePorts []ctfv1alpha1.PortExposure
	// security is its pod's and its containers' security, within the
	// admin's bounds (checked before).
	security security.Context
	// host is its own host under the operator's ingress domain, and
	// portHosts those of its exposePorts, by port name.
	host      string
	portHosts map[string]string
}

// instanceWorkloads are the workloads of c, an instance of tmpl (nil without a
// template: the primary alone), their hosts under domain.
func instanceWorkloads(c *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate, domain string) []workload {
	primary := workload{security: security.ForTemplate(tmpl), host: identity.Host(c, domain)}
	if tmpl == nil {
		return []workload{primary}
	}
	s := &tmpl.Spec
	primary.secretEnv, primary.secretFiles, primary.sidecars, primary.exposePorts = s.SecretEnv, s.SecretFiles, s.Sidecars, s.ExposePorts
	if s.Flag != nil {
		primary.flag = &s.Flag.FlagDelivery
	}
	primary.portHosts = portHosts(c, "", s.ExposePorts, domain)
	out := make([]workload, 0, 1+len(s.Components))
	out = append(out, primary)
	for i := range s.Components {
		comp := &s.Components[i]
		out = append(out, workload{component: comp, name: comp.Name, secretEnv: comp.SecretEnv, flag: comp.Flag, secretFiles: comp.SecretFiles,
			sidecars: comp.Sidecars, exposePorts: comp.ExposePorts, security: security.ForComponent(comp, s.Flags),
			host: identity.ComponentHost(c, comp.Name, domain), portHosts: portHosts(c, comp.Name, comp.ExposePorts, domain)})
	}
	return out
}

// workloadName names w among its instance's workloads in the keys of its
// sidecars' values: identity.PrimaryWorkload, or its component's name.
func (w *workload) workloadName() string {
	if w.component == nil {
		return identity.PrimaryWorkload
	}
	return w.name
}

// filePrefix starts the keys of its main container's files and secret
// files: none for the primary's, "<component>." for a component's.
func (w *workload) filePrefix() string {
	if w.component == nil {
		return ""
	}
	return w.name + "."
}

// secretEnvKey is the key of its main container's secretEnv variable name
// in the instance's Secret.
func (w *workload) secretEnvKey(name string) string {
	if w.component == nil {
		return primaryEnvKey(name)
	}
	return componentEnvKey(w.name, name)
}

// exposed reports whether its first port is reached from outside its
// instance: always the primary's.
func (w *workload) exposed() bool {
	return w.component == nil || Exposed(w.component)
}

// widestProfile is the profile a namespace of the instance's own enforces:
// the widest of its workloads'.
func widestProfile(workloads []workload) ctfv1alpha1.SecurityProfile {
	profiles := make([]ctfv1alpha1.SecurityProfile, 0, len(workloads))
	for i := range workloads {
		profiles = append(profiles, workloads[i].security.Profile)
	}
	return security.Widest(profiles...)
}

// secretFileKeys are the keys of the instance's Secret that w's containers
// read as files: its main container's secret files, its sidecars', and
// the named flags of tmpl delivered to it as files.
func (w *workload) secretFileKeys(flags []ctfv1alpha1.NamedFlag) []string {
	out := secretFileKeys(w.filePrefix(), w.secretFiles)
	for _, sc := range w.sidecars {
		out = append(out, secretFileKeys(sidecarFilePrefix(w.workloadName(), sc.Name), sc.SecretFiles)...)
	}
	return slices.Concat(out, namedFlagKeys(flags, w.name, false))
}

// secretEnvKeys are the keys of the instance's Secret w's containers read
// in variables: "flag" when its main container or a sidecar takes the flag
// in a variable, its main container's secretEnv, its sidecars', and the
// named flags of tmpl delivered to it in variables.
func (w *workload) secretEnvKeys(flags []ctfv1alpha1.NamedFlag) []string {
	var out []string
	flagEnv := func(f *ctfv1alpha1.FlagDelivery) bool { return f != nil && f.Mount == ctfv1alpha1.FlagMountEnv }
	if flagEnv(w.flag) || slices.ContainsFunc(w.sidecars, func(sc ctfv1alpha1.Sidecar) bool { return flagEnv(sc.Flag) }) {
		out = append(out, "flag")
	}
	for _, e := range w.secretEnv {
		out = append(out, w.secretEnvKey(e.Name))
	}
	for _, sc := range w.sidecars {
		for _, e := range sc.SecretEnv {
			out = append(out, sidecarEnvKey(w.workloadName(), sc.Name, e.Name))
		}
	}
	return append(out, namedFlagKeys(flags, w.name, true)...)
}
