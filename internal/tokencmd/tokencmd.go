// Package tokencmd is the `challenge-operator token` subcommand: it mints a
// team's instancer token, or prints the team's link.
package tokencmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/challenge-operator/challenge-operator/internal/token"
)

// Run mints a team's instancer token (challenge-operator token --team T
// --ttl 48h) and prints it, or the team's link with --url.
func Run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	team := fs.String("team", "", "Team id (a DNS label): the token's subject, spec.participant of its instances.")
	ttl := fs.Duration("ttl", 48*time.Hour, "How long the token is valid.")
	keyDir := fs.String("key-dir", "", "Directory of the token keys, one file per key id (as the instancer reads them).")
	keySecret := fs.String("key-secret", "", "Secret namespace/name holding the token keys, read with the current kubeconfig (instead of --key-dir).")
	kid := fs.String("kid", "", "Key id to sign with; needed when there are several keys.")
	audience := fs.String("audience", token.Audience, "Audience of the instancer the token is for (its --audience).")
	maxLifetime := fs.Duration("max-lifetime", token.DefaultMaxLifetime, "The instancer's --max-token-lifetime: a longer --ttl is refused, as the instancer would refuse the token.")
	url := fs.String("url", "", "Instancer address (e.g. https://instances.ctf.example.org/): print the team's link instead of the bare token.")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *ttl > *maxLifetime {
		return fmt.Errorf("--ttl %s is longer than --max-lifetime %s: the instancer would refuse the token", *ttl, *maxLifetime)
	}
	var keys token.Keys
	var err error
	switch {
	case *keyDir != "" && *keySecret != "":
		return errors.New("give --key-dir or --key-secret, not both")
	case *keyDir != "":
		keys, err = token.KeysFromDir(*keyDir)
	case *keySecret != "":
		ns, name, ok := strings.Cut(*keySecret, "/")
		if !ok {
			return fmt.Errorf("--key-secret %q: want namespace/name", *keySecret)
		}
		var cl client.Client
		if cl, err = client.New(ctrl.GetConfigOrDie(), client.Options{}); err != nil {
			return err
		}
		keys, err = token.ReadKeys(context.Background(), cl, types.NamespacedName{Namespace: ns, Name: name})
	default:
		return errors.New("give --key-dir or --key-secret")
	}
	if err != nil {
		return err
	}
	raw, err := token.MintFor(keys, *kid, *team, *audience, *ttl, time.Now())
	if err != nil {
		return err
	}
	if *url != "" {
		_, err = fmt.Fprintf(out, "%s#token=%s\n", strings.TrimRight(*url, "/")+"/", raw)
		return err
	}
	_, err = fmt.Fprintln(out, raw)
	return err
}
