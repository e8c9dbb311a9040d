package deploy_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// compose is the part of compose.yaml the checks read.
type compose struct {
	Services map[string]*composeService `yaml:"services"`
	Volumes  map[string]any             `yaml:"volumes"`
}

type composeService struct {
	Image string `yaml:"image"`
	Build *struct {
		Context    string `yaml:"context"`
		Dockerfile string `yaml:"dockerfile"`
	} `yaml:"build"`
	Command []string `yaml:"command"`
	Deploy  struct {
		Replicas *int `yaml:"replicas"`
	} `yaml:"deploy"`
	EnvFile     []string              `yaml:"env_file"`
	Environment map[string]string     `yaml:"environment"`
	DependsOn   map[string]dependency `yaml:"depends_on"`
	Ports       []string              `yaml:"ports"`
	Volumes     []string              `yaml:"volumes"`
	Healthcheck *healthcheck          `yaml:"healthcheck"`
}

type dependency struct {
	Condition string `yaml:"condition"`
}

type healthcheck struct {
	Test    []string `yaml:"test"`
	Disable bool     `yaml:"disable"`
}

// dispatchers returns the names of the services that run the dispatcher
// image, sorted.
func (c compose) dispatchers() []string {
	var names []string
	for name, s := range c.Services {
		repo, _, _ := strings.Cut(s.Image, ":")
		if repo == "dispatcher" || s.Build != nil && s.Build.Dockerfile == "deploy/Dockerfile" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

func checkComposeReplicas(b *bundle) []string {
	n := 0
	for _, name := range b.compose.dispatchers() {
		if r := b.compose.Services[name].Deploy.Replicas; r != nil {
			n += *r
		} else {
			n++
		}
	}
	if n != 3 {
		return []string{fmt.Sprintf("compose.yaml: dispatcher replicas: got %d, want 3", n)}
	}
	return nil
}

func checkComposeDispatcher(b *bundle) []string {
	var ps []string
	for _, name := range b.compose.dispatchers() {
		s := b.compose.Services[name]
		const url = "redis://redis:6379/0"
		if got := s.Environment["DISPATCHER_REDIS_URL"]; got != url {
			ps = append(ps, fmt.Sprintf("compose.yaml: %s: DISPATCHER_REDIS_URL: got %q, want %q", name, got, url))
		}
		if s.Build == nil || s.Build.Context != ".." || s.Build.Dockerfile != "deploy/Dockerfile" {
			ps = append(ps, fmt.Sprintf("compose.yaml: %s: build: got %+v, want context .. (the repository root) and dockerfile deploy/Dockerfile", name, s.Build))
		}
		if got := s.DependsOn["redis"].Condition; got != "service_healthy" {
			ps = append(ps, fmt.Sprintf("compose.yaml: %s: depends_on redis: got condition %q, want service_healthy", name, got))
		}
		if !slices.Contains(s.EnvFile, "dispatcher.env") {
			ps = append(ps, fmt.Sprintf("compose.yaml: %s: env_file: got %v, want dispatcher.env (the tokens)", name, s.EnvFile))
		}
		for k := range s.Environment {
			if isSecretSetting(k) {
				ps = append(ps, fmt.Sprintf("compose.yaml: %s: environment %s: got a literal value, want it from dispatcher.env", name, k))
			}
		}
		if len(s.Ports) > 0 {
			ps = append(ps, fmt.Sprintf("compose.yaml: %s: ports: got %v, want none (replicas share no host port; nginx is the way in)", name, s.Ports))
		}
		if h := s.Healthcheck; h != nil && !h.Disable && len(h.Test) > 0 {
			if h.Test[0] != "CMD" || len(h.Test) > 1 && slices.Contains([]string{"curl", "wget", "sh"}, h.Test[1]) {
				ps = append(ps, fmt.Sprintf("compose.yaml: %s: healthcheck: got %v, want a CMD the distroless image has (no shell, curl or wget)", name, h.Test))
			}
		}
	}
	return ps
}

func checkComposeRedis(b *bundle) []string {
	var ps []string
	s, ok := b.compose.Services["redis"]
	if !ok {
		return []string{"compose.yaml: services: got no redis, want one"}
	}
	if !hasPair(s.Command, "--appendonly", "yes") || !hasPair(s.Command, "--appendfsync", "everysec") {
		ps = append(ps, fmt.Sprintf("compose.yaml: redis: command: got %v, want --appendonly yes --appendfsync everysec", s.Command))
	}
	named := false
	for _, v := range s.Volumes {
		source, target, _ := strings.Cut(v, ":")
		_, isNamed := b.compose.Volumes[source]
		named = named || isNamed && strings.TrimSuffix(target, ":rw") == "/data"
	}
	if !named {
		ps = append(ps, fmt.Sprintf("compose.yaml: redis: volumes: got %v, want a named volume on /data", s.Volumes))
	}
	if h := s.Healthcheck; h == nil || !slices.Contains(h.Test, "redis-cli") || !slices.Contains(h.Test, "ping") {
		got := "none"
		if h != nil {
			got = fmt.Sprint(h.Test)
		}
		ps = append(ps, fmt.Sprintf("compose.yaml: redis: healthcheck: got %s, want redis-cli ping", got))
	}
	return ps
}

func checkComposeNginx(b *bundle) []string {
	var ps []string
	s, ok := b.compose.Services["nginx"]
	if !ok {
		return []string{"compose.yaml: services: got no nginx, want one"}
	}
	if !slices.ContainsFunc(s.Ports, func(p string) bool { return strings.HasSuffix(p, ":8080") }) {
		ps = append(ps, fmt.Sprintf("compose.yaml: nginx: ports: got %v, want 8080 published", s.Ports))
	}
	if !slices.ContainsFunc(s.Volumes, func(v string) bool { return strings.HasPrefix(v, "./nginx.conf:") }) {
		ps = append(ps, fmt.Sprintf("compose.yaml: nginx: volumes: got %v, want ./nginx.conf mounted", s.Volumes))
	}
	return ps
}

func checkComposeImages(b *bundle) []string {
	var ps []string
	for _, name := range mapKeys(b.compose.Services) {
		if p := unpinned(b.compose.Services[name].Image); p != "" {
			ps = append(ps, "compose.yaml: "+name+": "+p)
		}
	}
	return ps
}

// checkEnvFile checks that the tokens' env file is ignored by git and that
// its example shows every token variable with a placeholder.
func checkEnvFile(b *bundle) []string {
	var ps []string
	if !regexp.MustCompile(`(?m)^/?deploy/dispatcher\.env$`).MatchString(b.gitignore) {
		ps = append(ps, ".gitignore: got no deploy/dispatcher.env, want the tokens' file ignored")
	}
	for _, v := range []string{"DISPATCHER_ADMIN_TOKENS", "DISPATCHER_CLIENT_TOKENS"} {
		m := regexp.MustCompile(`(?m)^` + v + `=(.*)$`).FindStringSubmatch(b.envExample)
		switch {
		case m == nil:
			ps = append(ps, fmt.Sprintf("dispatcher.env.example: %s: got none, want it with a REPLACE-ME placeholder", v))
		case !strings.Contains(m[1], "REPLACE-ME"):
			ps = append(ps, fmt.Sprintf("dispatcher.env.example: %s: got %q, want a REPLACE-ME placeholder", v, m[1]))
		}
	}
	return ps
}
