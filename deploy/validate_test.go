// Package deploy holds the Kubernetes manifests. This test renders them
// with the kustomize API and strictly decodes every document into the
// Kubernetes API types, failing on unknown fields, and checks what a typo
// would break silently: probes and ports the service does not serve, a
// config or catalog the service would reject, and CLI flags that do not
// exist. It is a module of its own so the service keeps a lean go.mod.
package deploy

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/toolsearch/toolsearch/pkg/catalog"
	"github.com/toolsearch/toolsearch/pkg/config"
	"github.com/toolsearch/toolsearch/pkg/sizing"
	"github.com/toolsearch/toolsearch/pkg/testpki"
)

// served is what the service answers on: probe paths and the port name.
var served = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// kinds maps apiVersion/kind to a fresh typed object for strict decoding.
var kinds = map[string]func() any{
	"apps/v1/Deployment":                      func() any { return &appsv1.Deployment{} },
	"v1/Service":                              func() any { return &corev1.Service{} },
	"v1/ConfigMap":                            func() any { return &corev1.ConfigMap{} },
	"autoscaling/v2/HorizontalPodAutoscaler":  func() any { return &autoscalingv2.HorizontalPodAutoscaler{} },
	"policy/v1/PodDisruptionBudget":           func() any { return &policyv1.PodDisruptionBudget{} },
	"networking.k8s.io/v1/NetworkPolicy":      func() any { return &networkingv1.NetworkPolicy{} },
	"monitoring.coreos.com/v1/ServiceMonitor": func() any { return &monitoringv1.ServiceMonitor{} },
	"monitoring.coreos.com/v1/PrometheusRule": func() any { return &monitoringv1.PrometheusRule{} },
	"batch/v1/Job":                            func() any { return &batchv1.Job{} },
}

type doc struct {
	kind string
	obj  any
}

// decode strictly decodes every document of a YAML stream.
func decode(t *testing.T, where string, data []byte) []doc {
	t.Helper()
	var out []doc
	for i, part := range bytes.Split(data, []byte("\n---")) {
		if len(bytes.TrimSpace(part)) == 0 {
			continue
		}
		var meta struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal(part, &meta); err != nil {
			t.Fatalf("%s: document %d: %v", where, i, err)
		}
		key := meta.APIVersion + "/" + meta.Kind
		mk, ok := kinds[key]
		if !ok {
			t.Errorf("%s: document %d: unexpected kind %s", where, i, key)
			continue
		}
		obj := mk()
		if err := yaml.UnmarshalStrict(part, obj); err != nil {
			t.Errorf("%s: %s: %v", where, key, err)
			continue
		}
		out = append(out, doc{meta.Kind, obj})
	}
	return out
}

func render(t *testing.T, dir string) []doc {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	res, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	y, err := res.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, dir, y)
}

func TestOverlays(t *testing.T) {
	for _, dir := range []string{"base", "overlays/example", "overlays/example-eval", "overlays/example-tls", "overlays/example-eval-tls"} {
		t.Run(dir, func(t *testing.T) {
			docs := render(t, dir)
			got := map[string]int{}
			for _, d := range docs {
				if cm, ok := d.obj.(*corev1.ConfigMap); ok && strings.HasPrefix(cm.Name, "toolsearch-eval-cases") {
					continue // the eval's cases (TestRecallEvalJob)
				}
				got[d.kind]++
			}
			for _, k := range []string{"Deployment", "Service", "ConfigMap", "HorizontalPodAutoscaler", "PodDisruptionBudget", "NetworkPolicy", "ServiceMonitor"} {
				if got[k] != 1 {
					t.Errorf("%d %s, want 1", got[k], k)
				}
			}
			var policy *networkingv1.NetworkPolicy
			var cfg *corev1.ConfigMap
			var deployment *appsv1.Deployment
			var service *corev1.Service
			for _, d := range docs {
				switch o := d.obj.(type) {
				case *networkingv1.NetworkPolicy:
					policy = o
				case *appsv1.Deployment:
					checkDeployment(t, o)
					deployment = o
				case *corev1.ConfigMap:
					if strings.HasPrefix(o.Name, "toolsearch-config") {
						checkConfigMap(t, o)
						cfg = o
					}
				case *corev1.Service:
					if p := o.Spec.Ports[0]; p.TargetPort.String() != "http" || p.Port != 8080 {
						t.Errorf("service port %+v, want 8080 to the http port", p)
					}
					service = o
				case *monitoringv1.ServiceMonitor:
					if ep := o.Spec.Endpoints[0]; ep.Port != "metrics" || ep.Path != "/metrics" {
						t.Errorf("servicemonitor endpoint %+v, want http /metrics", ep)
					}
				}
			}
			checkSelectors(t, docs)
			if policy != nil && cfg != nil {
				checkEgress(t, policy, cfg)
			}
			if deployment != nil && cfg != nil {
				checkMemory(t, deployment, cfg)
			}
			if service != nil && cfg != nil {
				checkAffinity(t, service, cfg)
			}
			if deployment != nil && service != nil {
				tls := checkTLS(t, deployment, service)
				if want := strings.HasSuffix(dir, "-tls"); tls != want {
					t.Errorf("serves its API over TLS: %v, want %v", tls, want)
				}
			}
		})
	}
}

// checkTLS: a Deployment serving its API over TLS reads the certificate
// and key from a Secret's tls.crt and tls.key mounted as a whole volume,
// which the kubelet updates when the Secret is renewed (a subPath mount
// is never updated, and the certificate would expire in the pod); and its
// Service says the port speaks TLS. It reports whether d serves TLS.
func checkTLS(t *testing.T, d *appsv1.Deployment, svc *corev1.Service) bool {
	t.Helper()
	spec := d.Spec.Template.Spec
	c := spec.Containers[0]
	cert, key := envValue(c, "TOOLSEARCH_TLS_CERT_FILE"), envValue(c, "TOOLSEARCH_TLS_KEY_FILE")
	if cert == "" && key == "" {
		if p := svc.Spec.Ports[0].AppProtocol; p != nil {
			t.Errorf("the Service's API port says appProtocol %s, but the API is served in clear", *p)
		}
		return false
	}
	secretOf := func(path, wantKey string) string {
		for _, m := range c.VolumeMounts {
			rel, ok := strings.CutPrefix(path, strings.TrimSuffix(m.MountPath, "/")+"/")
			if !ok {
				continue
			}
			if m.SubPath != "" {
				t.Errorf("%s is mounted by subPath %s: the kubelet never updates it, and a renewed certificate is not seen", path, m.SubPath)
			}
			for _, v := range spec.Volumes {
				if v.Name == m.Name && v.Secret != nil {
					if rel != wantKey {
						t.Errorf("%s reads the Secret's key %s; a kubernetes.io/tls Secret (cert-manager's) holds it as %s", path, rel, wantKey)
					}
					return v.Secret.SecretName
				}
			}
			t.Errorf("%s is in volume %s, which is not a Secret", path, m.Name)
			return ""
		}
		t.Errorf("%s is in no volume the container mounts", path)
		return ""
	}
	if cs, ks := secretOf(cert, "tls.crt"), secretOf(key, "tls.key"); cs != ks {
		t.Errorf("the certificate is from Secret %q, its key from %q: a renewal changes them apart", cs, ks)
	}
	if p := svc.Spec.Ports[0].AppProtocol; p == nil || *p != "https" {
		t.Errorf("the Service's API port has appProtocol %v, want https", p)
	}
	return true
}

// checkAffinity: the Service sends a client's connections to one pod for
// longer than the state a pod holds for it lives: a search id, and an MCP
// session idle at the config's limit. Without, a client's next connection
// reached another pod as often as not, which answers 404 for both.
func checkAffinity(t *testing.T, svc *corev1.Service, cm *corev1.ConfigMap) {
	t.Helper()
	f, err := config.Parse("configmap config.yaml", []byte(cm.Data["config.yaml"]))
	if err != nil {
		t.Fatal(err)
	}
	need := max(config.SearchIDLifetime, time.Duration(cmp.Or(f.Limits.MCPSessionIdle, config.Duration(config.DefaultSessionIdle))))
	if svc.Spec.SessionAffinity != corev1.ServiceAffinityClientIP {
		t.Errorf("the Service's session affinity is %q, want ClientIP: an MCP session and a search id are their pod's", svc.Spec.SessionAffinity)
		return
	}
	if c := svc.Spec.SessionAffinityConfig; c == nil || c.ClientIP == nil || c.ClientIP.TimeoutSeconds == nil || time.Duration(*c.ClientIP.TimeoutSeconds)*time.Second < need {
		t.Errorf("the Service's affinity timeout %+v is shorter than %s, what a pod holds for a client", c, need)
	}
}

// connections is the most connections a config lets the API hold.
func connections(l config.Limits) int { return cmp.Or(l.MaxConnections, config.DefaultMaxConnections) }

// bodies is the request bodies a config lets the service read at once.
func bodies(l config.Limits) int64 {
	return cmp.Or(l.RequestBodyBudgetBytes, config.DefaultRequestBodyBudgetBytes)
}

// modelWidth is the width a config's embedder serves: dimensions when set,
// else the model's own for the models whose width is known, else the
// local embedder's default.
func modelWidth(e config.Embedding) int {
	switch {
	case e.Dimensions > 0:
		return e.Dimensions
	case local(e):
		return 1024
	case strings.Contains(e.Model, "3-large"):
		return 3072
	}
	return 1536 // text-embedding-3-small, ada-002; the widest common default
}

// local reports whether a config embeds with the local embedder.
func local(e config.Embedding) bool { return e.Provider == "" || e.Provider == "local" }

// checkMemory: the deployment's memory limit holds its catalog, by the
// sizing rule (package sizing), at its peak.
func checkMemory(t *testing.T, d *appsv1.Deployment, cm *corev1.ConfigMap) {
	t.Helper()
	cfg, cat := parseConfigMap(t, cm)
	if connections(cfg.Limits) < 0 {
		t.Errorf("limits.max_connections is %d: no memory limit holds connections without a bound", cfg.Limits.MaxConnections)
	}
	if bodies(cfg.Limits) < 0 {
		t.Errorf("limits.request_body_budget_bytes is %d: no memory limit holds request bodies without a bound", cfg.Limits.RequestBodyBudgetBytes)
	}
	need := sizing.Catalog{Tools: cat.Len(), TextBytes: cat.Bytes(), Dim: modelWidth(cfg.Embedding), Local: local(cfg.Embedding)}
	c := d.Spec.Template.Spec.Containers[0]
	limit := c.Resources.Limits.Memory().Value()
	// Connections over TLS hold more (sizing's tlsConnectionBytes).
	tls := envValue(c, "TOOLSEARCH_TLS_CERT_FILE") != ""
	if peak := need.Limit(connections(cfg.Limits), tls, bodies(cfg.Limits)); limit < peak {
		t.Errorf("memory limit %d MiB, but %d tools of %d KiB at %d dimensions need %d MiB at their peak (%d MiB once built; connections over TLS: %v)",
			limit>>20, need.Tools, need.TextBytes>>10, need.Dim, peak>>20, need.Built()>>20, tls)
	}
}

// checkMemoryRequest: the container's memory request is its limit. Memory
// cannot be throttled: a node that placed pods by smaller requests runs
// out when they grow to their limits, and under that pressure the kubelet
// evicts first the pods using more than they requested. An overlay that
// raises the limit alone (as the TLS ones must) would leave the pod
// placed, and first evicted, by the old request.
func checkMemoryRequest(t *testing.T, who string, c corev1.Container) {
	t.Helper()
	if req, lim := c.Resources.Requests.Memory(), c.Resources.Limits.Memory(); lim.IsZero() || req.Cmp(*lim) != 0 {
		t.Errorf("%s: memory request %s, limit %s: the limit must be set and the request equal to it", who, req, lim)
	}
}

func checkDeployment(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	spec := d.Spec.Template.Spec
	c := spec.Containers[0]
	if len(c.Ports) != 2 || c.Ports[0].Name != "http" || c.Ports[0].ContainerPort != 8080 || c.Ports[1].Name != "metrics" || c.Ports[1].ContainerPort != 9090 {
		t.Errorf("container ports %+v, want http 8080 (the service's -addr) and metrics 9090 (-metrics-addr)", c.Ports)
	}
	// The ports are only names for what the process listens on: the
	// probes reach the metrics listener, so -metrics-addr off (or another
	// port) would leave every pod unready.
	for name, want := range map[string]string{"TOOLSEARCH_ADDR": ":8080", "TOOLSEARCH_METRICS_ADDR": ":9090"} {
		if got := envValue(c, name); got != want {
			t.Errorf("%s=%q, want %q: the port the container declares, which the probes and the Service use", name, got, want)
		}
	}
	for name, p := range map[string]*corev1.Probe{"startup": c.StartupProbe, "readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		if p == nil || p.HTTPGet == nil {
			t.Errorf("%s probe missing", name)
			continue
		}
		if !served[p.HTTPGet.Path] {
			t.Errorf("%s probe %s: not something the service serves", name, p.HTTPGet.Path)
		}
		// The API's port queues new connections at limits.max_connections:
		// a probe there would fail, and restart the pod, under load.
		if p.HTTPGet.Port.String() != "metrics" {
			t.Errorf("%s probe on port %s, want metrics (the listener apart from the API's)", name, p.HTTPGet.Port.String())
		}
		if p.TimeoutSeconds == 0 {
			t.Errorf("%s probe has no timeoutSeconds", name)
		}
	}
	// A pod that starts within its allowance must not fail the rollout.
	if sp := c.StartupProbe; sp != nil {
		allowance := sp.InitialDelaySeconds + sp.PeriodSeconds*sp.FailureThreshold
		deadline := int32(600) // the API server's default
		if d.Spec.ProgressDeadlineSeconds != nil {
			deadline = *d.Spec.ProgressDeadlineSeconds
		}
		if deadline <= allowance {
			t.Errorf("progressDeadlineSeconds %d is within the startup probe's allowance of %d s: a pod still starting in its allowance fails the rollout", deadline, allowance)
		}
	}
	if d.Spec.Replicas != nil {
		t.Errorf("the Deployment sets replicas %d: the HorizontalPodAutoscaler owns the count, and every apply would reset it", *d.Spec.Replicas)
	}
	if c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Error("readiness must probe /readyz and liveness /healthz")
	}
	sc := c.SecurityContext
	if spec.SecurityContext == nil || spec.SecurityContext.RunAsNonRoot == nil || !*spec.SecurityContext.RunAsNonRoot ||
		sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
		t.Error("the pod must run non-root with a read-only root filesystem, no privilege escalation and all capabilities dropped")
	}
	checkMemoryRequest(t, "the Deployment", c)
	drain, grace := envDuration(t, c, "TOOLSEARCH_DRAIN_DELAY"), envDuration(t, c, "TOOLSEARCH_SHUTDOWN_TIMEOUT")
	if tg := spec.TerminationGracePeriodSeconds; tg == nil || *tg < int64(drain+grace) {
		t.Errorf("terminationGracePeriodSeconds %v is shorter than drain %ds + shutdown %ds", tg, drain, grace)
	}
	for _, e := range c.Env {
		// A _FILE's value is a path (TOOLSEARCH_TLS_KEY_FILE), the secret
		// in the Secret mounted there.
		if e.Value != "" && (strings.Contains(e.Name, "KEY") || strings.Contains(e.Name, "TOKEN")) && !strings.HasSuffix(e.Name, "_FILE") {
			t.Errorf("env %s has a literal value: secrets come from a Secret", e.Name)
		}
	}
	flags := knownEnv(t)
	for _, e := range c.Env {
		if !flags[e.Name] {
			t.Errorf("env %s is not read by toolsearch serve", e.Name)
		}
	}
}

// envValue is the container's value of the variable name, "" when unset
// (or set from a secret or config map).
func envValue(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

func envDuration(t *testing.T, c corev1.Container, name string) int {
	for _, e := range c.Env {
		if e.Name == name {
			var s int
			if _, err := fmt.Sscanf(e.Value, "%ds", &s); err != nil {
				t.Fatalf("%s=%q: want whole seconds like 5s", name, e.Value)
			}
			return s
		}
	}
	t.Fatalf("%s not set", name)
	return 0
}

// checkSelectors: every object that picks the service's pods or Service
// by label has a selector (a missing one selects nothing, or every pod in
// the namespace), and it picks exactly the Deployment's pods; a Job runs
// the Deployment's image. The API server test (TestOnAPIServer) checks
// the same on what the controllers make of it.
func checkSelectors(t *testing.T, docs []doc) {
	t.Helper()
	var pods map[string]string
	var image string
	for _, d := range docs {
		if o, ok := d.obj.(*appsv1.Deployment); ok {
			pods, image = o.Spec.Template.Labels, o.Spec.Template.Spec.Containers[0].Image
		}
	}
	matches := func(what string, sel map[string]string, labels map[string]string) {
		if len(sel) == 0 {
			t.Errorf("%s has no selector", what)
			return
		}
		for k, v := range sel {
			if labels[k] != v {
				t.Errorf("%s selects %s=%s, which the pods (%v) do not have", what, k, v, labels)
			}
		}
	}
	for _, d := range docs {
		switch o := d.obj.(type) {
		case *appsv1.Deployment:
			matches("the Deployment", o.Spec.Selector.MatchLabels, pods)
		case *corev1.Service:
			matches("the Service", o.Spec.Selector, pods)
		case *policyv1.PodDisruptionBudget:
			if o.Spec.Selector == nil {
				t.Error("the PodDisruptionBudget has no selector: it protects no pod")
				continue
			}
			matches("the PodDisruptionBudget", o.Spec.Selector.MatchLabels, pods)
		case *networkingv1.NetworkPolicy:
			matches("the NetworkPolicy", o.Spec.PodSelector.MatchLabels, pods)
		case *monitoringv1.ServiceMonitor:
			var svc map[string]string
			for _, d := range docs {
				if s, ok := d.obj.(*corev1.Service); ok {
					svc = s.Labels
				}
			}
			matches("the ServiceMonitor", o.Spec.Selector.MatchLabels, svc)
		case *batchv1.Job:
			if got := o.Spec.Template.Spec.Containers[0].Image; got != image {
				t.Errorf("the Job runs image %s, the Deployment %s", got, image)
			}
		}
	}
}

// checkConfigMap parses the config and catalog with the service's own
// parsers, so a ConfigMap the service would refuse fails here first.
// parseConfigMap reads the ConfigMap's config and catalog with the
// service's own parsers.
func parseConfigMap(t *testing.T, cm *corev1.ConfigMap) (*config.File, *catalog.Catalog) {
	t.Helper()
	cfg, err := config.Parse("configmap config.yaml", []byte(cm.Data["config.yaml"]))
	if err != nil {
		t.Fatal(err)
	}
	p, err := catalog.Parse("configmap catalog.yaml", []byte(cm.Data["catalog.yaml"]), "")
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.New([]catalog.Part{p})
	if err != nil {
		t.Fatal(err)
	}
	return cfg, cat
}

func checkConfigMap(t *testing.T, cm *corev1.ConfigMap) {
	t.Helper()
	cfg, cat := parseConfigMap(t, cm)
	for _, ref := range cfg.Core {
		if _, err := cat.Resolve(ref); err != nil {
			t.Errorf("config core names %q: %v", ref, err)
		}
	}
}

var binary string

// TestMain finds the binary to ask which flags and variables exist, and to
// serve: TOOLSEARCH_BIN, the one make build wrote (make manifests sets
// it), or else one it builds once.
func TestMain(m *testing.M) {
	if binary = os.Getenv("TOOLSEARCH_BIN"); binary != "" {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "toolsearch-deploy-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "toolsearch")
	cmd := exec.Command("go", "build", "-o", binary, "./cmd/toolsearch")
	cmd.Dir = ".." // the service's own module, with its own go.sum
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func toolsearch(*testing.T) string { return binary }

func help(t *testing.T, sub string) string {
	out, _ := exec.Command(toolsearch(t), sub, "-h").CombinedOutput()
	return string(out)
}

// knownEnv is every variable toolsearch serve reads, from its own -h.
func knownEnv(t *testing.T) map[string]bool {
	h := help(t, "serve")
	known := map[string]bool{}
	for _, f := range strings.FieldsFunc(h, func(r rune) bool { return r == '[' || r == ']' || r == ' ' || r == '\n' || r == ',' }) {
		if strings.HasPrefix(f, "TOOLSEARCH_") || strings.HasPrefix(f, "OPENAI_") {
			known[f] = true
		}
	}
	return known
}

func TestCI(t *testing.T) {
	alerts, err := os.ReadFile("ci/alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range decode(t, "ci/alerts.yaml", alerts) {
		rule := d.obj.(*monitoringv1.PrometheusRule)
		for _, r := range rule.Spec.Groups[0].Rules {
			if !strings.Contains(r.Expr.String(), "toolsearch_") {
				t.Errorf("alert %s does not use a toolsearch metric", r.Alert)
			}
		}
	}
	var wf map[string]any
	raw, err := os.ReadFile("ci/recall-eval.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, &wf); err != nil {
		t.Fatalf("ci/recall-eval.yaml: %v", err)
	}
	b, _ := json.Marshal(wf)
	if !strings.Contains(string(b), "make recall-eval") {
		t.Error("the workflow does not run make recall-eval")
	}
}

// TestRecallEvalJob renders the example-eval overlays and runs each Job's
// exact command line, as the pod would: against a server started with the
// rendered ConfigMap's config and catalog, with each mounted volume's
// files at a temporary directory in place of its mount path and the
// Service's name in place of its address. Only the embedder differs: the
// local one stands in for the overlay's OpenAI. Over HTTPS
// (example-eval-tls) the server is started as the rendered Deployment
// says, with the certificate and key its env names in the Secret it
// mounts, and the Job trusts them as its env says: a certificate of a
// test CA stands in for cert-manager's.
func TestRecallEvalJob(t *testing.T) {
	for _, overlay := range []string{"overlays/example-eval", "overlays/example-eval-tls"} {
		t.Run(overlay, func(t *testing.T) { runRecallEvalJob(t, overlay) })
	}
}

func runRecallEvalJob(t *testing.T, overlay string) {
	docs := render(t, overlay)
	configMaps := map[string]*corev1.ConfigMap{}
	var job *batchv1.Job
	var deployment *appsv1.Deployment
	for _, d := range docs {
		switch o := d.obj.(type) {
		case *corev1.ConfigMap:
			configMaps[o.Name] = o
		case *batchv1.Job:
			job = o
		case *appsv1.Deployment:
			deployment = o
		}
	}
	if job == nil || deployment == nil {
		t.Fatal("the overlay renders no Job, or no Deployment")
	}
	if job.Namespace != deployment.Namespace {
		t.Errorf("the Job is in namespace %q, want the deployment's (%s)", job.Namespace, deployment.Namespace)
	}
	spec := job.Spec.Template.Spec
	c := spec.Containers[0]
	if c.Args[0] != "eval" {
		t.Fatalf("the job runs %q, want eval", c.Args[0])
	}
	checkMemoryRequest(t, "the Job", c)
	h := help(t, "eval")
	for _, a := range c.Args[1:] {
		if strings.HasPrefix(a, "-") && !strings.Contains(h, "\n  "+a+" ") && !strings.Contains(h, "\n  "+a+"\n") {
			t.Errorf("the job passes %s, which toolsearch eval does not have", a)
		}
	}
	// The Secret toolsearch-tls, as cert-manager's CA issuer writes it:
	// the serving certificate (for the address the Service's name stands
	// for here), its key, and the CA.
	ca := testpki.MustCA(t, "cluster CA")
	certPEM, keyPEM, err := ca.Issue("toolsearch", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	secrets := map[string]map[string][]byte{"toolsearch-tls": {"tls.crt": certPEM, "tls.key": keyPEM, "ca.crt": ca.PEM}}
	// Each mounted ConfigMap and Secret must be one the overlay renders
	// (or, for a Secret, one the platform provides), by its generated
	// name: the mistake this test exists for.
	root := t.TempDir()
	mountAll := func(who string, vols []corev1.Volume, vms []corev1.VolumeMount) map[string]string {
		mounts := map[string]string{}
		for _, v := range vols {
			files := map[string][]byte{}
			switch {
			case v.ConfigMap != nil:
				cm := configMaps[v.ConfigMap.Name]
				if cm == nil {
					t.Fatalf("%s: volume %s mounts ConfigMap %q, which the overlay does not render (it has %v)", who, v.Name, v.ConfigMap.Name, slices.Sorted(maps.Keys(configMaps)))
				}
				for name, data := range cm.Data {
					files[name] = []byte(data)
				}
			case v.Secret != nil:
				sec := secrets[v.Secret.SecretName]
				if sec == nil {
					t.Fatalf("%s: volume %s mounts Secret %q, which nothing provides", who, v.Name, v.Secret.SecretName)
				}
				if len(v.Secret.Items) == 0 {
					files = sec
				}
				for _, it := range v.Secret.Items {
					if sec[it.Key] == nil {
						t.Fatalf("%s: volume %s mounts key %s of Secret %q, which it does not hold", who, v.Name, it.Key, v.Secret.SecretName)
					}
					files[it.Path] = sec[it.Key]
				}
			default:
				t.Fatalf("%s: volume %s is neither a ConfigMap nor a Secret", who, v.Name)
			}
			dir := filepath.Join(root, who, v.Name)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			for name, b := range files {
				if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for _, m := range vms {
				if m.Name == v.Name {
					mounts[m.MountPath] = dir
				}
			}
		}
		return mounts
	}
	// local is a path in a container as the test has it.
	local := func(mounts map[string]string, path string) string {
		for mount, dir := range mounts {
			if rest, ok := strings.CutPrefix(path, mount+"/"); ok {
				return filepath.Join(dir, rest)
			}
		}
		return path
	}
	jobMounts := mountAll("job", spec.Volumes, c.VolumeMounts)
	cfg := jobMounts["/etc/toolsearch"]
	if cfg == "" {
		t.Fatal("the Job does not mount the deployment's config at /etc/toolsearch")
	}
	served := deployment.Spec.Template.Spec
	srvMounts := mountAll("deployment", served.Volumes, served.Containers[0].VolumeMounts)
	srvArgs := []string{"-metrics-addr", "off", "-config", filepath.Join(cfg, "config.yaml"),
		"-catalog", filepath.Join(cfg, "catalog.yaml"), "-embedder", "local"}
	scheme := "http://"
	if certFile := envValue(served.Containers[0], "TOOLSEARCH_TLS_CERT_FILE"); certFile != "" {
		srvArgs = append(srvArgs, "-tls-cert-file", local(srvMounts, certFile), "-tls-key-file", local(srvMounts, envValue(served.Containers[0], "TOOLSEARCH_TLS_KEY_FILE")))
		scheme = "https://"
	}
	// Listening, not yet ready: the Job's command waits for that itself.
	srv, addrs := serve(t, 1, func(addrs []string) []string { return append([]string{"-addr", addrs[0]}, srvArgs...) },
		func(addrs []string) error { return listening(addrs[0]) })
	addr := addrs[0]

	// here is an argument or a variable's value of the Job's as the test
	// has it: the Service's address its server's, a path in a mount the
	// mount's directory.
	calls := 0
	here := func(a string) string {
		if !strings.Contains(a, "toolsearch:8080") {
			return local(jobMounts, a)
		}
		calls++
		if !strings.HasPrefix(a, scheme) {
			t.Errorf("the Job calls %s; the deployment serves %s", a, scheme)
		}
		return strings.Replace(a, "toolsearch:8080", addr, 1)
	}
	args := slices.Clone(c.Args)
	for i, a := range args {
		args[i] = here(a)
	}
	eval := exec.Command(toolsearch(t), args...)
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			eval.Env = append(eval.Env, e.Name+"="+here(e.Value))
		}
	}
	if calls != 1 {
		t.Errorf("the Job names the service %d times in its args and env; want once", calls)
	}
	out, err := eval.CombinedOutput()
	if err != nil {
		t.Fatalf("the Job's command %q (env %q): %v\n%s\nserver log:\n%s", args, eval.Env, err, out, srv.tail(4000))
	}
	if !bytes.Contains(out, []byte("<testsuite")) || !bytes.Contains(out, []byte(`failures="0"`)) {
		t.Errorf("the Job's report:\n%s", out)
	}
}

// checkEgress fails when the config reaches an endpoint (the embedding
// base URL, an upstream) on a port the NetworkPolicy's egress does not
// allow: the pod would start and time out on every call.
func checkEgress(t *testing.T, policy *networkingv1.NetworkPolicy, cm *corev1.ConfigMap) {
	t.Helper()
	cfg, err := config.Parse("configmap config.yaml", []byte(cm.Data["config.yaml"]))
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	if cfg.Embedding.Provider == "openai" {
		base := cfg.Embedding.BaseURL
		if base == "" {
			base = "https://api.openai.com/v1"
		}
		urls = append(urls, base)
	}
	for _, u := range cfg.Upstreams {
		urls = append(urls, u.URL)
	}
	allowed := func(port int) bool {
		for _, r := range policy.Spec.Egress {
			if len(r.Ports) == 0 {
				return true
			}
			for _, p := range r.Ports {
				if p.Port != nil && p.Port.IntValue() == port {
					return true
				}
			}
		}
		return false
	}
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil {
			t.Errorf("config url %q: %v", raw, err)
			continue
		}
		port, _ := strconv.Atoi(u.Port())
		if port == 0 {
			port = map[string]int{"https": 443, "http": 80}[u.Scheme]
		}
		if !allowed(port) {
			t.Errorf("config reaches %s (port %d), which the NetworkPolicy's egress does not allow: add a rule in the overlay", u.Host, port)
		}
	}
}
