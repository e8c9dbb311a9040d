package deploy_test

import (
	"encoding/base64"
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// secretWords mark the settings whose values are secrets.
var secretWords = []string{"TOKEN", "PASSWORD", "SECRET"}

func isSecretSetting(name string) bool {
	upper := strings.ToUpper(name)
	for _, w := range secretWords {
		if strings.Contains(upper, w) {
			return true
		}
	}
	return false
}

// checkSecurity checks what kube-score (make vet) does not: the image's uid,
// runAsNonRoot, no privilege escalation, capabilities dropped. kube-score
// checks the read-only root file system, privileged, seccomp and a uid and
// gid above 10000.
func checkSecurity(b *bundle) []string {
	var ps []string
	pod := b.deployment.Spec.Template.Spec.SecurityContext
	for _, c := range b.deployment.Spec.Template.Spec.Containers {
		sc := c.SecurityContext
		if v := firstSet(sc.RunAsNonRoot, pod.RunAsNonRoot); v == nil || !*v {
			ps = append(ps, fmt.Sprintf("container %s: runAsNonRoot: got %s, want true", c.Name, boolString(v)))
		}
		if v := firstSet(sc.RunAsUser, pod.RunAsUser); v == nil || *v != 65532 {
			ps = append(ps, fmt.Sprintf("container %s: runAsUser: got %s, want 65532", c.Name, intString(v)))
		}
		if v := sc.AllowPrivilegeEscalation; v == nil || *v {
			ps = append(ps, fmt.Sprintf("container %s: allowPrivilegeEscalation: got %s, want false", c.Name, boolString(v)))
		}
		if !slices.Contains(sc.Capabilities.Drop, "ALL") {
			ps = append(ps, fmt.Sprintf("container %s: capabilities.drop: got %v, want [ALL]", c.Name, sc.Capabilities.Drop))
		}
		if len(sc.Capabilities.Add) > 0 {
			ps = append(ps, fmt.Sprintf("container %s: capabilities.add: got %v, want none", c.Name, sc.Capabilities.Add))
		}
	}
	return ps
}

func checkConfig(b *bundle) []string {
	var ps []string
	cm := b.configMap
	for _, c := range b.deployment.Spec.Template.Spec.Containers {
		var refs []string
		for _, ef := range c.EnvFrom {
			if ef.ConfigMapRef != nil {
				refs = append(refs, ef.ConfigMapRef.Name)
			}
		}
		if !slices.Contains(refs, cm.Metadata.Name) {
			ps = append(ps, fmt.Sprintf("container %s: envFrom: got configMapRefs %v, want %s", c.Name, refs, cm.Metadata.Name))
		}
	}
	for k, v := range cm.Data {
		switch {
		case isSecretSetting(k):
			ps = append(ps, fmt.Sprintf("ConfigMap %s: data.%s: got a secret setting, want it from a Secret", cm.Metadata.Name, k))
		case k == "DISPATCHER_REDIS_URL":
			u, err := url.Parse(v)
			if err != nil {
				ps = append(ps, fmt.Sprintf("ConfigMap %s: DISPATCHER_REDIS_URL: got %v, want a URL", cm.Metadata.Name, err))
			} else if _, hasPassword := u.User.Password(); hasPassword {
				ps = append(ps, fmt.Sprintf("ConfigMap %s: DISPATCHER_REDIS_URL: got a password in it, want the URL in a Secret", cm.Metadata.Name))
			}
		}
	}
	return ps
}

func checkTokens(b *bundle) []string {
	var ps []string
	spec := b.deployment.Spec.Template.Spec
	name := b.secretExample.Metadata.Name
	keys := secretKeys(b.secretExample)
	for _, c := range spec.Containers {
		// secretFiles maps the files of the mounted Secret volumes to the
		// keys they hold.
		secretFiles := map[string]string{}
		for _, m := range c.VolumeMounts {
			for _, v := range spec.Volumes {
				if v.Name != m.Name || v.Secret == nil {
					continue
				}
				if v.Secret.SecretName != name {
					ps = append(ps, fmt.Sprintf("volume %s: got Secret %q, want %q (secret.example.yaml)", v.Name, v.Secret.SecretName, name))
				}
				if len(v.Secret.Items) == 0 {
					for _, k := range keys {
						secretFiles[filepath.Join(m.MountPath, k)] = k
					}
				}
				for _, it := range v.Secret.Items {
					secretFiles[filepath.Join(m.MountPath, it.Path)] = it.Key
				}
			}
		}
		for _, ef := range c.EnvFrom {
			if ef.SecretRef != nil && ef.SecretRef.Name != name {
				ps = append(ps, fmt.Sprintf("container %s: envFrom: got Secret %q, want %q (secret.example.yaml)", c.Name, ef.SecretRef.Name, name))
			}
		}
		configured := map[string]bool{}
		for _, e := range c.Env {
			if !isSecretSetting(e.Name) {
				continue
			}
			var key string
			if strings.HasSuffix(e.Name, "_FILE") {
				if e.Value == nil {
					ps = append(ps, fmt.Sprintf("container %s: env %s: got no value, want a file of a mounted Secret", c.Name, e.Name))
					continue
				}
				k, ok := secretFiles[*e.Value]
				if !ok {
					ps = append(ps, fmt.Sprintf("container %s: env %s: got %q, want a file of a mounted Secret %v", c.Name, e.Name, *e.Value, mapKeys(secretFiles)))
					continue
				}
				key = k
			} else {
				if e.Value != nil {
					ps = append(ps, fmt.Sprintf("container %s: env %s: got a literal value, want valueFrom.secretKeyRef", c.Name, e.Name))
					continue
				}
				if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
					ps = append(ps, fmt.Sprintf("container %s: env %s: got no secretKeyRef, want valueFrom.secretKeyRef", c.Name, e.Name))
					continue
				}
				ref := e.ValueFrom.SecretKeyRef
				if ref.Name != name {
					ps = append(ps, fmt.Sprintf("container %s: env %s: got Secret %q, want %q (secret.example.yaml)", c.Name, e.Name, ref.Name, name))
				}
				key = ref.Key
			}
			if !slices.Contains(keys, key) {
				ps = append(ps, fmt.Sprintf("container %s: env %s: got key %q, want one of secret.example.yaml's %v", c.Name, e.Name, key, keys))
			}
			configured[strings.TrimSuffix(e.Name, "_FILE")] = true
		}
		for _, v := range []string{"DISPATCHER_ADMIN_TOKENS", "DISPATCHER_CLIENT_TOKENS"} {
			if !configured[v] {
				ps = append(ps, fmt.Sprintf("container %s: got no %s(_FILE) from the Secret, want it (without tokens the service runs open)", c.Name, v))
			}
		}
	}
	return ps
}

func secretKeys(s secret) []string {
	keys := append(mapKeys(s.Data), mapKeys(s.StringData)...)
	slices.Sort(keys)
	return keys
}

func mapKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func checkSecretExample(b *bundle) []string {
	var ps []string
	s := b.secretExample
	values := map[string]string{}
	for k, v := range s.StringData {
		values[k] = v
	}
	for k, v := range s.Data {
		raw, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			ps = append(ps, fmt.Sprintf("secret.example.yaml: data.%s: got %v, want base64", k, err))
		}
		values[k] = string(raw)
	}
	if len(values) == 0 {
		ps = append(ps, "secret.example.yaml: got no keys, want the tokens' keys with placeholders")
	}
	for k, v := range values {
		if !strings.Contains(v, "REPLACE-ME") {
			ps = append(ps, fmt.Sprintf("secret.example.yaml: %s: got %q, want a REPLACE-ME placeholder", k, v))
		}
	}
	return ps
}

// checkSettings checks that every DISPATCHER_* variable the files set is
// one the service reads, so that a misspelt one does not silently do
// nothing: its name (with or without the prefix) is a string literal in
// cmd/dispatcher's sources.
func checkSettings(b *bundle) []string {
	var ps []string
	known := func(where, name string) {
		short := strings.TrimPrefix(name, "DISPATCHER_")
		if short == name {
			return
		}
		if !strings.Contains(b.serviceSource, `"`+short+`"`) && !strings.Contains(b.serviceSource, `"`+name+`"`) {
			ps = append(ps, fmt.Sprintf("%s: %s: got a setting the service does not read (not in cmd/dispatcher), want one it reads", where, name))
		}
	}
	for _, k := range mapKeys(b.configMap.Data) {
		known("ConfigMap "+b.configMap.Metadata.Name, k)
	}
	for _, c := range b.deployment.Spec.Template.Spec.Containers {
		for _, e := range c.Env {
			known("container "+c.Name+" env", e.Name)
		}
	}
	for _, name := range b.compose.dispatchers() {
		for _, k := range mapKeys(b.compose.Services[name].Environment) {
			known("compose.yaml: "+name+" environment", k)
		}
	}
	for _, m := range regexp.MustCompile(`(?m)^(DISPATCHER_\w+)=`).FindAllStringSubmatch(b.envExample, -1) {
		known("dispatcher.env.example", m[1])
	}
	return ps
}
