package importer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/compose-spec/compose-go/v2/consts"
	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
)

// folder is the compose file's directory, the only place an import reads:
// a challenge's author writes the compose file, and the organiser who imports
// it must not ship what lies beside it (a kubeconfig, ~/.ssh) to every team.
type folder struct {
	// dir is the directory's real path, links resolved.
	dir string
}

// errOutside is why a file is refused.
var errOutside = errors.New("outside the compose file's directory")

func openFolder(dir string) (folder, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return folder{}, err
	}
	real, err = filepath.Abs(real)
	return folder{dir: real}, err
}

// inside is path's real path when it, links resolved, lies in the folder.
func (f folder) inside(path string) (string, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", err
	}
	if real, err = filepath.Abs(real); err != nil {
		return "", err
	}
	if rel, err := filepath.Rel(f.dir, real); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		if real == path {
			return "", fmt.Errorf("%s: %w (%s)", path, errOutside, f.dir)
		}
		return "", fmt.Errorf("%s (a link to %s): %w (%s)", path, real, errOutside, f.dir)
	}
	return real, nil
}

// readFile reads a file of the folder through an os.Root, which refuses a
// path that leaves it by .. or a link even if one changed since inside.
func (f folder) readFile(path string) ([]byte, error) {
	real, err := f.inside(path)
	if err != nil {
		return nil, err
	}
	rel, err := filepath.Rel(f.dir, real)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(f.dir)
	if err != nil {
		return nil, err
	}
	defer func() { _ = root.Close() }()
	return root.ReadFile(rel)
}

// resourceLoader resolves every compose file an extends or include names,
// so that the loader reads none outside the folder. It stands first among
// compose-go's loaders and accepts every path, its local one included.
type resourceLoader struct {
	folder folder
	// dirs are the directories of the files loaded, by the path that named
	// them: compose-go asks Dir without the context Load had.
	dirs map[string]string
}

// Accept claims every reference: an extends or include file is local here.
func (resourceLoader) Accept(string) bool { return true }

// Load returns the real path of a file the folder holds, or refuses it. A
// relative path is taken from the directory of the file that names it (a
// relative extends.file inside a file itself extended, from the compose
// file's own: compose-go keeps no trace of the file in between).
func (l resourceLoader) Load(ctx context.Context, path string) (string, error) {
	real, err := l.resolve(ctx, path)
	if err != nil {
		return "", err
	}
	data, err := l.folder.readFile(real)
	if err != nil {
		return "", err
	}
	// An included file's directory is its project directory, whose .env
	// compose-go reads for the file's interpolation.
	if env := filepath.Join(filepath.Dir(real), ".env"); exists(env) {
		if _, err := l.folder.inside(env); err != nil {
			return "", fmt.Errorf("the .env beside %s: %w", path, err)
		}
	}
	if err := checkIncludes(ctx, data, real); err != nil {
		return "", err
	}
	l.dirs[path] = filepath.Dir(real)
	return real, nil
}

// Dir is the directory the loaded file's relative paths start from.
func (l resourceLoader) Dir(path string) string {
	return cmp.Or(l.dirs[path], filepath.Dir(path))
}

func (l resourceLoader) resolve(ctx context.Context, path string) (string, error) {
	if !filepath.IsAbs(path) {
		base := l.folder.dir
		if file, ok := ctx.Value(consts.ComposeFileKey{}).(string); ok && filepath.IsAbs(file) {
			base = filepath.Dir(file)
		}
		path = filepath.Join(base, path)
	}
	return l.folder.inside(path)
}

// checkIncludes refuses an include that sets env_file or project_directory:
// compose-go reads those (and the project directory's .env) itself, by paths
// no loader sees. Their presence is refused whatever they name, before
// interpolation could make them anything.
func checkIncludes(ctx context.Context, data []byte, path string) error {
	model, err := loader.LoadModelWithContext(ctx, types.ConfigDetails{
		WorkingDir:  filepath.Dir(path),
		ConfigFiles: []types.ConfigFile{{Filename: path, Content: data}},
		Environment: types.Mapping{},
	}, func(o *loader.Options) {
		o.SetProjectName("include-check", true)
		o.SkipInclude, o.SkipExtends, o.SkipValidation, o.SkipNormalization = true, true, true, true
		o.SkipConsistencyCheck, o.SkipDefaultValues, o.ResolvePaths = true, true, false
		o.SkipResolveEnvironment, o.SkipResolveLabels = true, true
		o.ResourceLoaders = []loader.ResourceLoader{refuseAll{}}
	})
	if err != nil {
		return fmt.Errorf("loading %s: %w", path, err)
	}
	var includes []types.IncludeConfig
	if err := loader.Transform(model["include"], &includes); err != nil {
		return fmt.Errorf("reading the includes of %s: %w", path, err)
	}
	for _, inc := range includes {
		if len(inc.EnvFile) > 0 || inc.ProjectDirectory != "" {
			return fmt.Errorf("%s: include %s: env_file and project_directory are refused: compose reads them wherever they point, "+
				"outside the compose file's directory too; put the variables in a .env beside the included file", path, strings.Join(inc.Path, ", "))
		}
	}
	return nil
}

// refuseAll stands for every loader while only a file's own model is read.
type refuseAll struct{}

func (refuseAll) Accept(string) bool { return true }

func (refuseAll) Load(_ context.Context, path string) (string, error) {
	return "", fmt.Errorf("%s: not read while checking includes", path)
}

func (refuseAll) Dir(path string) string { return filepath.Dir(path) }

// confineEnvFiles keeps the env_files of every service (and of its pre_start
// hooks) that lie in the folder, each by its real path, and reports the
// others, which are never read; then reads those kept, as compose-go would.
func (c *composeImport) confineEnvFiles(f folder) error {
	for name, svc := range c.project.Services {
		svc.EnvFiles = c.envFilesInside(f, "service "+name, svc.EnvFiles)
		for i := range svc.PreStart {
			svc.PreStart[i].EnvFiles = c.envFilesInside(f, "service "+name+": pre_start", svc.PreStart[i].EnvFiles)
		}
		c.project.Services[name] = svc
	}
	resolved, err := c.project.WithServicesEnvironmentResolved(false)
	if err != nil {
		return err
	}
	c.project = resolved
	return nil
}

func (c *composeImport) envFilesInside(f folder, who string, files []types.EnvFile) []types.EnvFile {
	var kept []types.EnvFile
	for _, e := range files {
		if !exists(e.Path) {
			// compose-go says whether a missing file matters; nothing is read.
			kept = append(kept, e)
			continue
		}
		real, err := f.inside(e.Path)
		if err != nil {
			c.report.refused("%s: env_file %v: not read, its variables not carried", who, err)
			continue
		}
		e.Path = real
		kept = append(kept, e)
	}
	return kept
}

// exists says whether anything, a dangling link too, stands at path.
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
