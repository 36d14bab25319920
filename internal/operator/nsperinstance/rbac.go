// Package nsperinstance holds only the RBAC markers for
// --namespace-per-instance: each instance then renders into a Namespace of
// its own with a ResourceQuota and a LimitRange, which needs rights on those
// kinds (and the right to create and delete Namespaces is cluster-wide).
//
// The markers live in a package of their own because controller-gen makes
// one role from every marker of the packages it reads: `make manifests`
// reads this package alone into the ClusterRole namespace-per-instance-role
// (config/namespace-per-instance/role.yaml) and leaves it out of the
// manager's ClusterRole, so that installs without the flag do not hold
// these rights. Nothing imports this package.
package nsperinstance

// +kubebuilder:rbac:groups="",resources=namespaces;resourcequotas;limitranges,verbs=get;list;watch;create;update;patch;delete
