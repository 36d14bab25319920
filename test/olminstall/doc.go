// Package olminstall holds the test that OLM itself installs the bundle on
// the local control plane; it has no code of its own.
package olminstall
