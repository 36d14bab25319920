package render

import (
	"cmp"
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/ctfflag"
	"github.com/challenge-operator/challenge-operator/internal/organisersecret"
	"github.com/challenge-operator/challenge-operator/internal/values"
)

// read is a render's one read of the cluster beyond the Challenge and its
// template (none without one), into r.inputs: the claimant of a claimed pooled instance, the
// organiser's Secrets the template's containers read (secretEnv, secret
// files), the shared Services, the Gateways the routes of c's values
// (composed, as checked) attach to, the named flags and the flag, in this
// order, each Secret through the one trust check (organisersecret). An
// error names the field and the Secret, never a value.
func (t Translator) read(ctx context.Context, r *rendering) (err error) {
	r.inputs, err = t.inputs(ctx, r.challenge, r.template, r.checked)
	return err
}

// inputs is read for c, an instance of tmpl, whose values composed before
// any read are vals.
func (t Translator) inputs(ctx context.Context, c *ctfv1alpha1.Challenge, tmpl *ctfv1alpha1.ChallengeTemplate, vals map[string]any) (values.Inputs, error) {
	if tmpl == nil {
		return values.Inputs{}, nil
	}
	in := values.Inputs{Claimant: t.Admission.Pools.ClaimedBy(c), Secrets: map[ctfv1alpha1.SecretKeyRef]string{}}
	if err := t.readSecrets(ctx, tmpl, in.Secrets); err != nil {
		return values.Inputs{}, err
	}
	var err error
	if in.Shared, err = values.SharedServices(ctx, t.OrganiserReader, tmpl, t.Settings.SharedServiceNamespaces); err != nil {
		return values.Inputs{}, err
	}
	if in.Gateways, err = t.readGateways(ctx, vals); err != nil {
		return values.Inputs{}, err
	}
	// A claimed pooled instance carries its claimant's flags.
	if in.Flags, err = t.readNamedFlags(ctx, tmpl, cmp.Or(in.Claimant, c.Spec.Participant)); err != nil {
		return values.Inputs{}, err
	}
	if tmpl.Spec.Flag != nil {
		if in.Flag, err = ctfflag.Resolve(ctx, t.secrets(), tmpl, c.Spec.Participant); err != nil {
			return values.Inputs{}, err
		}
	}
	return in, nil
}

// readSecrets reads into read the organiser's Secrets each container of
// tmpl reads, container by container: the primary's secretEnv and secret
// files, its sidecars', then each component's and its sidecars'.
func (t Translator) readSecrets(ctx context.Context, tmpl *ctfv1alpha1.ChallengeTemplate, read map[ctfv1alpha1.SecretKeyRef]string) error {
	if err := t.readSecretEnv(ctx, tmpl, "secretEnv", tmpl.Spec.SecretEnv, read); err != nil {
		return err
	}
	if err := t.readSecretFiles(ctx, tmpl, "spec.secretFiles", tmpl.Spec.SecretFiles, read); err != nil {
		return err
	}
	if err := t.readSidecarSecrets(ctx, tmpl, "spec.sidecars", tmpl.Spec.Sidecars, read); err != nil {
		return err
	}
	for i := range tmpl.Spec.Components {
		comp := &tmpl.Spec.Components[i]
		if err := t.readSecretEnv(ctx, tmpl, fmt.Sprintf("component %s's secretEnv", comp.Name), comp.SecretEnv, read); err != nil {
			return err
		}
		if err := t.readSecretFiles(ctx, tmpl, fmt.Sprintf("spec.components[%d].secretFiles", i), comp.SecretFiles, read); err != nil {
			return err
		}
		if err := t.readSidecarSecrets(ctx, tmpl, fmt.Sprintf("spec.components[%d].sidecars", i), comp.Sidecars, read); err != nil {
			return err
		}
	}
	return nil
}

// readSidecarSecrets reads a workload's sidecars' secretEnv and secret
// files (field names them in errors).
func (t Translator) readSidecarSecrets(ctx context.Context, tmpl *ctfv1alpha1.ChallengeTemplate, field string, sidecars []ctfv1alpha1.Sidecar, read map[ctfv1alpha1.SecretKeyRef]string) error {
	for i := range sidecars {
		sc := &sidecars[i]
		if err := t.readSecretEnv(ctx, tmpl, fmt.Sprintf("%s[%d] (%s)'s secretEnv", field, i, sc.Name), sc.SecretEnv, read); err != nil {
			return err
		}
		if err := t.readSecretFiles(ctx, tmpl, fmt.Sprintf("%s[%d].secretFiles", field, i), sc.SecretFiles, read); err != nil {
			return err
		}
	}
	return nil
}

// readSecretEnv reads one container's secretEnv (what names it in errors),
// each value checked as a variable's.
func (t Translator) readSecretEnv(ctx context.Context, tmpl *ctfv1alpha1.ChallengeTemplate, what string, env []ctfv1alpha1.SecretEnvVar, read map[ctfv1alpha1.SecretKeyRef]string) error {
	got, err := ctfflag.ResolveSecretEnv(ctx, t.secrets(), tmpl, what, env)
	if err != nil {
		return err
	}
	for i, e := range env {
		read[e.Secret] = got[i]
	}
	return nil
}

// readSecretFiles reads one container's secret files (field names them in
// errors), each checked as a file's.
func (t Translator) readSecretFiles(ctx context.Context, tmpl *ctfv1alpha1.ChallengeTemplate, field string, files []ctfv1alpha1.SecretFile, read map[ctfv1alpha1.SecretKeyRef]string) error {
	for i := range files {
		f := &files[i]
		value, err := ctfflag.ResolveFile(ctx, t.secrets(), tmpl, fmt.Sprintf("%s[%d] (%s)", field, i, f.Path), &f.Secret)
		if err != nil {
			return err
		}
		read[f.Secret] = value
	}
	return nil
}

// readGateways reads the Gateways the routes of vals attach to, from
// Reader, the cache the status reads Gateways from: a render costs no
// request to the API server. One not there yet is left out.
func (t Translator) readGateways(ctx context.Context, vals map[string]any) (map[ctfv1alpha1.GatewayRef]*gatewayv1.Gateway, error) {
	refs := values.RouteGateways(vals)
	if len(refs) == 0 {
		return nil, nil
	}
	out := make(map[ctfv1alpha1.GatewayRef]*gatewayv1.Gateway, len(refs))
	for _, ref := range refs {
		if _, read := out[ref]; read {
			continue
		}
		gw := &gatewayv1.Gateway{}
		err := t.Reader.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, gw)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading Gateway %s: %w", ref.Namespace+"/"+ref.Name, err)
		}
		out[ref] = gw
	}
	return out, nil
}

// readNamedFlags reads the value of each of tmpl's named flags for team, by
// name. An error names the flag and its Secret, never a value.
func (t Translator) readNamedFlags(ctx context.Context, tmpl *ctfv1alpha1.ChallengeTemplate, team string) (map[string]string, error) {
	if len(tmpl.Spec.Flags) == 0 {
		return nil, nil
	}
	if err := t.CheckNamedFlags(tmpl); err != nil {
		return nil, err
	}
	flags := make(map[string]string, len(tmpl.Spec.Flags))
	for i := range tmpl.Spec.Flags {
		f := &tmpl.Spec.Flags[i]
		value, err := ctfflag.ResolveNamed(ctx, t.secrets(), t.FlagCodec, tmpl, f, team)
		if err != nil {
			return nil, err
		}
		flags[f.Name] = value
	}
	return flags, nil
}

// secrets reads the organiser's Secrets tmpl names, only those it may.
func (t Translator) secrets() organisersecret.Reader {
	return organisersecret.Reader{Client: t.OrganiserReader, Namespaces: t.Settings.FlagSecretNamespaces}
}
