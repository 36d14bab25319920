// Package shipping holds the tests of what the repository builds and ships
// rather than of any package: the operator image, built as a container
// builder would from the context .dockerignore admits, and the rule that no
// build output is committed. It has no code of its own.
package shipping
