//go:build image

package imagetest_test

import (
	"fmt"
	"os"

	"go.yaml.in/yaml/v3"
)

// composeFile is the part of deploy/compose.yaml that the tests read;
// podman-compose runs the whole file.
type composeFile struct {
	Services map[string]composeService `yaml:"services"`
}

type composeService struct {
	Image  string `yaml:"image"`
	Deploy struct {
		Replicas int `yaml:"replicas"`
	} `yaml:"deploy"`
	StopGracePeriod string `yaml:"stop_grace_period"`
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
