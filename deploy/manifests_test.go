package deploy_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// check is one property of the deployment files: run returns a message per
// violation, each reading "got X, want Y".
type check struct {
	name string
	run  func(b *bundle) []string
}

// checks are the properties TestDeployFiles asserts; TestChecksCatchBreakage
// shows that each can fail.
//
// They stay Go, on evidence. What a general linter knows is left to
// kube-score (make vet), and the checks say where they leave a property to
// it (selectors, read-only root, privileged, seccomp, high uid, PDB
// policy). What remains ties one file to another or to this service: a
// ConfigMap key to a setting cmd/dispatcher reads, the grace period to the
// preStop sleep plus DISPATCHER_SHUTDOWN_TIMEOUT, Secret references to
// secret.example.yaml, probes to /healthz and /readyz, nginx's retries to
// what a POST may already have done, the Dockerfile's HEALTHCHECK to the
// probe command. The tools looked at do not check such things, or cannot
// run here: kubeconform fetches its JSON schemas from the network at run
// time, which CI cannot reach; hadolint has no Debian package and ships as
// a downloaded binary; conftest is OPA, whose go.mod requires about a
// hundred modules, to write the same checks in Rego, and those on Go
// sources would still need Go; BuildKit's Dockerfile parser comes with
// some sixty required modules for the 27 lines of parseDockerfile. Compose
// is run whole by podman-compose in the image suite, so a compose.yaml it
// cannot read fails there.
var checks = []check{
	{"documents", checkDocuments},
	{"kustomization", checkKustomization},
	{"selectors", checkSelectors},
	{"probes", checkProbes},
	{"security", checkSecurity},
	{"shutdown", checkShutdown},
	{"topology", checkTopology},
	{"config", checkConfig},
	{"settings", checkSettings},
	{"tokens", checkTokens},
	{"secret example", checkSecretExample},
	{"pdb", checkPDB},
	{"hpa", checkHPA},
	{"redis example", checkRedisExample},
	{"compose replicas", checkComposeReplicas},
	{"compose dispatcher", checkComposeDispatcher},
	{"compose redis", checkComposeRedis},
	{"compose nginx", checkComposeNginx},
	{"compose images", checkComposeImages},
	{"env file", checkEnvFile},
	{"dockerfile", checkDockerfile},
	{"nginx", checkNginx},
}

// TestDeployFiles parses every manifest under k8s/, compose.yaml, the
// Dockerfile and nginx.conf, and checks the properties of deploy/README.md.
func TestDeployFiles(t *testing.T) {
	b := load(t)
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			for _, p := range c.run(b) {
				t.Error(p)
			}
		})
	}
}

func checkDocuments(b *bundle) []string {
	var ps []string
	for _, d := range b.docs {
		if d.APIVersion == "" || d.Kind == "" {
			ps = append(ps, fmt.Sprintf("k8s/%s: got apiVersion %q kind %q, want both", d.file, d.APIVersion, d.Kind))
		}
		if d.Kind != "Kustomization" && d.Metadata.Name == "" {
			ps = append(ps, fmt.Sprintf("k8s/%s: %s: got no metadata.name, want one", d.file, d.Kind))
		}
	}
	return ps
}

func checkKustomization(b *bundle) []string {
	var ps []string
	kinds := map[string]bool{}
	for _, r := range b.kustomization.Resources {
		if strings.HasSuffix(r, ".example.yaml") {
			ps = append(ps, fmt.Sprintf("kustomization.yaml: resources: got %s, want no example file", r))
		}
		docs, err := decodeFile(filepath.Join("k8s", r))
		if err != nil {
			ps = append(ps, fmt.Sprintf("kustomization.yaml: resource %s: got %v, want a manifest", r, err))
			continue
		}
		for _, d := range docs {
			kinds[d.Kind] = true
			if d.Kind == "Secret" {
				ps = append(ps, fmt.Sprintf("kustomization.yaml: resource %s: got a Secret (%s), want Secrets referenced by name, never inlined", r, d.Metadata.Name))
			}
		}
	}
	for _, kind := range []string{"ConfigMap", "Deployment", "Service", "PodDisruptionBudget", "HorizontalPodAutoscaler"} {
		if !kinds[kind] {
			ps = append(ps, fmt.Sprintf("kustomization.yaml: resources: got no %s, want one", kind))
		}
	}
	files, _ := filepath.Glob(filepath.Join("k8s", "*.y*ml"))
	for _, f := range files {
		name := filepath.Base(f)
		if name != "kustomization.yaml" && !strings.HasSuffix(name, ".example.yaml") && !slices.Contains(b.kustomization.Resources, name) {
			ps = append(ps, fmt.Sprintf("kustomization.yaml: resources: got no %s, want every manifest but the examples", name))
		}
	}
	for _, im := range b.kustomization.Images {
		if im.Digest == "" && (im.NewTag == "" || im.NewTag == "latest") {
			ps = append(ps, fmt.Sprintf("kustomization.yaml: images %s: got tag %q, want a version tag or a digest", im.Name, im.NewTag))
		}
	}
	return ps
}

func checkSelectors(b *bundle) []string {
	var ps []string
	// Which pods the Deployment, the Service, the PodDisruptionBudget and
	// the HorizontalPodAutoscaler select, kube-score checks (make vet);
	// not the ports.
	ports := containerPorts(b.deployment.Spec.Template.Spec.Containers)
	if len(b.service.Spec.Ports) == 0 {
		ps = append(ps, fmt.Sprintf("Service %s: ports: got none, want 8080", b.service.Metadata.Name))
	}
	for _, p := range b.service.Spec.Ports {
		if !slices.Contains(ports, fmt.Sprint(p.TargetPort)) {
			ps = append(ps, fmt.Sprintf("Service %s: port %s targetPort: got %v, want one of the container ports %v", b.service.Metadata.Name, p.Name, p.TargetPort, ports))
		}
	}
	return ps
}

// containerPorts lists the names and numbers of the containers' ports.
func containerPorts(cs []container) []string {
	var ports []string
	for _, c := range cs {
		for _, p := range c.Ports {
			ports = append(ports, p.Name, strconv.Itoa(p.ContainerPort))
		}
	}
	return ports
}

func checkProbes(b *bundle) []string {
	var ps []string
	for _, c := range b.deployment.Spec.Template.Spec.Containers {
		ports := containerPorts([]container{c})
		if !slices.Contains(ports, "8080") {
			ps = append(ps, fmt.Sprintf("container %s: ports: got %v, want containerPort 8080", c.Name, ports))
		}
		for _, want := range []struct {
			name, path string
			probe      *probe
		}{
			{"startupProbe", "/healthz", c.StartupProbe},
			{"livenessProbe", "/healthz", c.LivenessProbe},
			{"readinessProbe", "/readyz", c.ReadinessProbe},
		} {
			p := want.probe
			switch {
			case p == nil:
				ps = append(ps, fmt.Sprintf("container %s: %s: got none, want httpGet %s", c.Name, want.name, want.path))
			case p.HTTPGet == nil:
				ps = append(ps, fmt.Sprintf("container %s: %s: got no httpGet, want httpGet %s", c.Name, want.name, want.path))
			case p.HTTPGet.Path != want.path:
				ps = append(ps, fmt.Sprintf("container %s: %s: got httpGet %s, want httpGet %s", c.Name, want.name, p.HTTPGet.Path, want.path))
			case !slices.Contains(ports, fmt.Sprint(p.HTTPGet.Port)):
				ps = append(ps, fmt.Sprintf("container %s: %s port: got %v, want one of %v", c.Name, want.name, p.HTTPGet.Port, ports))
			}
		}
	}
	return ps
}

func checkShutdown(b *bundle) []string {
	var ps []string
	spec := b.deployment.Spec.Template.Spec
	timeout := 20 * time.Second // the service's default
	if v, ok := b.configMap.Data["DISPATCHER_SHUTDOWN_TIMEOUT"]; ok {
		d, err := time.ParseDuration(v)
		if err != nil {
			return []string{fmt.Sprintf("ConfigMap %s: DISPATCHER_SHUTDOWN_TIMEOUT: got %q, want a duration", b.configMap.Metadata.Name, v)}
		}
		timeout = d
	}
	grace := 30 // Kubernetes' default
	if g := spec.TerminationGracePeriodSeconds; g != nil {
		grace = *g
	}
	for _, c := range spec.Containers {
		pre := c.Lifecycle.PreStop
		if pre == nil || pre.Sleep == nil || pre.Sleep.Seconds <= 0 {
			got := "none"
			if pre != nil {
				got = "no sleep action (distroless has no shell to run one)"
			}
			ps = append(ps, fmt.Sprintf("container %s: lifecycle.preStop: got %s, want a sleep of some seconds, so that endpoints are removed before SIGTERM", c.Name, got))
			continue
		}
		need := time.Duration(pre.Sleep.Seconds)*time.Second + timeout
		if time.Duration(grace)*time.Second <= need {
			ps = append(ps, fmt.Sprintf("Deployment %s: terminationGracePeriodSeconds: got %d, want more than preStop %ds + DISPATCHER_SHUTDOWN_TIMEOUT %s", b.deployment.Metadata.Name, grace, pre.Sleep.Seconds, timeout))
		}
	}
	return ps
}

func checkTopology(b *bundle) []string {
	var ps []string
	spec := b.deployment.Spec.Template.Spec
	pods := b.deployment.Spec.Template.Metadata.Labels
	var keys []string
	for _, tsc := range spec.TopologySpreadConstraints {
		keys = append(keys, tsc.TopologyKey)
		if !selects(tsc.LabelSelector.MatchLabels, pods) {
			ps = append(ps, fmt.Sprintf("topologySpreadConstraint %s: labelSelector: got %v, want a subset of the pod labels %v", tsc.TopologyKey, tsc.LabelSelector.MatchLabels, pods))
		}
	}
	if !slices.Contains(keys, "kubernetes.io/hostname") {
		ps = append(ps, fmt.Sprintf("Deployment %s: topologySpreadConstraints: got %v, want one over kubernetes.io/hostname", b.deployment.Metadata.Name, keys))
	}
	return ps
}

func checkPDB(b *bundle) []string {
	p := b.pdb
	minAvail, maxUnavail := p.Spec.MinAvailable, p.Spec.MaxUnavailable
	switch {
	case minAvail == nil && maxUnavail == nil:
		return nil // kube-score's poddisruptionbudget-has-policy (make vet)
	case minAvail != nil && maxUnavail != nil:
		return []string{fmt.Sprintf("PodDisruptionBudget %s: got both minAvailable and maxUnavailable, want one", p.Metadata.Name)}
	case maxUnavail != nil:
		if n, ok := maxUnavail.(int); ok && n < 1 || !ok && !strings.HasSuffix(fmt.Sprint(maxUnavail), "%") {
			return []string{fmt.Sprintf("PodDisruptionBudget %s: maxUnavailable: got %v, want ≥ 1", p.Metadata.Name, maxUnavail)}
		}
	default:
		// Below the minimum replica count, or no drain could ever proceed.
		low := 2
		if m := b.hpa.Spec.MinReplicas; m != nil {
			low = *m
		}
		if n, ok := minAvail.(int); !ok || n < 1 || n >= low {
			return []string{fmt.Sprintf("PodDisruptionBudget %s: minAvailable: got %v, want 1 to %d", p.Metadata.Name, minAvail, low-1)}
		}
	}
	return nil
}

func checkHPA(b *bundle) []string {
	var ps []string
	h := b.hpa
	if h.APIVersion != "autoscaling/v2" {
		ps = append(ps, fmt.Sprintf("HorizontalPodAutoscaler %s: apiVersion: got %s, want autoscaling/v2", h.Metadata.Name, h.APIVersion))
	}
	// minReplicas ≥ 2: kube-score's horizontalpodautoscaler-replicas.
	if m := h.Spec.MinReplicas; m != nil && h.Spec.MaxReplicas < *m {
		ps = append(ps, fmt.Sprintf("HorizontalPodAutoscaler %s: maxReplicas: got %d, want ≥ minReplicas %d", h.Metadata.Name, h.Spec.MaxReplicas, *m))
	}
	cpu := false
	for _, m := range h.Spec.Metrics {
		if m.Type == "Resource" && m.Resource != nil && m.Resource.Name == "cpu" &&
			m.Resource.Target.Type == "Utilization" && m.Resource.Target.AverageUtilization > 0 {
			cpu = true
		}
	}
	if !cpu {
		ps = append(ps, fmt.Sprintf("HorizontalPodAutoscaler %s: metrics: got no CPU utilization target, want one", h.Metadata.Name))
	}
	return ps
}

func checkRedisExample(b *bundle) []string {
	var ps []string
	r := b.redis
	if n := r.Spec.Replicas; n == nil || *n != 1 {
		ps = append(ps, fmt.Sprintf("StatefulSet %s: replicas: got %s, want 1 (a single Redis)", r.Metadata.Name, intString(n)))
	}
	var claims []string
	for _, vct := range r.Spec.VolumeClaimTemplates {
		claims = append(claims, vct.Metadata.Name)
	}
	for _, c := range r.Spec.Template.Spec.Containers {
		args := append(slices.Clone(c.Command), c.Args...)
		if !hasPair(args, "--appendonly", "yes") {
			ps = append(ps, fmt.Sprintf("StatefulSet %s: container %s: got args %v, want --appendonly yes", r.Metadata.Name, c.Name, args))
		}
		onClaim := false
		for _, m := range c.VolumeMounts {
			onClaim = onClaim || m.MountPath == "/data" && slices.Contains(claims, m.Name)
		}
		if !onClaim {
			ps = append(ps, fmt.Sprintf("StatefulSet %s: container %s: got mounts %v, want /data on a volumeClaimTemplate %v", r.Metadata.Name, c.Name, c.VolumeMounts, claims))
		}
	}
	return ps
}

// hasPair reports whether flag is followed by value in args.
func hasPair(args []string, flag, value string) bool {
	for i := range len(args) - 1 {
		if args[i] == flag && args[i+1] == value {
			return true
		}
	}
	return false
}

func firstSet[T any](vs ...*T) *T {
	for _, v := range vs {
		if v != nil {
			return v
		}
	}
	return nil
}

func boolString(v *bool) string {
	if v == nil {
		return "unset"
	}
	return strconv.FormatBool(*v)
}

func intString[T int | int64](v *T) string {
	if v == nil {
		return "unset"
	}
	return fmt.Sprint(*v)
}
