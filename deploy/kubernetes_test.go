package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// The Kubernetes objects of deploy/kubernetes, as far as this test reads
// them. Documents are decoded strictly (yaml KnownFields): a field this
// model does not know fails the test, so a misspelt field (readinessprobe,
// runAsNonroot), which the API server would drop or refuse, is caught here
// too. A field the manifests start using is added to the model by its API
// name. No schema of Kubernetes itself is checked (no cluster, no network
// here); `make lint-deploy` runs kubectl kustomize where kubectl is.

type objectMeta struct {
	Name        string            `yaml:"name"`
	Namespace   string            `yaml:"namespace"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

type labelSelector struct {
	MatchLabels map[string]string `yaml:"matchLabels"`
}

// intOrString is a field that takes a number or a name (a port, a budget).
type intOrString struct{ value string }

func (v *intOrString) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a number or a string", n.Line)
	}
	v.value = n.Value
	return nil
}

type deployment struct {
	APIVersion string     `yaml:"apiVersion"`
	Kind       string     `yaml:"kind"`
	Metadata   objectMeta `yaml:"metadata"`
	Spec       struct {
		Replicas             *int          `yaml:"replicas"`
		RevisionHistoryLimit *int          `yaml:"revisionHistoryLimit"`
		Selector             labelSelector `yaml:"selector"`
		Strategy             struct {
			Type          string `yaml:"type"`
			RollingUpdate *struct {
				MaxSurge       intOrString `yaml:"maxSurge"`
				MaxUnavailable intOrString `yaml:"maxUnavailable"`
			} `yaml:"rollingUpdate"`
		} `yaml:"strategy"`
		Template struct {
			Metadata objectMeta `yaml:"metadata"`
			Spec     podSpec    `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type podSpec struct {
	AutomountServiceAccountToken  *bool `yaml:"automountServiceAccountToken"`
	EnableServiceLinks            *bool `yaml:"enableServiceLinks"`
	TerminationGracePeriodSeconds *int  `yaml:"terminationGracePeriodSeconds"`
	SecurityContext               *struct {
		RunAsNonRoot   *bool `yaml:"runAsNonRoot"`
		RunAsUser      *int  `yaml:"runAsUser"`
		RunAsGroup     *int  `yaml:"runAsGroup"`
		FSGroup        *int  `yaml:"fsGroup"`
		SeccompProfile *struct {
			Type string `yaml:"type"`
		} `yaml:"seccompProfile"`
	} `yaml:"securityContext"`
	Affinity *struct {
		PodAntiAffinity *struct {
			Preferred []struct {
				Weight          int             `yaml:"weight"`
				PodAffinityTerm podAffinityTerm `yaml:"podAffinityTerm"`
			} `yaml:"preferredDuringSchedulingIgnoredDuringExecution"`
			Required []podAffinityTerm `yaml:"requiredDuringSchedulingIgnoredDuringExecution"`
		} `yaml:"podAntiAffinity"`
	} `yaml:"affinity"`
	TopologySpreadConstraints []struct {
		MaxSkew           int           `yaml:"maxSkew"`
		TopologyKey       string        `yaml:"topologyKey"`
		WhenUnsatisfiable string        `yaml:"whenUnsatisfiable"`
		LabelSelector     labelSelector `yaml:"labelSelector"`
	} `yaml:"topologySpreadConstraints"`
	Containers []container `yaml:"containers"`
	Volumes    []struct {
		Name   string `yaml:"name"`
		Secret *struct {
			SecretName  string `yaml:"secretName"`
			DefaultMode *int   `yaml:"defaultMode"`
			Items       []struct {
				Key  string `yaml:"key"`
				Path string `yaml:"path"`
			} `yaml:"items"`
		} `yaml:"secret"`
	} `yaml:"volumes"`
}

type podAffinityTerm struct {
	TopologyKey   string        `yaml:"topologyKey"`
	LabelSelector labelSelector `yaml:"labelSelector"`
}

type container struct {
	Name            string   `yaml:"name"`
	Image           string   `yaml:"image"`
	ImagePullPolicy string   `yaml:"imagePullPolicy"`
	Command         []string `yaml:"command"`
	Args            []string `yaml:"args"`
	Ports           []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
		Protocol      string `yaml:"protocol"`
	} `yaml:"ports"`
	Env []struct {
		Name      string `yaml:"name"`
		Value     string `yaml:"value"`
		ValueFrom *struct {
			SecretKeyRef *struct {
				Name string `yaml:"name"`
				Key  string `yaml:"key"`
			} `yaml:"secretKeyRef"`
			FieldRef *struct {
				FieldPath string `yaml:"fieldPath"`
			} `yaml:"fieldRef"`
			ResourceFieldRef *struct {
				Resource string `yaml:"resource"`
			} `yaml:"resourceFieldRef"`
		} `yaml:"valueFrom"`
	} `yaml:"env"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		ReadOnly  bool   `yaml:"readOnly"`
	} `yaml:"volumeMounts"`
	StartupProbe   *probe `yaml:"startupProbe"`
	LivenessProbe  *probe `yaml:"livenessProbe"`
	ReadinessProbe *probe `yaml:"readinessProbe"`
	Lifecycle      *struct {
		PreStop *struct {
			Exec *struct {
				Command []string `yaml:"command"`
			} `yaml:"exec"`
		} `yaml:"preStop"`
	} `yaml:"lifecycle"`
	Resources struct {
		Requests map[string]string `yaml:"requests"`
		Limits   map[string]string `yaml:"limits"`
	} `yaml:"resources"`
	SecurityContext *struct {
		AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
		ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
		RunAsNonRoot             *bool `yaml:"runAsNonRoot"`
		Capabilities             *struct {
			Drop []string `yaml:"drop"`
		} `yaml:"capabilities"`
	} `yaml:"securityContext"`
}

type probe struct {
	HTTPGet *struct {
		Path string      `yaml:"path"`
		Port intOrString `yaml:"port"`
	} `yaml:"httpGet"`
	InitialDelaySeconds int `yaml:"initialDelaySeconds"`
	PeriodSeconds       int `yaml:"periodSeconds"`
	TimeoutSeconds      int `yaml:"timeoutSeconds"`
	FailureThreshold    int `yaml:"failureThreshold"`
}

type service struct {
	APIVersion string     `yaml:"apiVersion"`
	Kind       string     `yaml:"kind"`
	Metadata   objectMeta `yaml:"metadata"`
	Spec       struct {
		Type     string            `yaml:"type"`
		Selector map[string]string `yaml:"selector"`
		Ports    []struct {
			Name       string      `yaml:"name"`
			Port       int         `yaml:"port"`
			TargetPort intOrString `yaml:"targetPort"`
			Protocol   string      `yaml:"protocol"`
		} `yaml:"ports"`
	} `yaml:"spec"`
}

type podDisruptionBudget struct {
	APIVersion string     `yaml:"apiVersion"`
	Kind       string     `yaml:"kind"`
	Metadata   objectMeta `yaml:"metadata"`
	Spec       struct {
		MinAvailable   *intOrString  `yaml:"minAvailable"`
		MaxUnavailable *intOrString  `yaml:"maxUnavailable"`
		Selector       labelSelector `yaml:"selector"`
	} `yaml:"spec"`
}

type secret struct {
	APIVersion string            `yaml:"apiVersion"`
	Kind       string            `yaml:"kind"`
	Metadata   objectMeta        `yaml:"metadata"`
	Type       string            `yaml:"type"`
	StringData map[string]string `yaml:"stringData"`
	Data       map[string]string `yaml:"data"`
}

type kustomization struct {
	APIVersion string   `yaml:"apiVersion"`
	Kind       string   `yaml:"kind"`
	Resources  []string `yaml:"resources"`
	Images     []struct {
		Name    string `yaml:"name"`
		NewName string `yaml:"newName"`
		NewTag  string `yaml:"newTag"`
	} `yaml:"images"`
}

// manifests is deploy/kubernetes, decoded.
type manifests struct {
	kustomization kustomization
	deployment    deployment
	service       service
	pdb           podDisruptionBudget
	secret        secret            // secret.example.yaml
	files         map[string]string // file name → the kind it holds, for the kustomization check
}

// target is the model a document of apiVersion and kind decodes into.
func (m *manifests) target(apiVersion, kind string) (any, error) {
	switch apiVersion + " " + kind {
	case "apps/v1 Deployment":
		return &m.deployment, nil
	case "v1 Service":
		return &m.service, nil
	case "policy/v1 PodDisruptionBudget":
		return &m.pdb, nil
	case "v1 Secret":
		return &m.secret, nil
	case "kustomize.config.k8s.io/v1beta1 Kustomization":
		return &m.kustomization, nil
	}
	return nil, fmt.Errorf("%s %s: no model for this kind", apiVersion, kind)
}

func loadManifests(t *testing.T) manifests {
	t.Helper()
	m := manifests{files: map[string]string{}}
	files, err := filepath.Glob(filepath.Join("kubernetes", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, file := range files {
		src := readFile(t, file)
		dec := yaml.NewDecoder(bytes.NewReader(src))
		for i := 0; ; i++ {
			var head struct {
				APIVersion string `yaml:"apiVersion"`
				Kind       string `yaml:"kind"`
			}
			var doc yaml.Node
			if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if err := doc.Decode(&head); err != nil {
				t.Fatalf("%s document %d: %v", file, i, err)
			}
			target, err := m.target(head.APIVersion, head.Kind)
			if err != nil {
				t.Fatalf("%s document %d: %v", file, i, err)
			}
			if prev, dup := seen[head.Kind]; dup {
				t.Fatalf("%s: a second %s (the first in %s)", file, head.Kind, prev)
			}
			seen[head.Kind] = file
			// Re-encode and decode strictly: yaml.Node.Decode has no KnownFields.
			b, err := yaml.Marshal(&doc)
			if err != nil {
				t.Fatal(err)
			}
			strict := yaml.NewDecoder(bytes.NewReader(b))
			strict.KnownFields(true)
			if err := strict.Decode(target); err != nil {
				t.Fatalf("%s (%s): %v", file, head.Kind, err)
			}
			m.files[filepath.Base(file)] = head.Kind
		}
	}
	for _, kind := range []string{"Kustomization", "Deployment", "Service", "PodDisruptionBudget", "Secret"} {
		if _, ok := seen[kind]; !ok {
			t.Fatalf("deploy/kubernetes has no %s", kind)
		}
	}
	return m
}

// selects reports whether a selector's labels all appear in labels.
func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func TestKustomization(t *testing.T) {
	t.Parallel()
	m := loadManifests(t)
	var want []string
	for file, kind := range m.files {
		if kind != "Kustomization" && file != "secret.example.yaml" {
			want = append(want, file)
		}
	}
	slices.Sort(want)
	got := slices.Sorted(slices.Values(m.kustomization.Resources))
	if !slices.Equal(got, want) {
		t.Errorf("kustomization resources %q, want every manifest but the example Secret: %q", got, want)
	}
	if slices.Contains(got, "secret.example.yaml") {
		t.Error("the kustomization applies the example Secret")
	}
	image := m.deployment.Spec.Template.Spec.Containers[0].Image
	name, _, _ := strings.Cut(image, ":")
	var overridden bool
	for _, im := range m.kustomization.Images {
		overridden = overridden || im.Name == name
	}
	if !overridden {
		t.Errorf("the kustomization has no images entry for %q (kustomize edit set image)", name)
	}
}

func TestDeployment(t *testing.T) {
	t.Parallel()
	m := loadManifests(t)
	d := m.deployment
	pod := d.Spec.Template.Spec
	podLabels := d.Spec.Template.Metadata.Labels

	if d.Spec.Replicas == nil || *d.Spec.Replicas != 3 {
		t.Errorf("replicas %s, want 3", show(d.Spec.Replicas))
	}
	if !selects(d.Spec.Selector.MatchLabels, podLabels) {
		t.Errorf("the selector %v does not select the pod template's labels %v", d.Spec.Selector.MatchLabels, podLabels)
	}
	// Rolling updates add a node before removing one: never fewer than the
	// replicas, and the PDB's budget stays for involuntary disruptions.
	if ru := d.Spec.Strategy.RollingUpdate; d.Spec.Strategy.Type != "RollingUpdate" || ru == nil || ru.MaxUnavailable.value != "0" {
		t.Errorf("strategy %+v, want RollingUpdate with maxUnavailable 0", d.Spec.Strategy)
	}
	var spread bool
	if a := pod.Affinity; a != nil && a.PodAntiAffinity != nil {
		for _, p := range a.PodAntiAffinity.Preferred {
			spread = spread || p.PodAffinityTerm.TopologyKey == "kubernetes.io/hostname" && selects(p.PodAffinityTerm.LabelSelector.MatchLabels, podLabels)
		}
		if len(a.PodAntiAffinity.Required) > 0 {
			t.Error("required anti-affinity: a cluster with fewer machines than replicas could not schedule them all")
		}
	}
	if !spread {
		t.Error("no preferred pod anti-affinity across kubernetes.io/hostname selecting the xjob pods")
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("the pod mounts a service account token: xjob does not use the Kubernetes API")
	}

	if len(pod.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(pod.Containers))
	}
	c := pod.Containers[0]
	if len(c.Command) > 0 || !slices.Equal(c.Args, []string{"server"}) {
		t.Errorf("command %q args %q, want the image's entry point with args [server]", c.Command, c.Args)
	}
	portName := ""
	for _, p := range c.Ports {
		if p.ContainerPort == serverPort {
			portName = p.Name
		}
	}
	if portName == "" {
		t.Fatalf("no named container port %d", serverPort)
	}
	isServerPort := func(p intOrString) bool { return p.value == portName || p.value == strconv.Itoa(serverPort) }

	for _, pr := range []struct {
		name  string
		probe *probe
		path  string
	}{
		{"readiness", c.ReadinessProbe, readinessPath},
		{"liveness", c.LivenessProbe, livenessPath},
		{"startup", c.StartupProbe, livenessPath},
	} {
		switch {
		case pr.probe == nil || pr.probe.HTTPGet == nil:
			t.Errorf("no HTTP %s probe", pr.name)
		case pr.probe.HTTPGet.Path != pr.path || !isServerPort(pr.probe.HTTPGet.Port):
			t.Errorf("%s probe GET %s on port %s, want %s on %d", pr.name, pr.probe.HTTPGet.Path, pr.probe.HTTPGet.Port.value, pr.path, serverPort)
		}
	}
	if p := c.StartupProbe; p != nil && p.PeriodSeconds*p.FailureThreshold < 60 {
		t.Errorf("the startup probe gives up after %d s: migrations at first start wait for a lock", p.PeriodSeconds*p.FailureThreshold)
	}

	env := map[string]string{}
	refs := map[string][2]string{} // variable → secret name and key
	for _, e := range c.Env {
		if _, dup := env[e.Name]; dup {
			t.Errorf("%s is set twice", e.Name)
		}
		env[e.Name] = e.Value
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			refs[e.Name] = [2]string{e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key}
		}
	}
	for _, problem := range checkServerEnv(withoutRefs(env, c)) {
		t.Error(problem)
	}
	if l, ok := env["XJOB_LISTEN"]; ok && !strings.HasSuffix(l, ":"+strconv.Itoa(serverPort)) {
		t.Errorf("XJOB_LISTEN %q is not the container port %d", l, serverPort)
	}
	if _, ok := refs["XJOB_DB"]; !ok {
		t.Error("XJOB_DB does not come from the Secret")
	}

	// Secret keys: every reference names a key of the Secret, and every
	// token is either a reference or a file from the mounted Secret.
	secretKeys := map[string]bool{}
	for k := range m.secret.StringData {
		secretKeys[k] = true
	}
	for k := range m.secret.Data {
		secretKeys[k] = true
	}
	for name, ref := range refs {
		if ref[0] != m.secret.Metadata.Name || !secretKeys[ref[1]] {
			t.Errorf("%s reads key %q of Secret %q, which secret.example.yaml does not have", name, ref[1], ref[0])
		}
	}
	files := secretFiles(t, pod, c, m.secret.Metadata.Name, secretKeys)
	for _, v := range []string{"XJOB_ADMIN_TOKEN", "XJOB_ACCESS_TOKEN", "XJOB_SESSION_KEY"} {
		_, ref := refs[v]
		file, isFile := env[v+"_FILE"]
		switch {
		case ref && isFile:
			t.Errorf("%s is set both ways", v)
		case isFile && !files[file]:
			t.Errorf("%s_FILE=%s is not a file of the mounted Secret", v, file)
		case !ref && !isFile:
			t.Errorf("%s is neither set from the Secret nor read from a file (%s_FILE)", v, v)
		}
	}

	// Stopping: drain, then SIGTERM and the grace, within the pod's time.
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Exec == nil ||
		!slices.Equal(c.Lifecycle.PreStop.Exec.Command, drainCommand) {
		t.Errorf("the preStop hook does not run %q", drainCommand)
	}
	grace := envDuration(t, env, "XJOB_SHUTDOWN_GRACE", defaultGrace)
	ttl := envDuration(t, env, "XJOB_LEASE_TTL", defaultLeaseTTL)
	if tg := pod.TerminationGracePeriodSeconds; tg == nil || time.Duration(*tg)*time.Second <= grace+ttl {
		t.Errorf("terminationGracePeriodSeconds %s leaves no time past the drain (grace %v, lease TTL %v)", show(tg), grace, ttl)
	}

	// Requests place the pods; the memory limit bounds them (and is what
	// GOMEMLIMIT reads). A CPU limit is optional: it throttles.
	for _, r := range []string{"cpu", "memory"} {
		if c.Resources.Requests[r] == "" {
			t.Errorf("resources: no %s request", r)
		}
	}
	if c.Resources.Limits["memory"] == "" {
		t.Error("resources: no memory limit")
	}

	psc, csc := pod.SecurityContext, c.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Errorf("the pod may run as root: %+v", psc)
	}
	if csc == nil || csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation ||
		csc.ReadOnlyRootFilesystem == nil || !*csc.ReadOnlyRootFilesystem ||
		csc.Capabilities == nil || !slices.Equal(csc.Capabilities.Drop, []string{"ALL"}) {
		t.Errorf("container securityContext %+v, want no privilege escalation, a read-only root and every capability dropped", csc)
	}
}

// show is *p, or "unset".
func show(p *int) string {
	if p == nil {
		return "unset"
	}
	return strconv.Itoa(*p)
}

// withoutRefs is env without the variables that take their value from
// elsewhere (valueFrom), whose Value is empty.
func withoutRefs(env map[string]string, c container) map[string]string {
	out := maps.Clone(env)
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			delete(out, e.Name)
		}
	}
	return out
}

// secretFiles is the set of file paths the container sees from secret
// volumes of the named Secret, each checked to be one of its keys.
func secretFiles(t *testing.T, pod podSpec, c container, secretName string, keys map[string]bool) map[string]bool {
	t.Helper()
	files := map[string]bool{}
	for _, vm := range c.VolumeMounts {
		for _, v := range pod.Volumes {
			if v.Name != vm.Name || v.Secret == nil {
				continue
			}
			if v.Secret.SecretName != secretName {
				t.Errorf("volume %s mounts Secret %q, not %q", v.Name, v.Secret.SecretName, secretName)
			}
			if !vm.ReadOnly {
				t.Errorf("the Secret is mounted writable at %s", vm.MountPath)
			}
			if m := v.Secret.DefaultMode; m != nil && *m&0o004 != 0 {
				t.Errorf("the Secret's files are world-readable (mode %o)", *m)
			}
			for _, it := range v.Secret.Items {
				if !keys[it.Key] {
					t.Errorf("volume %s projects key %q, which secret.example.yaml does not have", v.Name, it.Key)
				}
				files[path.Join(vm.MountPath, it.Path)] = true
			}
		}
	}
	return files
}

func TestServiceAndBudget(t *testing.T) {
	t.Parallel()
	m := loadManifests(t)
	podLabels := m.deployment.Spec.Template.Metadata.Labels
	c := m.deployment.Spec.Template.Spec.Containers[0]

	if !selects(m.service.Spec.Selector, podLabels) {
		t.Errorf("the Service's selector %v does not select the pods %v", m.service.Spec.Selector, podLabels)
	}
	var routed bool
	for _, p := range m.service.Spec.Ports {
		for _, cp := range c.Ports {
			if cp.ContainerPort == serverPort && (p.TargetPort.value == cp.Name || p.TargetPort.value == strconv.Itoa(serverPort)) {
				routed = true
			}
		}
	}
	if !routed {
		t.Errorf("no Service port targets the container port %d", serverPort)
	}

	pdb := m.pdb.Spec
	if !maps.Equal(pdb.Selector.MatchLabels, m.deployment.Spec.Selector.MatchLabels) {
		t.Errorf("the PDB selects %v, the Deployment %v: it must select the Deployment's pods", pdb.Selector.MatchLabels, m.deployment.Spec.Selector.MatchLabels)
	}
	switch {
	case pdb.MaxUnavailable != nil && pdb.MinAvailable != nil:
		t.Error("the PDB sets both minAvailable and maxUnavailable")
	case pdb.MaxUnavailable != nil && pdb.MaxUnavailable.value == "1":
	case pdb.MinAvailable != nil && pdb.MinAvailable.value == "2":
	default:
		t.Errorf("the PDB allows other than one node down of three: %+v", pdb)
	}
}

func TestSecretExample(t *testing.T) {
	t.Parallel()
	m := loadManifests(t)
	s := m.secret
	if len(s.Data) > 0 {
		t.Error("the example Secret has base64 data: keep its example values readable (stringData)")
	}
	for k, v := range s.StringData {
		if !strings.Contains(v, "CHANGE-ME") {
			t.Errorf("example Secret key %s=%q is not marked CHANGE-ME", k, v)
		}
	}
	if !hasAnyPrefix(s.StringData["db-url"], dbSchemes) {
		t.Errorf("db-url %q is not a database URL xjob server takes", s.StringData["db-url"])
	}
	if src := string(readFile(t, "kubernetes/secret.example.yaml")); !strings.Contains(src, "EXAMPLE VALUES ONLY") {
		t.Error("secret.example.yaml does not say its values are examples")
	}
}

// TestManifestModelIsStrict: the strict decoding this file relies on
// refuses a misspelt field.
func TestManifestModelIsStrict(t *testing.T) {
	t.Parallel()
	src := "apiVersion: apps/v1\nkind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n        - name: x\n          readinessprobe: {}\n"
	dec := yaml.NewDecoder(strings.NewReader(src))
	dec.KnownFields(true)
	var d deployment
	if err := dec.Decode(&d); err == nil || !strings.Contains(err.Error(), "readinessprobe") {
		t.Errorf("err = %v, want the misspelt field refused", err)
	}
}
