package deploy_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	stage int    // the index of the FROM it belongs to; -1 before the first
	cmd   string // upper case
	args  string
}

// parseDockerfile splits a Dockerfile into instructions. Comments (parser
// directives included) and empty lines are left out, as Docker does, also
// within continuations. Heredocs are not handled: the Dockerfile has none.
func parseDockerfile(text string) []instruction {
	var ins []instruction
	stage := -1
	var cur strings.Builder
	for line := range strings.SplitSeq(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if rest, ok := strings.CutSuffix(line, `\`); ok {
			cur.WriteString(rest + " ")
			continue
		}
		cur.WriteString(line)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		cur.Reset()
		cmd = strings.ToUpper(cmd)
		if cmd == "FROM" {
			stage++
		}
		ins = append(ins, instruction{stage: stage, cmd: cmd, args: strings.TrimSpace(args)})
	}
	return ins
}

var ociLabel = regexp.MustCompile(`(org\.opencontainers\.image\.[a-z.]+)=("[^"]*"|\S+)`)

func checkDockerfile(b *bundle) []string {
	var ps []string
	ins := parseDockerfile(b.dockerfile)
	var images, aliases []string
	for _, in := range ins {
		if in.cmd != "FROM" {
			continue
		}
		var fields []string
		for _, f := range strings.Fields(in.args) {
			if !strings.HasPrefix(f, "--") {
				fields = append(fields, f)
			}
		}
		if len(fields) == 0 {
			ps = append(ps, "Dockerfile: FROM: got no image, want one")
			continue
		}
		image := fields[0]
		images = append(images, image)
		// scratch and earlier stages have no tag to pin.
		if image != "scratch" && !slices.Contains(aliases, image) {
			if p := unpinned(image); p != "" {
				ps = append(ps, "Dockerfile: FROM "+p)
			}
		}
		if len(fields) == 3 && strings.EqualFold(fields[1], "AS") {
			aliases = append(aliases, fields[2])
		}
	}
	if len(images) < 2 {
		return append(ps, fmt.Sprintf("Dockerfile: got %d stages, want a build stage and a runtime stage", len(images)))
	}
	final := len(images) - 1
	if img := images[final]; img != "scratch" && !strings.HasPrefix(img, "gcr.io/distroless/") {
		ps = append(ps, fmt.Sprintf("Dockerfile: final stage: got FROM %s, want distroless or scratch", img))
	}

	var user, expose, entrypoint, labels, healthcheck string
	var args, builds []string
	for _, in := range ins {
		if in.stage != final {
			if in.cmd == "RUN" && strings.Contains(in.args, "go build") {
				builds = append(builds, in.args)
			}
			continue
		}
		switch in.cmd {
		case "USER":
			user = in.args
		case "EXPOSE":
			expose += " " + in.args
		case "ENTRYPOINT":
			entrypoint = in.args
		case "HEALTHCHECK":
			healthcheck = in.args
		case "LABEL":
			labels += " " + in.args
		case "ARG":
			name, _, _ := strings.Cut(in.args, "=")
			args = append(args, name)
		}
	}
	if name, _, _ := strings.Cut(user, ":"); name == "" || name == "root" || name == "0" {
		ps = append(ps, fmt.Sprintf("Dockerfile: final stage USER: got %q, want a non-root user", user))
	}
	if len(builds) == 0 {
		ps = append(ps, "Dockerfile: got no RUN go build in a build stage, want one")
	}
	for _, run := range builds {
		if !regexp.MustCompile(`\bCGO_ENABLED=0\b`).MatchString(run) {
			ps = append(ps, fmt.Sprintf("Dockerfile: RUN %q: got no CGO_ENABLED=0, want a static binary", run))
		}
		if !strings.Contains(run, "-trimpath") {
			ps = append(ps, fmt.Sprintf("Dockerfile: RUN %q: got no -trimpath, want it", run))
		}
	}
	if !slices.Contains(strings.Fields(expose), "8080") {
		ps = append(ps, fmt.Sprintf("Dockerfile: final stage EXPOSE: got %q, want 8080", strings.TrimSpace(expose)))
	}
	if !strings.HasPrefix(entrypoint, "[") {
		ps = append(ps, fmt.Sprintf("Dockerfile: final stage ENTRYPOINT: got %q, want the binary in exec form", entrypoint))
	}
	// compose.yaml sets no health check for the replicas: it relies on this
	// one, which must run without a shell.
	if _, cmd, _ := strings.Cut(healthcheck, "CMD "); !strings.HasPrefix(strings.TrimSpace(cmd), `["/dispatcher", "probe"`) {
		ps = append(ps, fmt.Sprintf("Dockerfile: final stage HEALTHCHECK: got %q, want CMD [\"/dispatcher\", \"probe\", …] (exec form: no shell in the image)", healthcheck))
	}
	found := map[string]string{}
	for _, m := range ociLabel.FindAllStringSubmatch(labels, -1) {
		found[m[1]] = strings.Trim(m[2], `"`)
	}
	for _, key := range []string{"title", "source", "version", "revision"} {
		if _, ok := found["org.opencontainers.image."+key]; !ok {
			ps = append(ps, fmt.Sprintf("Dockerfile: LABEL org.opencontainers.image.%s: got none, want it", key))
		}
	}
	for key, arg := range map[string]string{"version": "VERSION", "revision": "REVISION"} {
		v, ok := found["org.opencontainers.image."+key]
		if ok && (!slices.Contains(args, arg) || v != "${"+arg+"}" && v != "$"+arg) {
			ps = append(ps, fmt.Sprintf("Dockerfile: LABEL org.opencontainers.image.%s: got %q with ARGs %v, want ${%s} from ARG %s", key, v, args, arg, arg))
		}
	}
	return ps
}

func checkNginx(b *bundle) []string {
	var lines []string
	for line := range strings.SplitSeq(b.nginx, "\n") {
		line, _, _ = strings.Cut(line, "#")
		lines = append(lines, line)
	}
	conf := strings.Join(lines, "\n")
	var ps []string
	for _, want := range []struct{ re, msg string }{
		{`\blisten\s+8080\s*;`, "listen 8080"},
		{`upstream\s+dispatcher\s*\{[^}]*\bserver\s+dispatcher:8080\b`, "upstream dispatcher with server dispatcher:8080 (the compose service)"},
		{`\bproxy_pass\s+http://dispatcher\s*;`, "proxy_pass http://dispatcher"},
		{`(?i)\bproxy_set_header\s+X-Request-Id\s+\S`, "proxy_set_header X-Request-Id (the request id passed on)"},
	} {
		if !regexp.MustCompile(want.re).MatchString(conf) {
			ps = append(ps, fmt.Sprintf("nginx.conf: got no %s, want it", want.msg))
		}
	}
	next := regexp.MustCompile(`\bproxy_next_upstream\s+([^;]*);`).FindAllStringSubmatch(conf, -1)
	if len(next) == 0 {
		ps = append(ps, "nginx.conf: proxy_next_upstream: got none, want it stated")
	}
	for _, m := range next {
		if strings.Contains(m[1], "non_idempotent") {
			ps = append(ps, fmt.Sprintf("nginx.conf: proxy_next_upstream: got %q, want no non_idempotent (a POST may have been applied before the replica failed)", m[1]))
		}
	}
	return ps
}
