package importer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	ctfv1alpha1 "github.com/challenge-operator/challenge-operator/api/v1alpha1"
	"github.com/challenge-operator/challenge-operator/internal/values"
)

// maxFileSize is the largest bind-mounted file carried as a template's file.
const maxFileSize = 64 << 10

// FromCompose imports the docker-compose file at path, loaded with the
// compose project's own loader (interpolation, extends and normalisation as
// docker compose does them, without the environment of the machine it runs
// on). The service that publishes ports (the first by name, if several do)
// is the primary component; every other service is a component, named by a
// DNS label of at most 8 characters. A service's host name in another's
// environment becomes $(<NAME>_HOST) (PRIMARY_HOST for the primary one).
//
// A service's secrets become secret files from the organiser's Secret named
// after the template in opts.SecretNamespace (reported, never read).
//
// It reads nothing outside the compose file's directory, links resolved: an
// extends or include file there is an error naming it; an env_file, a bind
// mount or a config there is reported refused, and not read.
func FromCompose(ctx context.Context, name, path string, opts Options) (Result, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return Result{}, err
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return Result{}, err
	}
	f, err := openFolder(filepath.Dir(abs))
	if err != nil {
		return Result{}, err
	}
	path = filepath.Join(f.dir, filepath.Base(abs))
	if err := checkIncludes(ctx, data, path); err != nil {
		return Result{}, err
	}
	project, err := loader.LoadWithContext(ctx, types.ConfigDetails{
		WorkingDir:  f.dir,
		ConfigFiles: []types.ConfigFile{{Filename: path, Content: data}},
		Environment: types.Mapping{},
	}, func(o *loader.Options) {
		o.SetProjectName(cmp.Or(name, filepath.Base(filepath.Dir(abs))), true)
		o.ResolvePaths = true
		// Environment files are read once confined (confineEnvFiles); labels
		// are not carried, so their files are never read.
		o.SkipResolveEnvironment, o.SkipResolveLabels = true, true
		o.ResourceLoaders = []loader.ResourceLoader{resourceLoader{folder: f, dirs: map[string]string{}}}
	})
	if err != nil {
		return Result{}, fmt.Errorf("loading %s: %w", path, err)
	}
	c := composeImport{project: project, folder: f, names: map[string]string{}, opts: opts}
	if err := c.confineEnvFiles(f); err != nil {
		return Result{}, fmt.Errorf("loading %s: %w", path, err)
	}
	return c.run(cmp.Or(dnsLabel(name, 63), dnsLabel(project.Name, 63)))
}

type composeImport struct {
	project *types.Project
	// folder is the compose file's directory, the only one read.
	folder folder
	report Report
	// names maps each service to its component's name ("" for the primary).
	names    map[string]string
	primary  string
	opts     Options
	template string
	// sidecarOf maps each service that shares another's network
	// (network_mode: service:X) to X: it becomes a sidecar in X's pod.
	sidecarOf map[string]string
}

func (c *composeImport) run(name string) (Result, error) {
	all := slices.Sorted(maps.Keys(c.project.Services))
	if len(all) == 0 {
		return Result{}, fmt.Errorf("the compose file has no service")
	}
	c.sidecarOf = sidecars(c.project)
	services := slices.DeleteFunc(slices.Clone(all), func(s string) bool { return c.sidecarOf[s] != "" })
	c.primary = services[0]
	for _, s := range services {
		if len(c.project.Services[s].Ports) > 0 {
			c.primary = s
			break
		}
	}
	taken := map[string]bool{"primary": true}
	for _, s := range services {
		if s == c.primary {
			continue
		}
		n := dnsLabel(s, 8)
		for i := 2; n == "" || taken[n]; i++ {
			n = dnsLabel(fmt.Sprintf("%s%d", dnsLabel(s, 6), i), 8)
		}
		taken[n] = true
		c.names[s] = n
		if n != s {
			c.report.changed("service %s: component %s (a DNS label of at most 8 characters)", s, n)
		}
	}
	tmpl := newTemplate(name)
	c.template = tmpl.Name
	spec := &tmpl.Spec
	for _, s := range services {
		svc := c.project.Services[s]
		if s == c.primary {
			c.primaryService(spec, svc)
			continue
		}
		spec.Components = append(spec.Components, c.component(svc))
	}
	if len(spec.Components) > 7 {
		c.report.notCarried("services %d and beyond: a template has at most 7 components besides its primary one", 8)
		spec.Components = spec.Components[:7]
	}
	for _, comp := range spec.Components {
		if comp.Replicas != nil && (spec.Policy == nil || spec.Policy.MaxReplicas == nil || *spec.Policy.MaxReplicas < *comp.Replicas) {
			if spec.Policy == nil {
				spec.Policy = &ctfv1alpha1.InstancePolicy{}
			}
			spec.Policy.MaxReplicas = ptr.To(*comp.Replicas)
		}
	}
	if spec.Policy != nil && spec.Policy.MaxReplicas != nil {
		c.report.changed("deploy.replicas: a component's replicas, and policy.maxReplicas %d for them", *spec.Policy.MaxReplicas)
	}
	c.attachSidecars(spec)
	if len(all) > 1 {
		spec.BareNames = &ctfv1alpha1.BareNames{Primary: c.bareName(c.primary)}
		c.report.changed("services reach each other by their names (bareNames; the primary, %s, answers to %s)", c.primary, spec.BareNames.Primary)
	}
	for n, nw := range c.project.Networks {
		if n != "default" || nw.Internal || nw.Driver != "" {
			c.report.changed("network %s: the components of an instance reach each other, and nothing reaches them from another instance", n)
		}
	}
	for n := range c.project.Volumes {
		c.report.changed("volume %s: an emptyDir of the instance's own, gone with it", n)
	}
	return Result{Template: tmpl, Report: c.report}, nil
}

// container is what a primary component and another have alike.
type container struct {
	ctfv1alpha1.Container
	image          string
	ports          []ctfv1alpha1.ChallengePort
	env            []ctfv1alpha1.EnvVar
	resources      *ctfv1alpha1.Resources
	security       *ctfv1alpha1.Security
	writableRootFS bool
	// published are its published ports ("8080->80"), publishedPorts their names, in order.
	published      []string
	publishedPorts []string
}

func (c *composeImport) primaryService(spec *ctfv1alpha1.ChallengeTemplateSpec, svc types.ServiceConfig) {
	ctr := c.container(svc)
	spec.Image, spec.Ports, spec.Env, spec.Container = ctr.image, ctr.ports, ctr.env, ctr.Container
	spec.Resources, spec.Security = ctr.resources, ctr.security
	if ctr.writableRootFS {
		spec.Values = &ctfv1alpha1.Values{ReadOnlyRootFilesystem: ptr.To(false)}
	}
	if len(spec.Ports) == 0 {
		spec.Ports = []ctfv1alpha1.ChallengePort{{Name: "main", Port: 8080, Protocol: ctfv1alpha1.ProtocolTCP}}
		c.report.changed("service %s: no port: a template's primary component needs one; 8080 assumed", svc.Name)
	}
	if len(ctr.published) > 0 {
		spec.Ports = firstPort(spec.Ports, ctr.publishedPorts[0])
		c.report.changed("service %s: published ports %s: choose how teams reach them (expose.type Ingress, TLSRoute, NodePort; ClusterIP until then)",
			svc.Name, ctr.published[0])
		spec.ExposePorts = c.exposePorts(svc.Name, spec.Ports, ctr)
	}
}

// firstPort moves the port named name to the front: the one a workload's
// exposure exposes.
func firstPort(ports []ctfv1alpha1.ChallengePort, name string) []ctfv1alpha1.ChallengePort {
	i := slices.IndexFunc(ports, func(p ctfv1alpha1.ChallengePort) bool { return p.Name == name })
	if i <= 0 {
		return ports
	}
	return append([]ctfv1alpha1.ChallengePort{ports[i]}, slices.Delete(slices.Clone(ports), i, i+1)...)
}

// httpPorts are the ports a published port is taken to serve plain HTTP on.
var httpPorts = []int32{80, 3000, 4000, 5000, 8000, 8080, 8081, 8888}

// exposePorts exposes each published port of a workload but its first (its
// exposure's) on a host of its own: by an HTTPRoute on a port HTTP usually
// runs on, by a TLSRoute otherwise, a UDP port not at all.
func (c *composeImport) exposePorts(service string, ports []ctfv1alpha1.ChallengePort, ctr container) []ctfv1alpha1.PortExposure {
	var out []ctfv1alpha1.PortExposure
	for i, name := range ctr.publishedPorts {
		p := ports[slices.IndexFunc(ports, func(p ctfv1alpha1.ChallengePort) bool { return p.Name == name })]
		if name == ports[0].Name || slices.ContainsFunc(out, func(e ctfv1alpha1.PortExposure) bool { return e.Port == name }) {
			continue
		}
		if p.Protocol == ctfv1alpha1.ProtocolUDP {
			c.report.notCarried("service %s: published port %s: UDP is reached inside the cluster only", service, ctr.published[i])
			continue
		}
		e := ctfv1alpha1.PortExposure{Port: name, Type: ctfv1alpha1.ExposeTLSRoute}
		what := "raw TCP inside TLS, by a TLSRoute"
		if slices.Contains(httpPorts, p.Port) {
			e.Type, what = ctfv1alpha1.ExposeHTTPRoute, "HTTP, by an HTTPRoute"
		}
		out = append(out, e)
		c.report.changed("service %s: published port %s: on a host of its own as %s (exposePorts; change its type if it serves otherwise)", service, ctr.published[i], what)
	}
	return out
}

func (c *composeImport) component(svc types.ServiceConfig) ctfv1alpha1.Component {
	ctr := c.container(svc)
	var exposePorts []ctfv1alpha1.PortExposure
	if len(ctr.published) > 0 {
		ctr.ports = firstPort(ctr.ports, ctr.publishedPorts[0])
		c.report.changed("service %s: published ports %s: choose how teams reach it (the component's expose.type Ingress, TLSRoute, NodePort; internal until then)",
			svc.Name, ctr.published[0])
		exposePorts = c.exposePorts(svc.Name, ctr.ports, ctr)
	}
	comp := ctfv1alpha1.Component{ExposePorts: exposePorts, Name: c.names[svc.Name], Image: ctr.image, Ports: ctr.ports, Env: ctr.env, Resources: ctr.resources,
		Container: ctr.Container, WritableRootFilesystem: ctr.writableRootFS, Security: ctr.security}
	if d := svc.Deploy; d != nil && d.Replicas != nil && *d.Replicas > 1 && *d.Replicas <= 10 {
		comp.Replicas = ptr.To(int32(*d.Replicas))
	}
	return comp
}

// sidecars maps every service that shares another's network (network_mode:
// service:X, X a service that shares none) to X.
func sidecars(p *types.Project) map[string]string {
	out := map[string]string{}
	for name, svc := range p.Services {
		host, ok := strings.CutPrefix(svc.NetworkMode, "service:")
		if hostSvc, exists := p.Services[host]; ok && exists && !strings.HasPrefix(hostSvc.NetworkMode, "service:") {
			out[name] = host
		}
	}
	return out
}

// bareName is the name a service answers to inside an instance: a
// component's, or the primary's (a DNS label of at most 15 characters).
func (c *composeImport) bareName(service string) string {
	if c.sidecarOf[service] != "" {
		return ""
	}
	if service == c.primary {
		return dnsLabel(service, 15)
	}
	return c.names[service]
}

// attachSidecars makes each service that shares another's network a
// sidecar in that service's pod, on its localhost: the same network, the
// same security.
func (c *composeImport) attachSidecars(spec *ctfv1alpha1.ChallengeTemplateSpec) {
	for _, s := range slices.Sorted(maps.Keys(c.sidecarOf)) {
		host := c.sidecarOf[s]
		svc := c.project.Services[s]
		ctr := c.container(svc)
		sidecars, container := &spec.Sidecars, "challenge"
		if host != c.primary {
			i := slices.IndexFunc(spec.Components, func(comp ctfv1alpha1.Component) bool { return comp.Name == c.names[host] })
			if i < 0 {
				c.report.notCarried("service %s: network_mode service:%s: %s is not carried", s, host, host)
				continue
			}
			sidecars, container = &spec.Components[i].Sidecars, spec.Components[i].Name
		}
		name := dnsLabel(s, 15)
		for i := 2; name == "" || name == "challenge" || name == container || slices.ContainsFunc(*sidecars, func(x ctfv1alpha1.Sidecar) bool { return x.Name == name }); i++ {
			name = dnsLabel(fmt.Sprintf("%s%d", dnsLabel(s, 13), i), 15)
		}
		if len(*sidecars) == 3 {
			c.report.notCarried("service %s: network_mode service:%s: a pod has at most 3 sidecars", s, host)
			continue
		}
		if ctr.security != nil || !svc.ReadOnly {
			c.report.changed("service %s: runs with %s's security and a read-only root filesystem (a sidecar shares its pod's)", s, host)
		}
		c.report.changed("service %s: network_mode service:%s: a sidecar in %s's pod, on its localhost", s, host, host)
		*sidecars = append(*sidecars, ctfv1alpha1.Sidecar{Name: name, Image: ctr.image, Ports: ctr.ports, Env: ctr.env, Resources: ctr.resources, Container: ctr.Container})
	}
}

func (c *composeImport) container(svc types.ServiceConfig) container {
	who := "service " + svc.Name
	ctr := container{image: svc.Image, writableRootFS: !svc.ReadOnly}
	ctr.WorkingDir = svc.WorkingDir
	if svc.Build != nil {
		if ctr.image == "" {
			// The name docker compose gives the image it builds.
			ctr.image = c.project.Name + "-" + svc.Name
		}
		c.report.notCarried("%s: build context %s: build and push the image, then set its image (%s for now)", who, c.relative(svc.Build.Context), ctr.image)
	}
	ctr.ports, ctr.published, ctr.publishedPorts = c.ports(svc)
	ctr.env = c.env(svc)
	ctr.Command, ctr.Args = arguments(svc.Entrypoint), arguments(svc.Command)
	ctr.resources = resources(svc)
	ctr.Probes = c.probes(svc)
	ctr.Files, ctr.Scratch, ctr.MemoryTmp, ctr.SecretFiles = c.mounts(svc)
	if svc.ShmSize > 0 && !slices.ContainsFunc(ctr.Scratch, func(m ctfv1alpha1.ScratchMount) bool { return m.Path == "/dev/shm" }) && len(ctr.Scratch) < 8 {
		size := ctfv1alpha1.Quantity(resource.NewQuantity(int64(svc.ShmSize), resource.BinarySI).String())
		ctr.Scratch = append(ctr.Scratch, ctfv1alpha1.ScratchMount{Path: "/dev/shm", Memory: true, SizeLimit: &size})
	}
	root, user, group := c.user(svc)
	ctr.security = securityFor(who, root, user, group, svc.CapAdd, svc.Privileged, &c.report)
	c.unsupported(svc)
	return ctr
}

func (c *composeImport) ports(svc types.ServiceConfig) (out []ctfv1alpha1.ChallengePort, published, publishedPorts []string) {
	add := func(name string, port uint32, proto string) string {
		p := ctfv1alpha1.ChallengePort{Port: int32(port), Protocol: ctfv1alpha1.ProtocolTCP}
		if strings.EqualFold(proto, "udp") {
			p.Protocol = ctfv1alpha1.ProtocolUDP
		}
		if i := slices.IndexFunc(out, func(q ctfv1alpha1.ChallengePort) bool { return q.Port == p.Port && q.Protocol == p.Protocol }); i >= 0 {
			return out[i].Name
		}
		p.Name = dnsLabel(name, 15)
		if p.Name == "" || slices.ContainsFunc(out, func(q ctfv1alpha1.ChallengePort) bool { return q.Name == p.Name }) {
			p.Name = fmt.Sprintf("%s-%d", strings.ToLower(string(p.Protocol)), port)
		}
		out = append(out, p)
		return p.Name
	}
	for _, p := range svc.Ports {
		name := add(p.Name, p.Target, p.Protocol)
		if p.Published != "" {
			published = append(published, p.Published+"->"+strconv.Itoa(int(p.Target)))
			publishedPorts = append(publishedPorts, name)
		}
		if p.HostIP != "" {
			c.report.notCarried("service %s: host_ip %s of port %d", svc.Name, p.HostIP, p.Target)
		}
	}
	for _, e := range svc.Expose {
		port, proto, _ := strings.Cut(e, "/")
		if n, err := strconv.ParseUint(port, 10, 16); err == nil && n > 0 {
			add("", uint32(n), proto)
		} else {
			c.report.notCarried("service %s: expose %s: not a single port", svc.Name, e)
		}
	}
	return out, published, publishedPorts
}

// env carries the environment, another service's host name rewritten as the
// variable that holds its component's.
func (c *composeImport) env(svc types.ServiceConfig) []ctfv1alpha1.EnvVar {
	var out []ctfv1alpha1.EnvVar
	for _, k := range slices.Sorted(maps.Keys(svc.Environment)) {
		v := svc.Environment[k]
		if v == nil {
			c.report.notCarried("service %s: environment %s has no value (it would come from the shell docker compose runs in)", svc.Name, k)
			continue
		}
		if k == "CHALLENGE_HOST" || k == "CHALLENGE_URL" {
			c.report.notCarried("service %s: environment %s: set by the operator to the instance's own address", svc.Name, k)
			continue
		}
		value := c.rewriteHosts(svc.Name, k, *v)
		out = append(out, ctfv1alpha1.EnvVar{Name: k, Value: value})
	}
	if len(svc.EnvFiles) > 0 {
		c.report.changed("service %s: env_file: its variables are carried as environment", svc.Name)
	}
	return out
}

// rewriteHosts replaces another service's name, where it stands as a host
// (bounded by neither a letter, a digit, a dot nor a hyphen, and not a URL's
// scheme), with the variable holding that component's host name.
func (c *composeImport) rewriteHosts(service, key, value string) string {
	for _, other := range slices.Sorted(maps.Keys(c.project.Services)) {
		workload := cmp.Or(c.sidecarOf[other], other)
		if other == service || workload == cmp.Or(c.sidecarOf[service], service) || c.bareName(other) == other {
			// Itself, its own pod (localhost), or a name that resolves as it is.
			continue
		}
		variable := values.PrimaryHostVariable
		if workload != c.primary {
			variable = values.HostVariable(c.names[workload])
		}
		if rewritten, ok := replaceHost(value, other, "$("+variable+")"); ok {
			value = rewritten
			c.report.changed("service %s: environment %s names service %s: $(%s) now", service, key, other, variable)
		}
	}
	return value
}

// replaceHost replaces host where it stands as a host name in s.
func replaceHost(s, host, with string) (string, bool) {
	var b strings.Builder
	replaced := false
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], host)
		if j < 0 {
			b.WriteString(s[i:])
			break
		}
		start, end := i+j, i+j+len(host)
		before := start == 0 || !hostChar(s[start-1])
		after := end == len(s) || (!hostChar(s[end]) && !strings.HasPrefix(s[end:], "://"))
		b.WriteString(s[i:start])
		if before && after {
			b.WriteString(with)
			replaced = true
		} else {
			b.WriteString(host)
		}
		i = end
	}
	return b.String(), replaced
}

func hostChar(c byte) bool {
	return c == '.' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func arguments(cmd types.ShellCommand) []ctfv1alpha1.Argument {
	if len(cmd) == 0 {
		return nil
	}
	out := make([]ctfv1alpha1.Argument, len(cmd))
	for i, a := range cmd {
		out[i] = ctfv1alpha1.Argument(a)
	}
	return out
}

func resources(svc types.ServiceConfig) *ctfv1alpha1.Resources {
	limits := &ctfv1alpha1.ResourceAmounts{}
	cpus, memory := float64(svc.CPUS), int64(svc.MemLimit)
	if d := svc.Deploy; d != nil && d.Resources.Limits != nil {
		cpus, memory = max(cpus, float64(d.Resources.Limits.NanoCPUs)), max(memory, int64(d.Resources.Limits.MemoryBytes))
	}
	if cpus > 0 {
		q := ctfv1alpha1.Quantity(resource.NewMilliQuantity(int64(cpus*1000), resource.DecimalSI).String())
		limits.CPU = &q
	}
	if memory > 0 {
		q := ctfv1alpha1.Quantity(resource.NewQuantity(memory, resource.BinarySI).String())
		limits.Memory = &q
	}
	if limits.CPU == nil && limits.Memory == nil {
		return nil
	}
	return &ctfv1alpha1.Resources{Limits: limits}
}

// probes makes the healthcheck the readiness probe: compose's "healthy" is
// what the components that depend on it wait for.
func (c *composeImport) probes(svc types.ServiceConfig) *ctfv1alpha1.Probes {
	hc := svc.HealthCheck
	if hc == nil || hc.Disable || len(hc.Test) == 0 {
		return nil
	}
	var cmd []ctfv1alpha1.Argument
	switch hc.Test[0] {
	case "CMD":
		cmd = arguments(types.ShellCommand(hc.Test[1:]))
	case "CMD-SHELL":
		cmd = []ctfv1alpha1.Argument{"/bin/sh", "-c", ctfv1alpha1.Argument(strings.Join(hc.Test[1:], " "))}
	case "NONE":
		return nil
	default:
		c.report.notCarried("service %s: healthcheck test %v", svc.Name, hc.Test)
		return nil
	}
	p := &ctfv1alpha1.Probe{Exec: &ctfv1alpha1.ExecProbe{Command: cmd}}
	seconds := func(d *types.Duration, lo, hi int32) *int32 {
		if d == nil {
			return nil
		}
		return ptr.To(min(max(int32(time.Duration(*d).Seconds()), lo), hi))
	}
	p.PeriodSeconds, p.TimeoutSeconds, p.InitialDelaySeconds = seconds(hc.Interval, 1, 300), seconds(hc.Timeout, 1, 60), seconds(hc.StartPeriod, 0, 600)
	if hc.Retries != nil {
		p.FailureThreshold = ptr.To(int32(min(max(*hc.Retries, 1), 100)))
	}
	c.report.changed("service %s: healthcheck: the readiness probe", svc.Name)
	return &ctfv1alpha1.Probes{Readiness: p}
}

// mounts carries tmpfs and volumes as scratch directories, a bind-mounted
// text file as a file of the template, and reports every other bind mount.
func (c *composeImport) mounts(svc types.ServiceConfig) (files []ctfv1alpha1.File, scratch []ctfv1alpha1.ScratchMount, memoryTmp bool, secretFiles []ctfv1alpha1.SecretFile) {
	addScratch := func(path string, memory bool) {
		if path == "/tmp" {
			memoryTmp = memoryTmp || memory
			return
		}
		if slices.ContainsFunc(scratch, func(m ctfv1alpha1.ScratchMount) bool { return m.Path == path }) {
			return
		}
		scratch = append(scratch, ctfv1alpha1.ScratchMount{Path: path, Memory: memory})
	}
	for _, t := range svc.Tmpfs {
		path, _, _ := strings.Cut(t, ":")
		addScratch(path, true)
	}
	for _, v := range svc.Volumes {
		switch v.Type {
		case types.VolumeTypeTmpfs:
			addScratch(v.Target, true)
		case types.VolumeTypeVolume:
			addScratch(v.Target, false)
		case types.VolumeTypeBind:
			f, err := c.textFile(v.Source)
			if err == nil {
				files = append(files, ctfv1alpha1.File{Path: v.Target, Content: f})
				c.report.changed("service %s: %s: a file of the template, read-only", svc.Name, v.Target)
				continue
			}
			if errors.Is(err, errOutside) {
				c.report.refused("service %s: bind mount at %s: %v: not read", svc.Name, v.Target, err)
				continue
			}
			c.report.notCarried("service %s: host path %s at %s: use files for configuration and scratch for writable space", svc.Name, c.relative(v.Source), v.Target)
		default:
			c.report.notCarried("service %s: volume of type %s at %s", svc.Name, v.Type, v.Target)
		}
	}
	for _, cfg := range svc.Configs {
		if def, ok := c.project.Configs[cfg.Source]; ok && def.File != "" {
			f, err := c.textFile(def.File)
			if err == nil {
				target := cmp.Or(cfg.Target, "/"+cfg.Source)
				files = append(files, ctfv1alpha1.File{Path: target, Content: f})
				continue
			}
			if errors.Is(err, errOutside) {
				c.report.refused("service %s: config %s: %v: not read", svc.Name, cfg.Source, err)
				continue
			}
		}
		c.report.notCarried("service %s: config %s", svc.Name, cfg.Source)
	}
	secretFiles = c.secretFiles(svc)
	if len(files) > 8 {
		c.report.notCarried("service %s: files beyond the eighth", svc.Name)
		files = files[:8]
	}
	if len(scratch) > 8 {
		c.report.notCarried("service %s: writable directories beyond the eighth", svc.Name)
		scratch = scratch[:8]
	}
	return files, scratch, memoryTmp, secretFiles
}

// secretKey is a compose secret's name as a Secret's key can hold it.
var secretKey = regexp.MustCompile(`^[-._a-zA-Z0-9]{1,253}$`)

// secretFiles mounts each secret of svc as a file (compose's /run/secrets/<name>
// unless it names a target) from the key of its name in the organiser's
// Secret named after the template, which the organiser creates from the
// secret's file: the import never reads it.
func (c *composeImport) secretFiles(svc types.ServiceConfig) []ctfv1alpha1.SecretFile {
	var out []ctfv1alpha1.SecretFile
	for _, s := range svc.Secrets {
		if c.opts.SecretNamespace == "" {
			c.report.notCarried("service %s: secret %s: give --secret-namespace to mount it from the organiser's Secret %s", svc.Name, s.Source, c.template)
			continue
		}
		if !secretKey.MatchString(s.Source) || len(out) == 8 {
			c.report.notCarried("service %s: secret %s: not a Secret's key, or beyond the eighth", svc.Name, s.Source)
			continue
		}
		f := ctfv1alpha1.SecretFile{Path: cmp.Or(s.Target, "/run/secrets/"+s.Source),
			Secret: ctfv1alpha1.SecretKeyRef{Namespace: c.opts.SecretNamespace, Name: c.template, Key: s.Source}}
		if !strings.HasPrefix(f.Path, "/") {
			f.Path = "/run/secrets/" + f.Path
		}
		if s.Mode != nil {
			f.Mode = ptr.To(int32(*s.Mode & 0o777))
		}
		from := "its value"
		if def, ok := c.project.Secrets[s.Source]; ok && def.File != "" {
			from = c.relative(def.File)
		}
		c.report.changed("service %s: secret %s: the file %s, from key %s of Secret %s/%s: create it from %s, labelled %s=true",
			svc.Name, s.Source, f.Path, s.Source, c.opts.SecretNamespace, c.template, from, ctfv1alpha1.OrganiserSecretLabel)
		out = append(out, f)
	}
	return out
}

// relative writes a path of the compose file's directory as the file does.
func (c *composeImport) relative(path string) string {
	if rel, err := filepath.Rel(c.project.WorkingDir, path); err == nil && !strings.HasPrefix(rel, "..") {
		return "./" + rel
	}
	return path
}

// errNotText is a path a template cannot carry as a file: missing, not a
// regular file, too large, or not text.
var errNotText = errors.New("not a small text file")

// textFile reads a small text file of the folder, as a template carries it;
// one outside the folder, errOutside, is not read.
func (c *composeImport) textFile(path string) (string, error) {
	info, err := os.Stat(path)
	if err != nil || !info.Mode().IsRegular() || info.Size() > maxFileSize {
		return "", errNotText
	}
	b, err := c.folder.readFile(path)
	if errors.Is(err, errOutside) {
		return "", err
	}
	if err != nil || !utf8.Valid(b) || controlChars.Match(b) {
		return "", errNotText
	}
	return string(b), nil
}

var controlChars = regexp.MustCompile(`[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]`)

// user reads "user:group": root, numeric ids, or names a template cannot carry.
func (c *composeImport) user(svc types.ServiceConfig) (root bool, user, group *int64) {
	if svc.User == "" {
		return false, nil, nil
	}
	u, g, _ := strings.Cut(svc.User, ":")
	if u == "root" || u == "0" {
		return true, nil, nil
	}
	if n, err := strconv.ParseInt(u, 10, 64); err == nil {
		user = &n
	} else {
		c.report.notCarried("service %s: user %s: a template names users by number", svc.Name, u)
	}
	if n, err := strconv.ParseInt(g, 10, 64); err == nil && n > 0 {
		group = &n
	}
	return false, user, group
}

// unsupported reports every setting of svc a template has no counterpart for.
func (c *composeImport) unsupported(svc types.ServiceConfig) {
	set := map[string]bool{
		"network_mode " + svc.NetworkMode: svc.NetworkMode != "" && c.sidecarOf[svc.Name] == "",
		"pid " + svc.Pid:                  svc.Pid != "",
		"ipc " + svc.Ipc:                  svc.Ipc != "",
		"uts " + svc.Uts:                  svc.Uts != "",
		"userns_mode " + svc.UserNSMode:   svc.UserNSMode != "",
		"devices":                         len(svc.Devices) > 0,
		"sysctls":                         len(svc.Sysctls) > 0,
		"ulimits":                         len(svc.Ulimits) > 0,
		"security_opt":                    len(svc.SecurityOpt) > 0,
		"extra_hosts":                     len(svc.ExtraHosts) > 0,
		"dns":                             len(svc.DNS) > 0 || len(svc.DNSSearch) > 0 || len(svc.DNSOpts) > 0,
		"runtime " + svc.Runtime:          svc.Runtime != "",
		"volumes_from":                    len(svc.VolumesFrom) > 0,
		"links":                           len(svc.Links) > 0 || len(svc.ExternalLinks) > 0,
		"gpus":                            len(svc.Gpus) > 0,
		"group_add":                       len(svc.GroupAdd) > 0,
		"hostname " + svc.Hostname:        svc.Hostname != "",
		"restart " + svc.Restart + " (a pod's container always restarts)": svc.Restart == "no" || strings.HasPrefix(svc.Restart, "on-failure"),
	}
	if len(svc.CapDrop) > 0 {
		c.report.changed("service %s: cap_drop: every capability is dropped already", svc.Name)
	}
	if slices.ContainsFunc(slices.Collect(maps.Keys(svc.DependsOn)), func(d string) bool { return d != c.sidecarOf[svc.Name] }) {
		c.report.changed("service %s: depends_on: components start together; readiness probes decide when the instance is Running", svc.Name)
	}
	if d := svc.Deploy; d != nil && d.Replicas != nil && *d.Replicas != 1 && (svc.Name == c.primary || c.sidecarOf[svc.Name] != "" || *d.Replicas > 10) {
		set["deploy.replicas (a component's, up to 10; the primary's and a sidecar's pod is one)"] = true
	}
	var keys []string
	for k, on := range set {
		if on {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		c.report.notCarried("service %s: %s", svc.Name, k)
	}
}
