package deploy_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// bundle is every deployment file the checks read, decoded afresh by load so
// that a test may change its copy (TestChecksCatchBreakage does).
type bundle struct {
	docs          []document // every YAML document under k8s/
	kustomization kustomization
	deployment    deployment
	service       service
	pdb           pdb
	hpa           hpa
	configMap     configMap
	secretExample secret
	redis         statefulSet
	compose       compose
	envExample    string // dispatcher.env.example
	serviceSource string // cmd/dispatcher's Go files but the tests, joined
	gitignore     string // the repository's .gitignore
	dockerfile    string
	nginx         string
}

// document is one YAML document of a manifest file: its header, and the
// node to decode the rest from.
type document struct {
	file       string
	node       *yaml.Node
	APIVersion string `yaml:"apiVersion"`
	Kind       string `yaml:"kind"`
	Metadata   meta   `yaml:"metadata"`
}

type meta struct {
	Name   string            `yaml:"name"`
	Labels map[string]string `yaml:"labels"`
}

type labelSelector struct {
	MatchLabels map[string]string `yaml:"matchLabels"`
}

type kustomization struct {
	Resources []string `yaml:"resources"`
	Images    []struct {
		Name   string `yaml:"name"`
		NewTag string `yaml:"newTag"`
		Digest string `yaml:"digest"`
	} `yaml:"images"`
}

type deployment struct {
	Metadata meta `yaml:"metadata"`
	Spec     struct {
		Replicas *int          `yaml:"replicas"`
		Selector labelSelector `yaml:"selector"`
		Template podTemplate   `yaml:"template"`
	} `yaml:"spec"`
}

type statefulSet struct {
	Metadata meta `yaml:"metadata"`
	Spec     struct {
		Replicas             *int        `yaml:"replicas"`
		Template             podTemplate `yaml:"template"`
		VolumeClaimTemplates []struct {
			Metadata meta `yaml:"metadata"`
		} `yaml:"volumeClaimTemplates"`
	} `yaml:"spec"`
}

type podTemplate struct {
	Metadata meta    `yaml:"metadata"`
	Spec     podSpec `yaml:"spec"`
}

type podSpec struct {
	TerminationGracePeriodSeconds *int            `yaml:"terminationGracePeriodSeconds"`
	SecurityContext               securityContext `yaml:"securityContext"`
	TopologySpreadConstraints     []struct {
		TopologyKey   string        `yaml:"topologyKey"`
		LabelSelector labelSelector `yaml:"labelSelector"`
	} `yaml:"topologySpreadConstraints"`
	InitContainers []container `yaml:"initContainers"`
	Containers     []container `yaml:"containers"`
	Volumes        []struct {
		Name   string `yaml:"name"`
		Secret *struct {
			SecretName string `yaml:"secretName"`
			Items      []struct {
				Key  string `yaml:"key"`
				Path string `yaml:"path"`
			} `yaml:"items"`
		} `yaml:"secret"`
	} `yaml:"volumes"`
}

// securityContext serves for the pod's and the container's: the pod's has
// a subset of the fields.
type securityContext struct {
	RunAsNonRoot             *bool  `yaml:"runAsNonRoot"`
	RunAsUser                *int64 `yaml:"runAsUser"`
	ReadOnlyRootFilesystem   *bool  `yaml:"readOnlyRootFilesystem"`
	AllowPrivilegeEscalation *bool  `yaml:"allowPrivilegeEscalation"`
	Privileged               *bool  `yaml:"privileged"`
	Capabilities             struct {
		Add  []string `yaml:"add"`
		Drop []string `yaml:"drop"`
	} `yaml:"capabilities"`
	SeccompProfile struct {
		Type string `yaml:"type"`
	} `yaml:"seccompProfile"`
}

type container struct {
	Name    string   `yaml:"name"`
	Image   string   `yaml:"image"`
	Command []string `yaml:"command"`
	Args    []string `yaml:"args"`
	Ports   []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	Env          []envVar        `yaml:"env"`
	EnvFrom      []envFromSource `yaml:"envFrom"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
	Resources struct {
		Requests map[string]any `yaml:"requests"`
		Limits   map[string]any `yaml:"limits"`
	} `yaml:"resources"`
	StartupProbe   *probe `yaml:"startupProbe"`
	LivenessProbe  *probe `yaml:"livenessProbe"`
	ReadinessProbe *probe `yaml:"readinessProbe"`
	Lifecycle      struct {
		PreStop *struct {
			Sleep *struct {
				Seconds int `yaml:"seconds"`
			} `yaml:"sleep"`
			Exec any `yaml:"exec"`
		} `yaml:"preStop"`
	} `yaml:"lifecycle"`
	SecurityContext securityContext `yaml:"securityContext"`
}

type probe struct {
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port any    `yaml:"port"` // a port's name or number
	} `yaml:"httpGet"`
}

type envFromSource struct {
	ConfigMapRef *nameRef `yaml:"configMapRef"`
	SecretRef    *nameRef `yaml:"secretRef"`
}

type nameRef struct {
	Name string `yaml:"name"`
}

type envVar struct {
	Name      string        `yaml:"name"`
	Value     *string       `yaml:"value"` // set, even to "", is a literal
	ValueFrom *envVarSource `yaml:"valueFrom"`
}

type envVarSource struct {
	SecretKeyRef *keyRef `yaml:"secretKeyRef"`
}

type keyRef struct {
	Name string `yaml:"name"`
	Key  string `yaml:"key"`
}

type service struct {
	Metadata meta `yaml:"metadata"`
	Spec     struct {
		Selector map[string]string `yaml:"selector"`
		Ports    []struct {
			Name       string `yaml:"name"`
			Port       int    `yaml:"port"`
			TargetPort any    `yaml:"targetPort"`
		} `yaml:"ports"`
	} `yaml:"spec"`
}

type pdb struct {
	Metadata meta `yaml:"metadata"`
	Spec     struct {
		MinAvailable   any           `yaml:"minAvailable"`
		MaxUnavailable any           `yaml:"maxUnavailable"`
		Selector       labelSelector `yaml:"selector"`
	} `yaml:"spec"`
}

type hpa struct {
	APIVersion string `yaml:"apiVersion"`
	Metadata   meta   `yaml:"metadata"`
	Spec       struct {
		ScaleTargetRef struct {
			APIVersion string `yaml:"apiVersion"`
			Kind       string `yaml:"kind"`
			Name       string `yaml:"name"`
		} `yaml:"scaleTargetRef"`
		MinReplicas *int `yaml:"minReplicas"`
		MaxReplicas int  `yaml:"maxReplicas"`
		Metrics     []struct {
			Type     string `yaml:"type"`
			Resource *struct {
				Name   string `yaml:"name"`
				Target struct {
					Type               string `yaml:"type"`
					AverageUtilization int    `yaml:"averageUtilization"`
				} `yaml:"target"`
			} `yaml:"resource"`
		} `yaml:"metrics"`
	} `yaml:"spec"`
}

type configMap struct {
	Metadata meta              `yaml:"metadata"`
	Data     map[string]string `yaml:"data"`
}

type secret struct {
	Metadata   meta              `yaml:"metadata"`
	Data       map[string]string `yaml:"data"`
	StringData map[string]string `yaml:"stringData"`
}

// load reads and decodes every deployment file; it stops the test when one
// does not parse or a manifest the checks need is missing.
func load(tb testing.TB) *bundle {
	tb.Helper()
	b := &bundle{}
	files, err := filepath.Glob(filepath.Join("k8s", "*.y*ml"))
	if err != nil {
		tb.Fatal(err)
	}
	if len(files) == 0 {
		tb.Fatal("k8s/: got no YAML files, want the manifests")
	}
	for _, f := range files {
		docs, err := decodeFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		b.docs = append(b.docs, docs...)
	}
	decodeOne(tb, b.docs, "kustomization.yaml", "Kustomization", &b.kustomization)
	decodeOne(tb, b.docs, "deployment.yaml", "Deployment", &b.deployment)
	decodeOne(tb, b.docs, "service.yaml", "Service", &b.service)
	decodeOne(tb, b.docs, "pdb.yaml", "PodDisruptionBudget", &b.pdb)
	decodeOne(tb, b.docs, "hpa.yaml", "HorizontalPodAutoscaler", &b.hpa)
	decodeOne(tb, b.docs, "configmap.yaml", "ConfigMap", &b.configMap)
	decodeOne(tb, b.docs, "secret.example.yaml", "Secret", &b.secretExample)
	decodeOne(tb, b.docs, "redis-statefulset.example.yaml", "StatefulSet", &b.redis)

	composeDocs, err := decodeFile("compose.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	if len(composeDocs) != 1 {
		tb.Fatalf("compose.yaml: got %d documents, want 1", len(composeDocs))
	}
	if err := composeDocs[0].node.Decode(&b.compose); err != nil {
		tb.Fatalf("compose.yaml: %v", err)
	}
	b.envExample = readText(tb, "dispatcher.env.example")
	b.gitignore = readText(tb, filepath.Join("..", ".gitignore"))
	sources, err := filepath.Glob(filepath.Join("..", "cmd", "dispatcher", "*.go"))
	if err != nil || len(sources) == 0 {
		tb.Fatalf("../cmd/dispatcher: got %d Go files (%v), want the service's sources", len(sources), err)
	}
	for _, f := range sources {
		if !strings.HasSuffix(f, "_test.go") {
			b.serviceSource += readText(tb, f)
		}
	}
	b.dockerfile = readText(tb, "Dockerfile")
	b.nginx = readText(tb, "nginx.conf")
	return b
}

// decodeFile returns the documents of one YAML file, empty ones left out.
func decodeFile(path string) ([]document, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []document
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(n.Content) == 0 || n.Content[0].Kind == yaml.ScalarNode && n.Content[0].Tag == "!!null" {
			continue
		}
		d := document{file: filepath.Base(path), node: &n}
		if err := n.Decode(&d); err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, len(docs)+1, err)
		}
		docs = append(docs, d)
	}
}

// decodeOne decodes into v the one document of the kind in file.
func decodeOne(tb testing.TB, docs []document, file, kind string, v any) {
	tb.Helper()
	var found []document
	for _, d := range docs {
		if d.file == file && d.Kind == kind {
			found = append(found, d)
		}
	}
	if len(found) != 1 {
		tb.Fatalf("k8s/%s: got %d %s documents, want 1", file, len(found), kind)
	}
	if err := found[0].node.Decode(v); err != nil {
		tb.Fatalf("k8s/%s: %s: %v", file, kind, err)
	}
}

func readText(tb testing.TB, path string) string {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	return string(data)
}

// imageRef splits an image reference into its tag and digest.
func imageRef(image string) (tag, digest string) {
	image, digest, _ = strings.Cut(image, "@")
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		tag = image[i+1:]
	}
	return tag, digest
}

// unpinned describes what is wrong with image's reference, or returns "".
func unpinned(image string) string {
	tag, digest := imageRef(image)
	if digest != "" || tag != "" && tag != "latest" {
		return ""
	}
	return fmt.Sprintf("image %q: got tag %q, want a version tag or a digest", image, tag)
}

// selects reports whether a non-empty selector matches labels.
func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if w, ok := labels[k]; !ok || w != v {
			return false
		}
	}
	return true
}
