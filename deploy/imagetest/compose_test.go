//go:build image

package imagetest_test

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// composeFile is the part of deploy/compose.yaml that the stack copies, so
// that the containers run with the file's settings and not with the test's
// idea of them.
type composeFile struct {
	Services map[string]composeService `yaml:"services"`
}

type composeService struct {
	Image       string            `yaml:"image"`
	Command     []string          `yaml:"command"`
	Environment map[string]string `yaml:"environment"`
	Volumes     []string          `yaml:"volumes"`
	Deploy      struct {
		Replicas int `yaml:"replicas"`
	} `yaml:"deploy"`
	ReadOnly        bool     `yaml:"read_only"`
	CapDrop         []string `yaml:"cap_drop"`
	SecurityOpt     []string `yaml:"security_opt"`
	StopGracePeriod string   `yaml:"stop_grace_period"`
	Restart         string   `yaml:"restart"`
}

func readCompose(path string) (*composeFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c composeFile
	if err := yaml.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, name := range []string{"redis", "dispatcher", "nginx"} {
		if _, ok := c.Services[name]; !ok {
			return nil, fmt.Errorf("%s: no service %s", path, name)
		}
	}
	return &c, nil
}

// runArgs turns a service's settings into `podman run` options, as
// Compose does: its security settings, environment, stop timeout and
// restart policy, and its named volumes under the stack's prefix (bind
// mounts are the stack's to make).
func (s composeService) runArgs(prefix string) ([]string, error) {
	var args []string
	if s.ReadOnly {
		args = append(args, "--read-only")
	}
	for _, c := range s.CapDrop {
		args = append(args, "--cap-drop", c)
	}
	for _, o := range s.SecurityOpt {
		// Compose's "no-new-privileges:true" is podman's "no-new-privileges".
		if o == "no-new-privileges:true" {
			o = "no-new-privileges"
		}
		args = append(args, "--security-opt", o)
	}
	for _, k := range slices.Sorted(maps.Keys(s.Environment)) {
		args = append(args, "--env", k+"="+s.Environment[k])
	}
	if s.StopGracePeriod != "" {
		d, err := time.ParseDuration(s.StopGracePeriod)
		if err != nil {
			return nil, fmt.Errorf("stop_grace_period %q: %w", s.StopGracePeriod, err)
		}
		args = append(args, "--stop-timeout", fmt.Sprint(int(d.Seconds())))
	}
	if s.Restart != "" {
		args = append(args, "--restart", s.Restart)
	}
	for _, v := range s.Volumes {
		source, target, ok := strings.Cut(v, ":")
		if !ok || strings.HasPrefix(source, ".") || strings.HasPrefix(source, "/") {
			continue // bind mounts: the stack mounts its own copies
		}
		args = append(args, "--volume", prefix+"_"+source+":"+target)
	}
	return args, nil
}
