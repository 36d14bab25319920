//go:build tools

// Package olm pins OLM's commands so `go mod tidy` keeps them.
package olm

import _ "github.com/operator-framework/operator-lifecycle-manager/cmd/olm"
