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
// It reads nothing outside the compose file's directory, links resolved: an
// extends or include file there is an error naming it; an env_file, a bind
// mount or a config there is reported refused, and not read.
func FromCompose(ctx context.Context, name, path string) (Result, error) {
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
	c := composeImport{project: project, folder: f, names: map[string]string{}}
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
	names   map[string]string
	primary string
}

func (c *composeImport) run(name string) (Result, error) {
	services := slices.Sorted(maps.Keys(c.project.Services))
	if len(services) == 0 {
		return Result{}, fmt.Errorf("the compose file has no service")
	}
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
	published      []string
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
		c.report.changed("service %s: published ports %s: choose how teams reach them (expose.type Ingress, TLSRoute, NodePort; ClusterIP until then)",
			svc.Name, strings.Join(ctr.published, ", "))
	}
}

func (c *composeImport) component(svc types.ServiceConfig) ctfv1alpha1.Component {
	ctr := c.container(svc)
	if len(ctr.published) > 0 {
		c.report.notCarried("service %s: published ports %s: only the primary component (%s) is exposed; the others are reached inside the instance",
			svc.Name, strings.Join(ctr.published, ", "), c.primary)
	}
	return ctfv1alpha1.Component{Name: c.names[svc.Name], Image: ctr.image, Ports: ctr.ports, Env: ctr.env, Resources: ctr.resources,
		Container: ctr.Container, WritableRootFilesystem: ctr.writableRootFS, Security: ctr.security}
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
	ctr.ports, ctr.published = c.ports(svc)
	ctr.env = c.env(svc)
	ctr.Command, ctr.Args = arguments(svc.Entrypoint), arguments(svc.Command)
	ctr.resources = resources(svc)
	ctr.Probes = c.probes(svc)
	ctr.Files, ctr.Scratch = c.mounts(svc)
	if svc.ShmSize > 0 && !slices.ContainsFunc(ctr.Scratch, func(m ctfv1alpha1.ScratchMount) bool { return m.Path == "/dev/shm" }) && len(ctr.Scratch) < 8 {
		size := ctfv1alpha1.Quantity(resource.NewQuantity(int64(svc.ShmSize), resource.BinarySI).String())
		ctr.Scratch = append(ctr.Scratch, ctfv1alpha1.ScratchMount{Path: "/dev/shm", Memory: true, SizeLimit: &size})
	}
	root, user, group := c.user(svc)
	ctr.security = securityFor(who, root, user, group, svc.CapAdd, svc.Privileged, &c.report)
	c.unsupported(svc)
	return ctr
}

func (c *composeImport) ports(svc types.ServiceConfig) ([]ctfv1alpha1.ChallengePort, []string) {
	var out []ctfv1alpha1.ChallengePort
	var published []string
	add := func(name string, port uint32, proto string) {
		p := ctfv1alpha1.ChallengePort{Port: int32(port), Protocol: ctfv1alpha1.ProtocolTCP}
		if strings.EqualFold(proto, "udp") {
			p.Protocol = ctfv1alpha1.ProtocolUDP
		}
		if slices.ContainsFunc(out, func(q ctfv1alpha1.ChallengePort) bool { return q.Port == p.Port && q.Protocol == p.Protocol }) {
			return
		}
		p.Name = dnsLabel(name, 15)
		if p.Name == "" || slices.ContainsFunc(out, func(q ctfv1alpha1.ChallengePort) bool { return q.Name == p.Name }) {
			p.Name = fmt.Sprintf("%s-%d", strings.ToLower(string(p.Protocol)), port)
		}
		out = append(out, p)
	}
	for _, p := range svc.Ports {
		add(p.Name, p.Target, p.Protocol)
		if p.Published != "" {
			published = append(published, p.Published+"->"+strconv.Itoa(int(p.Target)))
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
	return out, published
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
		if other == service {
			continue
		}
		variable := values.PrimaryHostVariable
		if other != c.primary {
			variable = values.HostVariable(c.names[other])
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
func (c *composeImport) mounts(svc types.ServiceConfig) ([]ctfv1alpha1.File, []ctfv1alpha1.ScratchMount) {
	var files []ctfv1alpha1.File
	var scratch []ctfv1alpha1.ScratchMount
	addScratch := func(path string, memory bool) {
		if path == "/tmp" || slices.ContainsFunc(scratch, func(m ctfv1alpha1.ScratchMount) bool { return m.Path == path }) {
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
	for _, s := range svc.Secrets {
		c.report.notCarried("service %s: secret %s: use the template's flag or secretEnv", svc.Name, s.Source)
	}
	if len(files) > 8 {
		c.report.notCarried("service %s: files beyond the eighth", svc.Name)
		files = files[:8]
	}
	if len(scratch) > 8 {
		c.report.notCarried("service %s: writable directories beyond the eighth", svc.Name)
		scratch = scratch[:8]
	}
	return files, scratch
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
		"network_mode " + svc.NetworkMode: svc.NetworkMode != "",
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
	if len(svc.DependsOn) > 0 {
		c.report.changed("service %s: depends_on: components start together; readiness probes decide when the instance is Running", svc.Name)
	}
	if d := svc.Deploy; d != nil && d.Replicas != nil && *d.Replicas != 1 {
		set["deploy.replicas (one pod per component)"] = true
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
