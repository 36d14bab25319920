package values

import (
	"cmp"
	"path"
	"slices"

	"k8s.io/utils/ptr"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/lifecycle"
)

// NamedFlagKey is the key of a named flag's value in the instance's Secret:
// "flag.<name>", one dot and a DNS label, which no secretEnv or secret
// file's key is (env.<NAME>, file.<i>, and two dots or more for a
// component's or a sidecar's).
func NamedFlagKey(name string) string { return "flag." + name }

// deliverNamedFlags writes each of tmpl's named flags, its value in flags by
// name, into the instance's Secret and into the values of the container
// that receives it: a secret file, or a variable read from the Secret. The
// primary's main container reads its variables from secretEnv, which
// carries their values into the Secret; every other value goes to
// secretData.
func deliverNamedFlags(vals map[string]any, tmpl *ctfv1alpha1.ChallengeTemplate, flags map[string]string) error {
	for i := range tmpl.Spec.Flags {
		f := &tmpl.Spec.Flags[i]
		ctr, err := flagContainer(vals, f)
		if err != nil {
			return err
		}
		if err := checkFlagTarget(ctr, f, FilledAtClaim(tmpl, f)); err != nil {
			return err
		}
		key, value := NamedFlagKey(f.Name), flags[f.Name]
		if FilledAtClaim(tmpl, f) {
			// The container mounts the flag's directory, empty until a team
			// claims the instance; the writer then copies in the team's
			// value from the claim's own Secret (identity.ClaimFlagSecret,
			// internal/controller/challengepool's flag delivery).
			ctr["flagDirs"] = append(listOf(ctr, "flagDirs"), map[string]any{"volume": FlagDirVolume(f), "path": FlagDir(f)})
			vals["secretData"] = append(listOf(vals, "secretData"), secretEntry(key, value))
			continue
		}
		if f.Mount == ctfv1alpha1.FlagMountEnv {
			entry := envEntry(f.EnvName, value)
			entry["key"] = key
			if f.Component == "" && f.Sidecar == "" {
				vals["secretEnv"] = append(listOf(vals, "secretEnv"), entry)
				continue
			}
			delete(entry, "value") // the container names its key; secretData holds it
			ctr["secretEnv"] = append(listOf(ctr, "secretEnv"), entry)
		} else {
			ctr["secretFiles"] = append(listOf(ctr, "secretFiles"), map[string]any{
				"key": key, "path": cmp.Or(f.Path, DefaultFlagPath), "mode": ptr.Deref(f.FileMode, DefaultFlagFileMode)})
		}
		vals["secretData"] = append(listOf(vals, "secretData"), secretEntry(key, value))
	}
	return nil
}

// flagContainer is the values of the container f is delivered to: its
// workload's main container (the primary's when f names no component) or
// one of its sidecars.
func flagContainer(vals map[string]any, f *ctfv1alpha1.NamedFlag) (map[string]any, error) {
	workload := vals
	if f.Component != "" {
		i := slices.IndexFunc(workloadsOf(vals)[1:], func(w map[string]any) bool { return nameOf(w) == f.Component })
		if i < 0 {
			return nil, lifecycle.Errorf(lifecycle.ReasonFlagInvalid, "flag %s is delivered to component %q, which the template does not have", f.Name, f.Component)
		}
		workload = workloadsOf(vals)[1+i]
	}
	if f.Sidecar == "" {
		return workload, nil
	}
	sidecars := sidecarsOf(workload)
	i := slices.IndexFunc(sidecars, func(sc map[string]any) bool { return nameOf(sc) == f.Sidecar })
	if i < 0 {
		return nil, lifecycle.Errorf(lifecycle.ReasonFlagInvalid, "flag %s is delivered to sidecar %q, which its workload does not have", f.Name, f.Sidecar)
	}
	return sidecars[i], nil
}

// checkFlagTarget refuses a flag whose file or variable the container
// has already (or, filled at claim, whose directory it mounts): the pod
// would not be valid, or the flag would hide a value.
func checkFlagTarget(ctr map[string]any, f *ctfv1alpha1.NamedFlag, atClaim bool) error {
	if f.Mount == ctfv1alpha1.FlagMountEnv {
		for _, list := range []string{"hosts", "env", "secretEnv", "addresses", "lateEnv"} {
			for _, e := range listOf(ctr, list) {
				if name, _ := envPair(e); name == f.EnvName {
					return lifecycle.Errorf(lifecycle.ReasonFlagInvalid, "flag %s is delivered in variable %s, which its container sets already (%s)", f.Name, f.EnvName, list)
				}
			}
		}
		return nil
	}
	file := cmp.Or(f.Path, DefaultFlagPath)
	if atClaim {
		// The directory filled at claim is a mount of its own.
		dir := FlagDir(f)
		if mountTmp, _ := ctr["mountTmp"].(bool); mountTmp && dir == "/tmp" {
			return lifecycle.Errorf(lifecycle.ReasonFlagInvalid, "flag %s's directory is /tmp, where the writable emptyDir is mounted", f.Name)
		}
		for _, list := range []string{"files", "secretFiles", "scratch"} {
			for _, e := range listOf(ctr, list) {
				if m, _ := e.(map[string]any); m["path"] == dir {
					return lifecycle.Errorf(lifecycle.ReasonFlagInvalid, "flag %s's directory %s is mounted by its container already (%s)", f.Name, dir, list)
				}
			}
		}
	}
	for _, list := range []string{"files", "secretFiles", "scratch"} {
		for _, e := range listOf(ctr, list) {
			if m, _ := e.(map[string]any); m["path"] == file {
				return lifecycle.Errorf(lifecycle.ReasonFlagInvalid, "flag %s is delivered at %s, where its container mounts something already (%s)", f.Name, file, list)
			}
		}
	}
	return nil
}

// listOf is the list m holds at key, nil when none.
func listOf(m map[string]any, key string) []any {
	l, _ := m[key].([]any)
	return l
}

// namedFlagKeys are the keys of tmpl's named flags that the containers of
// component's workload ("" the primary's) read in variables (env) or as
// files, as namedFlags delivers them.
func namedFlagKeys(flags []ctfv1alpha1.NamedFlag, component string, env bool) []string {
	var out []string
	for _, f := range flags {
		if f.Component == component && (f.Mount == ctfv1alpha1.FlagMountEnv) == env {
			out = append(out, NamedFlagKey(f.Name))
		}
	}
	return out
}

// nameOf is the name a workload's or a container's values hold.
func nameOf(m map[string]any) string {
	name, _ := envPair(m)
	return name
}

// FilledAtClaim tells whether f reaches its container only when a team
// claims the pooled instance: a perTeam flag of a pooled template, written
// then into an empty directory of its own, the pod running on.
func FilledAtClaim(tmpl *ctfv1alpha1.ChallengeTemplate, f *ctfv1alpha1.NamedFlag) bool {
	return tmpl.Spec.Pool != nil && f.PerTeam != nil
}

// FlagDir is the directory of f's file.
func FlagDir(f *ctfv1alpha1.NamedFlag) string {
	return path.Dir(cmp.Or(f.Path, DefaultFlagPath))
}

// FlagDirVolume is the pod's volume of f's directory when it is filled at
// claim: "flags-<name>", after its sidecar's name and a dash.
func FlagDirVolume(f *ctfv1alpha1.NamedFlag) string {
	if f.Sidecar != "" {
		return f.Sidecar + "-flags-" + f.Name
	}
	return "flags-" + f.Name
}

// FlagDirSize bounds a flag directory filled at claim: a few flags of at
// most 4096 bytes each.
const FlagDirSize = "1Mi"
