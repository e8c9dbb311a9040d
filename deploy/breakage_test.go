package deploy_test

import (
	"strings"
	"testing"
)

// TestChecksCatchBreakage breaks one property at a time in a fresh copy of
// the deployment files and expects the checks to report it, so that none of
// TestDeployFiles's assertions passes vacuously.
func TestChecksCatchBreakage(t *testing.T) {
	ptr := func(v int) *int { return &v }
	yes, no := true, false
	cases := []struct {
		name   string
		mutate func(tb testing.TB, b *bundle)
		want   string
	}{
		// Kubernetes
		{"a document without kind", func(_ testing.TB, b *bundle) { b.docs[0].Kind = "" },
			`kind "", want both`},
		{"a document without a name", func(_ testing.TB, b *bundle) {
			for i := range b.docs {
				if b.docs[i].Kind == "Service" {
					b.docs[i].Metadata.Name = ""
				}
			}
		}, "Service: got no metadata.name"},
		{"an example among the resources", func(_ testing.TB, b *bundle) {
			b.kustomization.Resources = append(b.kustomization.Resources, "redis-statefulset.example.yaml")
		}, "got redis-statefulset.example.yaml, want no example file"},
		{"a resource that is not there", func(_ testing.TB, b *bundle) {
			b.kustomization.Resources = append(b.kustomization.Resources, "ingress.yaml")
		}, "resource ingress.yaml: got open"},
		{"no Service among the resources", func(_ testing.TB, b *bundle) {
			b.kustomization.Resources = without(b.kustomization.Resources, "service.yaml")
		}, "resources: got no Service, want one"},
		{"a Secret among the resources", func(_ testing.TB, b *bundle) {
			b.kustomization.Resources = append(b.kustomization.Resources, "secret.example.yaml")
		}, "got a Secret (dispatcher-tokens), want Secrets referenced by name"},
		{"a manifest not listed", func(_ testing.TB, b *bundle) {
			b.kustomization.Resources = without(b.kustomization.Resources, "hpa.yaml")
		}, "got no hpa.yaml, want every manifest"},
		{"kustomize image latest", func(_ testing.TB, b *bundle) { b.kustomization.Images[0].NewTag = "latest" },
			`images dispatcher: got tag "latest"`},
		{"service targets another port", func(_ testing.TB, b *bundle) { b.service.Spec.Ports[0].TargetPort = 9090 },
			"targetPort: got 9090"},
		{"service without ports", func(_ testing.TB, b *bundle) { b.service.Spec.Ports = nil },
			"Service dispatcher: ports: got none, want 8080"},
		{"container on another port", func(_ testing.TB, b *bundle) { containerOf(b).Ports[0].ContainerPort = 9090 },
			"ports: got [http 9090], want containerPort 8080"},
		{"exec readiness probe", func(_ testing.TB, b *bundle) { containerOf(b).ReadinessProbe.HTTPGet = nil },
			"readinessProbe: got no httpGet, want httpGet /readyz"},
		{"readiness on /healthz", func(_ testing.TB, b *bundle) { containerOf(b).ReadinessProbe.HTTPGet.Path = "/healthz" },
			"readinessProbe: got httpGet /healthz, want httpGet /readyz"},
		{"no liveness probe", func(_ testing.TB, b *bundle) { containerOf(b).LivenessProbe = nil },
			"livenessProbe: got none, want httpGet /healthz"},
		{"no startup probe", func(_ testing.TB, b *bundle) { containerOf(b).StartupProbe = nil },
			"startupProbe: got none"},
		{"probe on another port", func(_ testing.TB, b *bundle) { containerOf(b).LivenessProbe.HTTPGet.Port = 9090 },
			"livenessProbe port: got 9090"},
		{"root allowed", func(_ testing.TB, b *bundle) {
			containerOf(b).SecurityContext.RunAsNonRoot = &no
			b.deployment.Spec.Template.Spec.SecurityContext.RunAsNonRoot = &no
		}, "runAsNonRoot: got false, want true"},
		{"uid 0", func(_ testing.TB, b *bundle) {
			var root int64
			containerOf(b).SecurityContext.RunAsUser = &root
		}, "runAsUser: got 0, want 65532"},
		{"privilege escalation", func(_ testing.TB, b *bundle) { containerOf(b).SecurityContext.AllowPrivilegeEscalation = &yes },
			"allowPrivilegeEscalation: got true, want false"},
		{"capabilities kept", func(_ testing.TB, b *bundle) { containerOf(b).SecurityContext.Capabilities.Drop = nil },
			"capabilities.drop: got [], want [ALL]"},
		{"a capability added", func(_ testing.TB, b *bundle) {
			containerOf(b).SecurityContext.Capabilities.Add = []string{"NET_BIND_SERVICE"}
		}, "capabilities.add: got [NET_BIND_SERVICE], want none"},
		{"preStop that needs a shell", func(_ testing.TB, b *bundle) {
			containerOf(b).Lifecycle.PreStop.Sleep = nil
			containerOf(b).Lifecycle.PreStop.Exec = map[string]any{"command": []string{"sleep", "10"}}
		}, "lifecycle.preStop: got no sleep action"},
		{"shutdown timeout not a duration", func(_ testing.TB, b *bundle) { b.configMap.Data["DISPATCHER_SHUTDOWN_TIMEOUT"] = "20" },
			`DISPATCHER_SHUTDOWN_TIMEOUT: got "20", want a duration`},
		{"spread over other pods", func(_ testing.TB, b *bundle) {
			b.deployment.Spec.Template.Spec.TopologySpreadConstraints[1].LabelSelector.MatchLabels = map[string]string{"app": "x"}
		}, "topologySpreadConstraint kubernetes.io/hostname: labelSelector: got map[app:x]"},
		{"Redis URL unparsable", func(_ testing.TB, b *bundle) { b.configMap.Data["DISPATCHER_REDIS_URL"] = "redis://%zz" },
			"DISPATCHER_REDIS_URL: got parse"},
		{"grace period too short", func(_ testing.TB, b *bundle) { b.deployment.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr(25) },
			"terminationGracePeriodSeconds: got 25, want more than preStop 10s + DISPATCHER_SHUTDOWN_TIMEOUT 20s"},
		{"shutdown timeout raised alone", func(_ testing.TB, b *bundle) { b.configMap.Data["DISPATCHER_SHUTDOWN_TIMEOUT"] = "45s" },
			"terminationGracePeriodSeconds: got 40"},
		{"no preStop", func(_ testing.TB, b *bundle) { containerOf(b).Lifecycle.PreStop = nil },
			"lifecycle.preStop: got none"},
		{"no topology spread", func(_ testing.TB, b *bundle) { b.deployment.Spec.Template.Spec.TopologySpreadConstraints = nil },
			"topologySpreadConstraints: got [], want one over kubernetes.io/hostname"},
		{"config map not referenced", func(_ testing.TB, b *bundle) { containerOf(b).EnvFrom = nil },
			"envFrom: got configMapRefs [], want dispatcher-config"},
		{"token in the config map", func(_ testing.TB, b *bundle) { b.configMap.Data["DISPATCHER_ADMIN_TOKENS"] = "s3cret" },
			"data.DISPATCHER_ADMIN_TOKENS: got a secret setting"},
		{"misspelt setting", func(_ testing.TB, b *bundle) { b.configMap.Data["DISPATCHER_MAX_BACTH"] = "10" },
			"ConfigMap dispatcher-config: DISPATCHER_MAX_BACTH: got a setting the service does not read"},
		{"misspelt token file variable", func(_ testing.TB, b *bundle) { containerOf(b).Env[0].Name = "DISPATCHER_ADMIN_TOKEN_FILE" },
			"env: DISPATCHER_ADMIN_TOKEN_FILE: got a setting the service does not read"},
		{"misspelt compose setting", func(_ testing.TB, b *bundle) {
			svc(b, "dispatcher").Environment["DISPATCHER_REDIS_MOD"] = "single"
		}, "dispatcher environment: DISPATCHER_REDIS_MOD: got a setting the service does not read"},
		{"password in the Redis URL", func(_ testing.TB, b *bundle) {
			b.configMap.Data["DISPATCHER_REDIS_URL"] = "redis://default:hunter2@redis:6379/0"
		}, "DISPATCHER_REDIS_URL: got a password in it"},
		{"token inlined", func(_ testing.TB, b *bundle) {
			v := "s3cret"
			c := containerOf(b)
			c.Env = append(c.Env, envVar{Name: "DISPATCHER_ADMIN_TOKENS", Value: &v})
		}, "env DISPATCHER_ADMIN_TOKENS: got a literal value, want valueFrom.secretKeyRef"},
		{"token file outside the Secret", func(_ testing.TB, b *bundle) {
			v := "/etc/dispatcher/admin-tokens"
			containerOf(b).Env[0].Value = &v
		}, `env DISPATCHER_ADMIN_TOKENS_FILE: got "/etc/dispatcher/admin-tokens", want a file of a mounted Secret`},
		{"token file without a path", func(_ testing.TB, b *bundle) { containerOf(b).Env[0].Value = nil },
			"env DISPATCHER_ADMIN_TOKENS_FILE: got no value"},
		{"token from nowhere", func(_ testing.TB, b *bundle) {
			c := containerOf(b)
			c.Env = append(c.Env, envVar{Name: "DISPATCHER_ADMIN_TOKENS"})
		}, "env DISPATCHER_ADMIN_TOKENS: got no secretKeyRef"},
		{"token from another Secret", func(_ testing.TB, b *bundle) {
			c := containerOf(b)
			c.Env = append(c.Env, envVar{Name: "DISPATCHER_CLIENT_TOKENS",
				ValueFrom: &envVarSource{SecretKeyRef: &keyRef{Name: "other", Key: "client-tokens"}}})
		}, `env DISPATCHER_CLIENT_TOKENS: got Secret "other", want "dispatcher-tokens"`},
		{"environment from another Secret", func(_ testing.TB, b *bundle) {
			c := containerOf(b)
			c.EnvFrom = append(c.EnvFrom, envFromSource{SecretRef: &nameRef{Name: "other"}})
		}, `envFrom: got Secret "other", want "dispatcher-tokens"`},
		{"client tokens missing", func(_ testing.TB, b *bundle) { containerOf(b).Env = containerOf(b).Env[:1] },
			"got no DISPATCHER_CLIENT_TOKENS(_FILE) from the Secret"},
		{"another Secret mounted", func(_ testing.TB, b *bundle) {
			b.deployment.Spec.Template.Spec.Volumes[0].Secret.SecretName = "tokens"
		}, `got Secret "tokens", want "dispatcher-tokens"`},
		{"a key the Secret lacks", func(_ testing.TB, b *bundle) {
			b.deployment.Spec.Template.Spec.Volumes[0].Secret.Items[0].Key = "admin"
		}, `got key "admin", want one of secret.example.yaml's`},
		{"real value in the example Secret", func(_ testing.TB, b *bundle) {
			b.secretExample.StringData["admin-tokens"] = "0123456789abcdef"
		}, `admin-tokens: got "0123456789abcdef", want a REPLACE-ME placeholder`},
		{"example Secret empty", func(_ testing.TB, b *bundle) { b.secretExample.StringData = nil },
			"secret.example.yaml: got no keys"},
		{"example Secret data not base64", func(_ testing.TB, b *bundle) {
			b.secretExample.Data = map[string]string{"admin-tokens": "!!"}
		}, "data.admin-tokens: got illegal base64"},
		{"PDB blocks every drain", func(_ testing.TB, b *bundle) {
			b.pdb.Spec.MaxUnavailable = nil
			b.pdb.Spec.MinAvailable = 3
		}, "minAvailable: got 3, want 1 to 2"},
		{"PDB with both budgets", func(_ testing.TB, b *bundle) { b.pdb.Spec.MinAvailable = 1 },
			"got both minAvailable and maxUnavailable"},
		{"PDB allowing no disruption", func(_ testing.TB, b *bundle) { b.pdb.Spec.MaxUnavailable = 0 },
			"maxUnavailable: got 0, want ≥ 1"},
		{"HPA max below min", func(_ testing.TB, b *bundle) { b.hpa.Spec.MaxReplicas = 2 },
			"maxReplicas: got 2, want ≥ minReplicas 3"},
		{"HPA without CPU", func(_ testing.TB, b *bundle) { b.hpa.Spec.Metrics = nil },
			"metrics: got no CPU utilization target"},
		{"HPA v1", func(_ testing.TB, b *bundle) { b.hpa.APIVersion = "autoscaling/v1" },
			"apiVersion: got autoscaling/v1, want autoscaling/v2"},
		{"Redis example without AOF", func(_ testing.TB, b *bundle) {
			replaceIn(b.redis.Spec.Template.Spec.Containers[0].Args, "--appendonly", "--save")
		}, "want --appendonly yes"},
		{"Redis example replicated", func(_ testing.TB, b *bundle) { b.redis.Spec.Replicas = ptr(2) },
			"StatefulSet redis: replicas: got 2, want 1"},
		{"Redis example without its claim", func(_ testing.TB, b *bundle) { b.redis.Spec.VolumeClaimTemplates = nil },
			"want /data on a volumeClaimTemplate"},

		// compose
		{"two compose replicas", func(_ testing.TB, b *bundle) { svc(b, "dispatcher").Deploy.Replicas = ptr(2) },
			"dispatcher replicas: got 2, want 3"},
		{"compose without AOF", func(_ testing.TB, b *bundle) {
			replaceIn(svc(b, "redis").Command, "--appendonly", "--save")
		}, "want --appendonly yes --appendfsync everysec"},
		{"Redis data on a bind mount", func(_ testing.TB, b *bundle) { svc(b, "redis").Volumes = []string{"./data:/data"} },
			"volumes: got [./data:/data], want a named volume on /data"},
		{"Redis without healthcheck", func(_ testing.TB, b *bundle) { svc(b, "redis").Healthcheck = nil },
			"redis: healthcheck: got none, want redis-cli ping"},
		{"token in compose", func(_ testing.TB, b *bundle) {
			svc(b, "dispatcher").Environment["DISPATCHER_CLIENT_TOKENS"] = "s3cret"
		}, "environment DISPATCHER_CLIENT_TOKENS: got a literal value"},
		{"no env file", func(_ testing.TB, b *bundle) { svc(b, "dispatcher").EnvFile = nil },
			"env_file: got [], want dispatcher.env"},
		{"started before Redis is healthy", func(_ testing.TB, b *bundle) {
			svc(b, "dispatcher").DependsOn["redis"] = dependency{Condition: "service_started"}
		}, `depends_on redis: got condition "service_started", want service_healthy`},
		{"replicas publishing a port", func(_ testing.TB, b *bundle) { svc(b, "dispatcher").Ports = []string{"8081:8080"} },
			"ports: got [8081:8080], want none"},
		{"a shell healthcheck on distroless", func(_ testing.TB, b *bundle) {
			svc(b, "dispatcher").Healthcheck = &healthcheck{Test: []string{"CMD-SHELL", "curl -f localhost:8080/healthz"}}
		}, "want a CMD the distroless image has"},
		{"built from the wrong context", func(_ testing.TB, b *bundle) { svc(b, "dispatcher").Build.Context = "." },
			"build: got &{Context:. Dockerfile:deploy/Dockerfile}, want context .."},
		{"wrong Redis URL", func(_ testing.TB, b *bundle) {
			svc(b, "dispatcher").Environment["DISPATCHER_REDIS_URL"] = "redis://localhost:6379/0"
		}, `DISPATCHER_REDIS_URL: got "redis://localhost:6379/0"`},
		{"nginx unpublished", func(_ testing.TB, b *bundle) { svc(b, "nginx").Ports = nil },
			"nginx: ports: got [], want 8080 published"},
		{"nginx without its configuration", func(_ testing.TB, b *bundle) { svc(b, "nginx").Volumes = nil },
			"nginx: volumes: got [], want ./nginx.conf mounted"},
		{"no nginx", func(_ testing.TB, b *bundle) { delete(b.compose.Services, "nginx") },
			"services: got no nginx"},
		{"no Redis", func(_ testing.TB, b *bundle) { delete(b.compose.Services, "redis") },
			"services: got no redis"},
		{"compose image latest", func(_ testing.TB, b *bundle) { svc(b, "nginx").Image = "nginx:latest" },
			`compose.yaml: nginx: image "nginx:latest": got tag "latest"`},
		{"env file not ignored", func(_ testing.TB, b *bundle) { b.gitignore = "/bin/\n" },
			".gitignore: got no deploy/dispatcher.env"},
		{"client tokens not in the env example", func(tb testing.TB, b *bundle) {
			replace(tb, &b.envExample, "DISPATCHER_CLIENT_TOKENS=", "# DISPATCHER_CLIENT_TOKENS=")
		}, "DISPATCHER_CLIENT_TOKENS: got none"},
		{"real token in the env example", func(tb testing.TB, b *bundle) {
			replace(tb, &b.envExample, "DISPATCHER_ADMIN_TOKENS=<REPLACE-ME-admin-token>", "DISPATCHER_ADMIN_TOKENS=abc")
		}, `DISPATCHER_ADMIN_TOKENS: got "abc", want a REPLACE-ME placeholder`},

		// Dockerfile
		{"root user", func(tb testing.TB, b *bundle) { replace(tb, &b.dockerfile, "USER 65532:65532", "USER root") },
			`final stage USER: got "root", want a non-root user`},
		{"no user", func(tb testing.TB, b *bundle) { replace(tb, &b.dockerfile, "USER 65532:65532", "") },
			`final stage USER: got "", want a non-root user`},
		{"cgo", func(tb testing.TB, b *bundle) { replace(tb, &b.dockerfile, "CGO_ENABLED=0", "CGO_ENABLED=1") },
			"got no CGO_ENABLED=0, want a static binary"},
		{"no -trimpath", func(tb testing.TB, b *bundle) { replace(tb, &b.dockerfile, "-trimpath ", "") },
			"got no -trimpath"},
		{"no go build", func(tb testing.TB, b *bundle) { replace(tb, &b.dockerfile, "go build", "go install") },
			"got no RUN go build in a build stage"},
		{"a full OS at run time", func(tb testing.TB, b *bundle) {
			replace(tb, &b.dockerfile, "FROM gcr.io/distroless/static-debian12:nonroot", "FROM debian:12")
		}, "final stage: got FROM debian:12, want distroless or scratch"},
		{"single stage", func(tb testing.TB, b *bundle) {
			replace(tb, &b.dockerfile, "FROM gcr.io/distroless/static-debian12:nonroot", "")
		}, "got 1 stages, want a build stage and a runtime stage"},
		{"builder unpinned", func(tb testing.TB, b *bundle) { replace(tb, &b.dockerfile, "golang:1.26 ", "golang ") },
			`Dockerfile: FROM image "golang": got tag ""`},
		{"port not exposed", func(tb testing.TB, b *bundle) { replace(tb, &b.dockerfile, "EXPOSE 8080", "") },
			`EXPOSE: got "", want 8080`},
		{"shell-form entrypoint", func(tb testing.TB, b *bundle) {
			replace(tb, &b.dockerfile, `ENTRYPOINT ["/dispatcher"]`, "ENTRYPOINT /dispatcher")
		}, `ENTRYPOINT: got "/dispatcher", want the binary in exec form`},
		{"shell-form health check", func(tb testing.TB, b *bundle) {
			replace(tb, &b.dockerfile, `CMD ["/dispatcher", "probe", "-path", "/readyz"]`, "CMD /dispatcher probe -path /readyz")
		}, `CMD /dispatcher probe -path /readyz", want CMD ["/dispatcher", "probe", …] (exec form`},
		{"no health check", func(tb testing.TB, b *bundle) {
			replace(tb, &b.dockerfile, "HEALTHCHECK ", "# HEALTHCHECK ")
		}, `HEALTHCHECK: got ""`},
		{"version label hard-coded", func(tb testing.TB, b *bundle) {
			replace(tb, &b.dockerfile, `version="${VERSION}"`, `version="1.0"`)
		}, `org.opencontainers.image.version: got "1.0"`},
		{"version not a build arg", func(tb testing.TB, b *bundle) { replace(tb, &b.dockerfile, "ARG VERSION=dev", "") },
			"want ${VERSION} from ARG VERSION"},
		{"FROM without an image", func(tb testing.TB, b *bundle) {
			replace(tb, &b.dockerfile, "FROM gcr.io/distroless/static-debian12:nonroot", "FROM --platform=linux/amd64")
		}, "FROM: got no image"},
		{"revision label missing", func(tb testing.TB, b *bundle) {
			replace(tb, &b.dockerfile, `org.opencontainers.image.revision="${REVISION}"`, "")
		}, "LABEL org.opencontainers.image.revision: got none"},

		// nginx
		{"POSTs retried", func(tb testing.TB, b *bundle) {
			replace(tb, &b.nginx, "proxy_next_upstream error timeout;", "proxy_next_upstream error timeout non_idempotent;")
		}, "want no non_idempotent"},
		{"request id dropped", func(tb testing.TB, b *bundle) {
			replace(tb, &b.nginx, "proxy_set_header X-Request-Id $req_id;", "")
		}, "got no proxy_set_header X-Request-Id"},
		{"another port", func(tb testing.TB, b *bundle) { replace(tb, &b.nginx, "listen 8080;", "listen 80;") },
			"got no listen 8080"},
		{"proxied elsewhere", func(tb testing.TB, b *bundle) {
			replace(tb, &b.nginx, "proxy_pass http://dispatcher;", "proxy_pass http://app;")
		}, "got no proxy_pass http://dispatcher"},
		{"retries left implicit", func(tb testing.TB, b *bundle) {
			replace(tb, &b.nginx, "proxy_next_upstream error timeout;", "")
		}, "proxy_next_upstream: got none"},
		{"upstream elsewhere", func(tb testing.TB, b *bundle) {
			replace(tb, &b.nginx, "server dispatcher:8080", "server app:8080")
		}, "got no upstream dispatcher with server dispatcher:8080"},
	}
	broken := map[string]bool{} // the checks some case made fail
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := load(t)
			c.mutate(t, b)
			var got []string
			found := false
			for _, ch := range checks {
				for _, p := range ch.run(b) {
					got = append(got, p)
					if strings.Contains(p, c.want) {
						found, broken[ch.name] = true, true
					}
				}
			}
			if !found {
				t.Errorf("got problems %q, want one containing %q", got, c.want)
			}
		})
	}
	for _, ch := range checks {
		if !broken[ch.name] {
			t.Errorf("check %q: got no case that makes it fail, want one", ch.name)
		}
	}
}

// containerOf returns the Deployment's first container, to change it.
func containerOf(b *bundle) *container {
	return &b.deployment.Spec.Template.Spec.Containers[0]
}

// svc returns a compose service, to change it.
func svc(b *bundle, name string) *composeService {
	return b.compose.Services[name]
}

func without(list []string, drop string) []string {
	var out []string
	for _, s := range list {
		if s != drop {
			out = append(out, s)
		}
	}
	return out
}

// replaceIn replaces old with new in list, in place.
func replaceIn(list []string, old, new string) {
	for i, s := range list {
		if s == old {
			list[i] = new
		}
	}
}

// replace changes text, failing the test when old is not in it (the case
// would then break nothing).
func replace(tb testing.TB, text *string, old, new string) {
	tb.Helper()
	if !strings.Contains(*text, old) {
		tb.Fatalf("got no %q in the text, want it to change", old)
	}
	*text = strings.ReplaceAll(*text, old, new)
}
