package multicomponent_test

import (
	"context"
	"os"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/identity"
	"github.com/challenge-operator/challenge-operator/test/builders"
	"github.com/challenge-operator/challenge-operator/test/harness"
)

// The organiser's secrets in this file: each must reach its container and
// nothing a team, a platform or a log reader sees.
const (
	secretsFlag  = "CTF{flag-never-shown}"
	dbPassword   = "db-password-never-shown"
	tlsKey       = "-----BEGIN PRIVATE KEY-----\n\tkey-never-shown\n-----END PRIVATE KEY-----\n"
	secretsShown = "never-shown"
)

// organiserSecret creates one of the organiser's Secrets for the test.
func organiserSecret(t *testing.T, name string, data map[string][]byte) ctfv1alpha1.SecretKeyRef {
	t.Helper()
	s := harness.OrganiserSecret(name, data)
	NewWithT(t).Expect(h.Client.Create(context.Background(), s)).To(Succeed())
	t.Cleanup(func() { _ = h.Client.Delete(context.Background(), s) })
	return ctfv1alpha1.SecretKeyRef{Namespace: s.Namespace, Name: s.Name}
}

func withKey(ref ctfv1alpha1.SecretKeyRef, key string) ctfv1alpha1.SecretKeyRef {
	ref.Key = key
	return ref
}

// TestSecretsBeyondThePrimary: the instance's flag reaches its primary (a
// file), a flag service (a variable) and a database (a file of root's
// alone); the database's password and a TLS key (a file, for the primary and
// the database) come from the organiser's Secrets into the instance's one
// Secret, each under its own key. The instance runs, each pod reads exactly
// its own keys, and no value is in the Challenge, its Events or the log. The
// database's URL is built from its password by Kubernetes, which expands it
// after the password's variable; the primary's variable that names the
// database's password is left as written.
func TestSecretsBeyondThePrimary(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	flagRef := withKey(organiserSecret(t, "secrets-flag", map[string][]byte{"flag": []byte(secretsFlag)}), "flag")
	db := organiserSecret(t, "secrets-db", map[string][]byte{"password": []byte(dbPassword), "tls.key": []byte(tlsKey)})
	h.Template(t, "secrets", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Flag = &ctfv1alpha1.FlagSpec{Static: &flagRef, FlagDelivery: ctfv1alpha1.FlagDelivery{Mount: ctfv1alpha1.FlagMountFile, Path: "/flag/flag.txt"}}
		s.SecretFiles = []ctfv1alpha1.SecretFile{{Path: "/etc/app/tls.key", Secret: withKey(db, "tls.key"), Mode: ptr.To[int32](0o400)}}
		// Another container's secret variable: Kubernetes leaves it as written.
		s.Env = []ctfv1alpha1.EnvVar{{Name: "CROSS", Value: "$(POSTGRES_PASSWORD)"}}
		s.Components = []ctfv1alpha1.Component{
			{Name: "flagsvc", Image: "registry.example/ctf/flagsvc:1", Ports: ports("flag", 8081),
				Flag: &ctfv1alpha1.FlagDelivery{Mount: ctfv1alpha1.FlagMountEnv, EnvName: "FLAG"}},
			{Name: "db", Image: "registry.example/ctf/db:1", Ports: ports("sql", 5432),
				Flag:      &ctfv1alpha1.FlagDelivery{Mount: ctfv1alpha1.FlagMountFile, Path: "/root/flag", FileMode: ptr.To[int32](0o400)},
				SecretEnv: []ctfv1alpha1.SecretEnvVar{{Name: "POSTGRES_PASSWORD", Secret: withKey(db, "password")}},
				Env:       []ctfv1alpha1.EnvVar{{Name: "DATABASE_URL", Value: "postgres://app:$(POSTGRES_PASSWORD)@db/app"}},
				Container: ctfv1alpha1.Container{SecretFiles: []ctfv1alpha1.SecretFile{{Path: "/etc/db/server.key", Secret: withKey(db, "tls.key")}}}},
		}
	})
	ns := h.Namespace(t, nil)
	ch := builders.FromTemplate(ns, "secrets", "team-s", "secrets")
	g.Expect(h.Client.Create(ctx, ch)).To(Succeed())
	got := h.EventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
	secretName := identity.FlagSecret(ch.Name)

	// The instance's one Secret: the flag and each value under its key.
	secret := &corev1.Secret{}
	g.Expect(h.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: secretName}, secret)).To(Succeed())
	g.Expect(secret.Data).To(Equal(map[string][]byte{"flag": []byte(secretsFlag), "file.0": []byte(tlsKey),
		"db.env.POSTGRES_PASSWORD": []byte(dbPassword), "db.file.0": []byte(tlsKey)}))

	ref := func(key string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secretName}, Key: key}}
	}
	volume := func(pod *corev1.PodSpec, name string) *corev1.SecretVolumeSource {
		for _, v := range pod.Volumes {
			if v.Name == name {
				g.Expect(v.Secret).NotTo(BeNil(), "volume %s is the instance's Secret", name)
				return v.Secret
			}
		}
		g.Expect(name).To(BeEmpty(), "no volume %s", name)
		return nil
	}

	// The primary: the flag as a file (0444), the TLS key as a file of root's alone (0400), hence no fsGroup.
	primary := deployment(g, got, ch.Name).Spec.Template.Spec
	ctr := primary.Containers[0]
	g.Expect(primary.SecurityContext.FSGroup).To(BeNil(), "a file of root's alone: no fsGroup")
	g.Expect(volume(&primary, "flag")).To(HaveField("DefaultMode", ptr.To[int32](0o444)))
	tls := volume(&primary, "secrets")
	g.Expect(tls.SecretName).To(Equal(secretName))
	g.Expect(tls.Items).To(Equal([]corev1.KeyToPath{{Key: "file.0", Path: "file.0", Mode: ptr.To[int32](0o400)}}))
	g.Expect(ctr.VolumeMounts).To(ContainElements(
		corev1.VolumeMount{Name: "flag", MountPath: "/flag/flag.txt", SubPath: "flag", ReadOnly: true},
		corev1.VolumeMount{Name: "secrets", MountPath: "/etc/app/tls.key", SubPath: "file.0", ReadOnly: true}))
	g.Expect(ctr.Env).NotTo(ContainElement(HaveField("ValueFrom", Not(BeNil()))), "the primary reads no variable from the Secret")
	g.Expect(ctr.Env).To(ContainElement(corev1.EnvVar{Name: "CROSS", Value: "$(POSTGRES_PASSWORD)"}), "nor another container's")

	// The flag service: the flag in FLAG, no volume of the Secret.
	flagsvc := deployment(g, got, ch.Name+"--flagsvc").Spec.Template.Spec
	g.Expect(flagsvc.Containers[0].Env).To(ContainElement(corev1.EnvVar{Name: "FLAG", ValueFrom: ref("flag")}))
	g.Expect(flagsvc.Volumes).NotTo(ContainElement(HaveField("Secret", Not(BeNil()))))
	g.Expect(flagsvc.SecurityContext.FSGroup).NotTo(BeNil(), "nothing of root's alone")

	// The database: the flag as a file of root's alone, its password from its own key, the TLS key as a file (0444).
	dbPod := deployment(g, got, ch.Name+"--db").Spec.Template.Spec
	dbCtr := dbPod.Containers[0]
	g.Expect(dbPod.SecurityContext.FSGroup).To(BeNil(), "the flag file is root's alone")
	g.Expect(volume(&dbPod, "flag")).To(HaveField("DefaultMode", ptr.To[int32](0o400)))
	g.Expect(volume(&dbPod, "secrets").Items).To(Equal([]corev1.KeyToPath{{Key: "db.file.0", Path: "db.file.0", Mode: ptr.To[int32](0o444)}}))
	// Its password from its own key, and the URL built from it after it, for Kubernetes to expand.
	g.Expect(dbCtr.Env).To(ContainElements(corev1.EnvVar{Name: "POSTGRES_PASSWORD", ValueFrom: ref("db.env.POSTGRES_PASSWORD")},
		corev1.EnvVar{Name: "DATABASE_URL", Value: "postgres://app:$(POSTGRES_PASSWORD)@db/app"}))
	g.Expect(slices.IndexFunc(dbCtr.Env, func(e corev1.EnvVar) bool { return e.Name == "DATABASE_URL" })).To(
		BeNumerically(">", slices.IndexFunc(dbCtr.Env, func(e corev1.EnvVar) bool { return e.Name == "POSTGRES_PASSWORD" })))
	g.Expect(dbCtr.VolumeMounts).To(ContainElements(
		corev1.VolumeMount{Name: "flag", MountPath: "/root/flag", SubPath: "flag", ReadOnly: true},
		corev1.VolumeMount{Name: "secrets", MountPath: "/etc/db/server.key", SubPath: "db.file.0", ReadOnly: true}))

	var pods corev1.PodList
	g.Expect(h.Client.List(ctx, &pods, client.InNamespace(ns))).To(Succeed())
	g.Expect(pods.Items).To(HaveLen(3), "the API server admitted every pod")

	// No value where a team, a platform or a log reader looks.
	status, err := client.MergeFrom(&ctfv1alpha1.Challenge{}).Data(got)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(status)).NotTo(ContainSubstring(secretsShown), "not in the Challenge")
	var events corev1.EventList
	g.Expect(h.Client.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
	g.Expect(events.Items).NotTo(BeEmpty())
	for _, e := range events.Items {
		g.Expect(e.Message).NotTo(ContainSubstring(secretsShown), "Event %s", e.Reason)
	}
	logs, err := os.ReadFile(h.LogFile)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(logs)).NotTo(ContainSubstring(secretsShown), "the operator's log")
	g.Expect(h.Client.Delete(ctx, ch)).To(Succeed())
	h.EventuallyGone(t, ch, harness.Timeout, "deleted")
}

// TestSecretFileRefusals: a secret file from a namespace flags may not come
// from, or one the chart could not render, is an Error naming the field and
// the Secret, never the value; nothing is installed and the Secret it names
// is left as it was.
func TestSecretFileRefusals(t *testing.T) {
	ctx := context.Background()
	elsewhere := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "not-the-organisers",
		Labels: map[string]string{ctfv1alpha1.OrganiserSecretLabel: "true"}}, Data: map[string][]byte{"key": []byte(tlsKey)}}
	NewWithT(t).Expect(h.Client.Create(ctx, elsewhere)).To(Succeed())
	t.Cleanup(func() { _ = h.Client.Delete(context.Background(), elsewhere) })
	binary := organiserSecret(t, "secrets-binary", map[string][]byte{"key": []byte("never-shown\x00")})
	for _, tc := range []struct {
		name   string
		ref    ctfv1alpha1.SecretKeyRef
		reason string
		want   string
	}{
		{"another namespace", ctfv1alpha1.SecretKeyRef{Namespace: "default", Name: elsewhere.Name, Key: "key"},
			"PolicyViolation", `reads spec.components[0].secretFiles[0] (/etc/key.pem) from namespace "default"`},
		{"not text", withKey(binary, "key"),
			"SecretFileInvalid", `spec.components[0].secretFiles[0] (/etc/key.pem): Secret ctf-organiser/secrets-binary key "key" has a control character`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			name := "secrets-refused-" + map[string]string{"PolicyViolation": "ns", "SecretFileInvalid": "binary"}[tc.reason]
			h.Template(t, name, func(s *ctfv1alpha1.ChallengeTemplateSpec) {
				s.Components = []ctfv1alpha1.Component{{Name: "db", Image: "registry.example/ctf/db:1",
					Container: ctfv1alpha1.Container{SecretFiles: []ctfv1alpha1.SecretFile{{Path: "/etc/key.pem", Secret: tc.ref}}}}}
			})
			ns := h.Namespace(t, nil)
			ch := builders.FromTemplate(ns, name, "team-r", name)
			g.Expect(h.Client.Create(ctx, ch)).To(Succeed())
			got := h.EventuallyPhase(t, ch, ctfv1alpha1.PhaseError)
			g.Expect(got.Status.Reason).To(Equal(tc.reason))
			g.Expect(got.Status.Message).To(ContainSubstring(tc.want))
			g.Expect(got.Status.Message).NotTo(ContainSubstring(secretsShown))
			g.Expect(apierrors.IsNotFound(h.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: identity.FlagSecret(ch.Name)}, &corev1.Secret{}))).
				To(BeTrue(), "no Secret of the instance's")
			var deps appsv1.DeploymentList
			g.Expect(h.Client.List(ctx, &deps, client.InNamespace(ns))).To(Succeed())
			g.Expect(deps.Items).To(BeEmpty(), "nothing installed")
			left := &corev1.Secret{}
			g.Expect(h.Client.Get(ctx, client.ObjectKeyFromObject(elsewhere), left)).To(Succeed())
			g.Expect(left.ResourceVersion).To(Equal(elsewhere.ResourceVersion), "the Secret it names untouched")
			g.Expect(left.Data).To(Equal(elsewhere.Data))
		})
	}
}
