// Command challenge-operator runs the Helm-hybrid operator: the embedded
// helm-operator reconciler renders charts/challenge per Challenge, and Go
// controllers beside it keep the Challenge's lifecycle status true
// (internal/operatorcmd). Subcommands: `token` mints a team's instancer
// token (internal/tokencmd); `template` imports a challenge's compose file
// or kCTF definition (internal/templatecmd); `instancer` serves the
// participants' instancer as a process of its own (internal/instancercmd);
// `platform` makes the platform's signed calls to it (internal/platformcmd);
// `write-flags`, run in an ephemeral container, delivers a claimed pooled
// instance's flags into its running pod (internal/flagwritecmd).
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"

	_ "k8s.io/client-go/plugin/pkg/client/auth"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/challenge-operator/challenge-operator/internal/flagwritecmd"
	"github.com/challenge-operator/challenge-operator/internal/instancercmd"
	"github.com/challenge-operator/challenge-operator/internal/operatorcmd"
	"github.com/challenge-operator/challenge-operator/internal/platformcmd"
	"github.com/challenge-operator/challenge-operator/internal/templatecmd"
	"github.com/challenge-operator/challenge-operator/internal/tokencmd"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "token":
			if err := tokencmd.Run(os.Args[2:], os.Stdout); err != nil {
				fmt.Fprintln(os.Stderr, "challenge-operator token:", err)
				os.Exit(2)
			}
			return
		case "template":
			if err := templatecmd.Run(context.Background(), os.Args[2:], os.Stdout, os.Stderr); err != nil {
				fmt.Fprintln(os.Stderr, "challenge-operator template:", err)
				os.Exit(2)
			}
			return
		case "platform":
			if err := platformcmd.Run(os.Args[2:], os.Stdout, http.DefaultClient); err != nil {
				fmt.Fprintln(os.Stderr, "challenge-operator platform:", err)
				os.Exit(2)
			}
			return
		case "write-flags":
			if err := flagwritecmd.Run(os.Args[2:], os.Getenv, os.Stderr); err != nil {
				fmt.Fprintln(os.Stderr, "challenge-operator write-flags:", err)
				os.Exit(flagwritecmd.ExitCode(err))
			}
			return
		case "instancer":
			if err := instancercmd.Run(ctrl.SetupSignalHandler(), os.Args[2:]); err != nil {
				fmt.Fprintln(os.Stderr, "challenge-operator instancer:", err)
				os.Exit(1)
			}
			return
		}
	}
	if err := operatorcmd.Run(ctrl.SetupSignalHandler(), flag.CommandLine, os.Args[1:]); err != nil {
		ctrl.Log.Error(err, "challenge-operator failed")
		os.Exit(1)
	}
}
