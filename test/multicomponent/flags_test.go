package multicomponent_test

import (
	"context"
	"os"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/ctfflag"
	"github.com/challenge-operator/challenge-operator/internal/flagtag"
	"github.com/challenge-operator/challenge-operator/internal/identity"
	"github.com/challenge-operator/challenge-operator/test/builders"
	"github.com/challenge-operator/challenge-operator/test/harness"
)

// adminFlag is the named flags' static one, which no status, Event or log
// may show.
const adminFlag = "CTF{admin-static-never-shown}"

// TestNamedFlagsReachTwoComponents: a template of three named flags, two
// each team's own and one static, delivered to the primary (a file), a
// database (a variable) and a bot's sidecar (a file of root's alone). Two
// teams' instances each hold their own flags, which say whose they are;
// the static one is the same for both; each container reads its own key of
// the instance's Secret only, and no value is shown anywhere.
func TestNamedFlagsReachTwoComponents(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	admin := withKey(organiserSecret(t, "named-admin", map[string][]byte{"flag": []byte(adminFlag)}), "flag")
	h.Template(t, "named", func(s *ctfv1alpha1.ChallengeTemplateSpec) {
		s.Flags = []ctfv1alpha1.NamedFlag{
			{Name: "web", PerTeam: &ctfv1alpha1.PerTeamFlag{Format: "CTF{%s}"}, FlagDelivery: ctfv1alpha1.FlagDelivery{Path: "/flag/web.txt"}},
			{Name: "sql", PerTeam: &ctfv1alpha1.PerTeamFlag{}, Component: "db", FlagDelivery: ctfv1alpha1.FlagDelivery{Mount: ctfv1alpha1.FlagMountEnv, EnvName: "FLAG"}},
			{Name: "admin", Static: &admin, Component: "bot", Sidecar: "browser", FlagDelivery: ctfv1alpha1.FlagDelivery{Path: "/root/flag", FileMode: ptr.To[int32](0o400)}},
		}
		s.Components = []ctfv1alpha1.Component{
			{Name: "db", Image: "registry.example/ctf/db:1", Ports: ports("sql", 5432)},
			{Name: "bot", Image: "registry.example/ctf/bot:1", Sidecars: []ctfv1alpha1.Sidecar{{Name: "browser", Image: "registry.example/ctf/chrome:1"}}},
		}
	})
	ns := h.Namespace(t, nil)
	codec := harness.FlagCodec()
	values := map[string]map[string]string{}
	for _, team := range []string{"team-a", "team-b"} {
		ch := builders.FromTemplate(ns, "named-"+team, team, "named")
		g.Expect(h.Client.Create(ctx, ch)).To(Succeed())
		got := h.EventuallyPhase(t, ch, ctfv1alpha1.PhaseRunning)
		secretName := identity.FlagSecret(ch.Name)

		secret := &corev1.Secret{}
		g.Expect(h.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: secretName}, secret)).To(Succeed())
		g.Expect(secret.Data).To(HaveLen(3))
		values[team] = map[string]string{}
		for _, name := range []string{"web", "sql", "admin"} {
			g.Expect(secret.Data).To(HaveKey("flag."+name), "flag %s", name)
			values[team][name] = string(secret.Data["flag."+name])
		}
		// Each perTeam flag opens to its team, under its own name only.
		body, ok := ctfflag.BodyOf("CTF{%s}", values[team]["web"])
		g.Expect(ok).To(BeTrue(), "the web flag has its format")
		verdict, owner := codec.Verify("named", "web", team, body)
		g.Expect(verdict).To(Equal(flagtag.Correct))
		g.Expect(owner).To(Equal(team))
		verdict, _ = codec.Verify("named", "sql", team, body)
		g.Expect(verdict).To(Equal(flagtag.Wrong), "a flag is bound to its name")
		body, ok = ctfflag.BodyOf(ctfflag.DefaultFormat, values[team]["sql"])
		g.Expect(ok).To(BeTrue())
		verdict, owner = codec.Verify("named", "sql", team, body)
		g.Expect(verdict).To(Equal(flagtag.Correct))
		g.Expect(owner).To(Equal(team))
		g.Expect(values[team]["admin"]).To(Equal(adminFlag))

		ref := &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secretName}, Key: "flag.sql"}}
		primary := deployment(g, got, ch.Name).Spec.Template.Spec
		g.Expect(primary.Containers[0].VolumeMounts).To(ContainElement(corev1.VolumeMount{Name: "secrets", MountPath: "/flag/web.txt", SubPath: "flag.web", ReadOnly: true}))
		g.Expect(primary.Volumes).To(ContainElement(HaveField("Secret.Items", Equal([]corev1.KeyToPath{{Key: "flag.web", Path: "flag.web", Mode: ptr.To[int32](0o444)}}))))
		g.Expect(primary.Containers[0].Env).NotTo(ContainElement(HaveField("ValueFrom", Not(BeNil()))))
		g.Expect(primary.SecurityContext.FSGroup).NotTo(BeNil(), "nothing of root's alone in the primary")

		db := deployment(g, got, ch.Name+"--db").Spec.Template.Spec
		g.Expect(db.Containers[0].Env).To(ContainElement(corev1.EnvVar{Name: "FLAG", ValueFrom: ref}))
		g.Expect(db.Volumes).NotTo(ContainElement(HaveField("Secret", Not(BeNil()))), "the database mounts nothing of the Secret")

		bot := deployment(g, got, ch.Name+"--bot").Spec.Template.Spec
		g.Expect(bot.SecurityContext.FSGroup).To(BeNil(), "the admin flag is root's alone")
		g.Expect(bot.Containers).To(HaveLen(2))
		g.Expect(bot.Containers[0].VolumeMounts).NotTo(ContainElement(HaveField("MountPath", "/root/flag")), "the bot's main container has no flag")
		g.Expect(bot.Containers[1].VolumeMounts).To(ContainElement(corev1.VolumeMount{Name: "browser-secrets", MountPath: "/root/flag", SubPath: "flag.admin", ReadOnly: true}))

		status, err := client.MergeFrom(&ctfv1alpha1.Challenge{}).Data(got)
		g.Expect(err).NotTo(HaveOccurred())
		for _, v := range values[team] {
			g.Expect(string(status)).NotTo(ContainSubstring(v), "no flag in the Challenge")
		}
	}
	g.Expect(values["team-a"]["web"]).NotTo(Equal(values["team-b"]["web"]), "each team its own")
	g.Expect(values["team-a"]["sql"]).NotTo(Equal(values["team-b"]["sql"]))

	var events corev1.EventList
	g.Expect(h.Client.List(ctx, &events, client.InNamespace(ns))).To(Succeed())
	logs, err := os.ReadFile(h.LogFile)
	g.Expect(err).NotTo(HaveOccurred())
	for _, team := range values {
		for _, v := range team {
			for _, e := range events.Items {
				g.Expect(e.Message).NotTo(ContainSubstring(v), "Event %s", e.Reason)
			}
			g.Expect(string(logs)).NotTo(ContainSubstring(v), "the operator's log")
		}
	}
}
