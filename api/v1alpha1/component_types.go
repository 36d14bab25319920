package v1alpha1

// Component is one more service of every instance beside its primary one
// (the template's own image and ports): a database, a cache, an admin bot.
// It runs as its own Deployment with a Service of its own when it has ports,
// reachable from the instance's other components on those ports only and,
// unless it is exposed, from nothing outside the instance. Every component of an instance, the
// primary one included, finds the others through the environment:
// <NAME>_HOST holds a component's host name (REDIS_HOST for "redis",
// WEB_BOT_HOST for "web-bot"), PRIMARY_HOST the primary one's.
// +kubebuilder:validation:XValidation:rule="!has(self.ports) || self.ports.all(p, self.ports.exists_one(q, q.name == p.name))",message="a component's port names must be unique"
// +kubebuilder:validation:XValidation:rule="!has(self.expose) || !has(self.expose.type) || self.expose.type == 'ClusterIP' || (has(self.ports) && size(self.ports) > 0)",message="an exposed component needs a port"
// +kubebuilder:validation:XValidation:rule="!has(self.ports) || self.ports.all(p, self.ports.exists_one(q, q.port == p.port && q.protocol == p.protocol))",message="a component must not repeat a port and protocol"
// +kubebuilder:validation:XValidation:rule="!has(self.probes) || ((!has(self.probes.readiness) || ((!has(self.probes.readiness.http) || (has(self.ports) && self.ports.exists(q, q.name == self.probes.readiness.http.port))) && (!has(self.probes.readiness.tcp) || (has(self.ports) && self.ports.exists(q, q.name == self.probes.readiness.tcp.port))))) && (!has(self.probes.startup) || ((!has(self.probes.startup.http) || (has(self.ports) && self.ports.exists(q, q.name == self.probes.startup.http.port))) && (!has(self.probes.startup.tcp) || (has(self.ports) && self.ports.exists(q, q.name == self.probes.startup.tcp.port))))) && (!has(self.probes.liveness) || ((!has(self.probes.liveness.http) || (has(self.ports) && self.ports.exists(q, q.name == self.probes.liveness.http.port))) && (!has(self.probes.liveness.tcp) || (has(self.ports) && self.ports.exists(q, q.name == self.probes.liveness.tcp.port))))))",message="a probe's port must name one of the component's ports"
type Component struct {
	// Name of the component: a DNS label of at most 8 characters (so that
	// "challenge", the primary component's, is never one), not "primary".
	// Its objects are named "<instance>--<name>".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=8
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self != 'primary'",message="primary names the instance's primary component (PRIMARY_HOST)"
	Name string `json:"name"`

	// Image of the component's container.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9._/:@+-]*$`
	Image string `json:"image"`

	// Ports the component listens on, for the instance's other components
	// only; none for a component nothing connects to (a bot).
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Ports []ChallengePort `json:"ports,omitempty"`

	// Env is the component's environment, after the operator's <NAME>_HOST
	// variables, so that a value may use them: "redis://$(REDIS_HOST):6379".
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Env []EnvVar `json:"env,omitempty"`

	// Resources of the component's container, within the template's
	// policy like the primary one's.
	// +optional
	Resources *Resources `json:"resources,omitempty"`

	// Container is the component's command line, probes, files and
	// writable directories.
	Container `json:",inline"`

	// WritableRootFilesystem lets the container write anywhere in its own
	// filesystem (within the ephemeral-storage limit), for images that
	// write where no scratch directory can be named in advance.
	// +optional
	WritableRootFilesystem bool `json:"writableRootFilesystem,omitempty"`

	// Security is what the component may do on its node, within the
	// operator's flags like the template's own: an admin bot may be
	// privileged in a sandbox while the application stays restricted.
	// Restricted when unset, whatever the template's own section says.
	// +optional
	Security *Security `json:"security,omitempty"`

	// Expose makes the component's first port reachable from outside the
	// instance as the primary component's are (a second service teams
	// connect to): its own host under --ingress-domain for Ingress and the
	// routes; internal (ClusterIP) when unset.
	// +optional
	Expose *Expose `json:"expose,omitempty"`

	// InternetEgress lets the component reach the internet (everything
	// outside the internal ranges), as policy.internetEgress does the
	// primary component: an admin bot fetching a team's page.
	// +optional
	InternetEgress bool `json:"internetEgress,omitempty"`
}

// Container is a container's command line, probes, files and writable
// directories: the primary component's and every other component's.
type Container struct {
	// Command replaces the image's entrypoint, e.g. to run a kCTF image's
	// server without the privileged jail its entrypoint starts.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Command []Argument `json:"command,omitempty"`

	// Args replace the image's command arguments.
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Args []Argument `json:"args,omitempty"`

	// WorkingDir is the container's working directory.
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^/[^\p{Cc}\p{Zl}\p{Zp}]*$`
	// +optional
	WorkingDir string `json:"workingDir,omitempty"`

	// Probes tell when the container is ready, started and alive; without a
	// readiness probe, a TCP probe on its first TCP port (for the primary
	// component, values.readinessProbe).
	// +optional
	Probes *Probes `json:"probes,omitempty"`

	// Files are configuration files the template carries (an nginx.conf, a
	// jail's config, an init SQL script), mounted read-only into the
	// container at their paths.
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="self.all(f, self.exists_one(g, g.path == f.path))",message="file paths must be unique"
	// +optional
	Files []File `json:"files,omitempty"`

	// Scratch are writable directories besides /tmp (a cache, an upload or
	// data directory), each an emptyDir with a size limit within the
	// operator's ephemeral-storage ceiling; a memory-backed one counts
	// against the container's memory.
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="self.all(m, self.exists_one(n, n.path == m.path))",message="scratch paths must be unique"
	// +optional
	Scratch []ScratchMount `json:"scratch,omitempty"`

	// KeepImageTmp leaves the image's own /tmp in place (its files, and
	// read-only with a read-only root filesystem) instead of a writable
	// scratch directory over it.
	// +optional
	KeepImageTmp bool `json:"keepImageTmp,omitempty"`
}
