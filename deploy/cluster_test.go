package deploy

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/toolsearch/toolsearch/pkg/testpki"
)

// controlPlane is a real Kubernetes control plane on loopback: etcd (from
// Debian's etcd-server), kube-apiserver, kube-controller-manager and
// kube-scheduler (built from k8s.io/kubernetes by make kube). No kubelet:
// the scheduler binds pods to nodes that are only API objects (addNodes),
// and the test plays the kubelet's part where it needs one (setReady).
type controlPlane struct {
	cfg    *rest.Config
	kube   *kubernetes.Clientset
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

const (
	fieldManager = "toolsearch-deploy-test"
	adminToken   = "deploy-test-admin-token"
)

// kubeAssets is where make kube put the control plane's binaries and the
// prometheus-operator CRDs. The test skips only when it is not set (a
// plain go test); make manifests always sets it, so CI never skips.
func kubeAssets(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("KUBE_ASSETS")
	if dir == "" {
		t.Skip("KUBE_ASSETS is not set: make manifests builds the control plane (make kube) and runs this test against it")
	}
	for _, f := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "crds", "cert-manager"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("KUBE_ASSETS=%s: %v (make kube builds it)", dir, err)
		}
	}
	return dir
}

func startControlPlane(t *testing.T, assets string) *controlPlane {
	t.Helper()
	dir := t.TempDir()
	etcd := os.Getenv("ETCD")
	if etcd == "" {
		etcd = "etcd"
	}
	probe := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	get := func(url string, header http.Header) error {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header = header
		resp, err := probe.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1000))
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %s", resp.Status, body)
		}
		return nil
	}
	attempt := 0
	_, ports := startOnPorts(t, 2, 60*time.Second, nil, etcd, func(ports []string) []string {
		attempt++ // a new data directory each time: a failed start may leave one behind
		client, peer := ports[0], ports[1]
		return []string{"--name", "deploy-test", "--data-dir", filepath.Join(dir, fmt.Sprintf("etcd-%d", attempt)),
			"--listen-client-urls", "http://127.0.0.1:" + client, "--advertise-client-urls", "http://127.0.0.1:" + client,
			"--listen-peer-urls", "http://127.0.0.1:" + peer, "--initial-advertise-peer-urls", "http://127.0.0.1:" + peer,
			"--initial-cluster", "deploy-test=http://127.0.0.1:" + peer}
	}, func(ports []string) error { return get("http://127.0.0.1:"+ports[0]+"/health", nil) })
	etcdClient := ports[0]

	// The service-account signing key, and one admin, by token, in
	// system:masters.
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	saKey := write("sa.key", pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}))
	saPub := write("sa.pub", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}))
	tokens := write("tokens.csv", []byte(adminToken+`,admin,admin-uid,"system:masters"`+"\n"))
	_, ports = startOnPorts(t, 1, 90*time.Second, nil, filepath.Join(assets, "kube-apiserver"), func(ports []string) []string {
		return []string{"--etcd-servers", "http://127.0.0.1:" + etcdClient,
			"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", ports[0],
			"--cert-dir", filepath.Join(dir, "certs"),
			"--token-auth-file", tokens, "--authorization-mode", "RBAC",
			"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
			"--service-account-key-file", saPub, "--service-account-signing-key-file", saKey,
			"--service-cluster-ip-range", "10.96.0.0/24",
			// One apiserver on loopback: no endpoints of its own to reconcile.
			"--endpoint-reconciler-type", "none"}
	}, func(ports []string) error {
		return get("https://127.0.0.1:"+ports[0]+"/readyz", http.Header{"Authorization": {"Bearer " + adminToken}})
	})
	server := "https://127.0.0.1:" + ports[0]
	kubeconfig := write("kubeconfig", []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: test, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: admin, user: {token: %q}}]
contexts: [{name: test, context: {cluster: test, user: admin}}]
current-context: test
`, server, adminToken)))

	cfg := &rest.Config{Host: server, BearerToken: adminToken, TLSClientConfig: rest.TLSClientConfig{Insecure: true}, QPS: 100, Burst: 200}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The controllers whose work the test reads: deployments make replica
	// sets, which make pods; the disruption controller counts a budget's
	// pods; the autoscaler owns the replica count; jobs make pods; every
	// namespace gets its default service account, which pods need.
	start(t, nil, filepath.Join(assets, "kube-controller-manager"),
		"--kubeconfig", kubeconfig, "--leader-elect=false", "--secure-port=0",
		"--controllers", "deployment,replicaset,disruption,horizontalpodautoscaling,job,serviceaccount",
		"--horizontal-pod-autoscaler-sync-period", "1s", "--concurrent-deployment-syncs", "2")
	// The scheduler without its default spreading (three pods a node,
	// five a zone, softly), which a cluster may configure away: the
	// manifests' own constraints must spread the replicas.
	schedulerConfig := write("scheduler.yaml", []byte(fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: %q}
leaderElection: {leaderElect: false}
profiles:
  - schedulerName: default-scheduler
    pluginConfig:
      - name: PodTopologySpread
        args: {defaultingType: List}
`, kubeconfig)))
	start(t, nil, filepath.Join(assets, "kube-scheduler"), "--config", schedulerConfig, "--secure-port=0")
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &controlPlane{cfg: cfg, kube: kube, dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))}
}

// waitFor polls check until it returns nil, failing the test with its last
// error after timeout.
func waitFor(t *testing.T, timeout time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting %s for %s: %v", timeout, what, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// apply server-side-applies objects, as kubectl apply --server-side does.
func (cp *controlPlane) apply(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		m, err := cp.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			cp.mapper.Reset()
			if m, err = cp.mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
				t.Fatalf("%s: %v", gvk, err)
			}
		}
		var ri dynamic.ResourceInterface = cp.dyn.Resource(m.Resource)
		if m.Scope.Name() == "namespace" {
			ns := o.GetNamespace()
			if ns == "" {
				ns = "default"
			}
			ri = cp.dyn.Resource(m.Resource).Namespace(ns)
		}
		if _, err := ri.Apply(context.Background(), o.GetName(), o, metav1.ApplyOptions{FieldManager: fieldManager, Force: true}); err != nil {
			t.Fatalf("apply %s %s/%s: %v", gvk.Kind, o.GetNamespace(), o.GetName(), err)
		}
	}
}

// objects renders a kustomization into objects to apply.
func objects(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var out []*unstructured.Unstructured
	for _, r := range res.Resources() {
		m, err := r.Map()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out
}

// yamlObjects reads the objects of a YAML file.
func yamlObjects(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, part := range bytes.Split(data, []byte("\n---")) {
		if len(bytes.TrimSpace(part)) == 0 {
			continue
		}
		var m map[string]any
		if err := yaml.Unmarshal(part, &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if m != nil {
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
	return out
}

// installCRDs installs the CRDs in the files given and waits until the
// API serves them.
func (cp *controlPlane) installCRDs(t *testing.T, files ...string) {
	t.Helper()
	var names []string
	for _, f := range files {
		objs := yamlObjects(t, f)
		cp.apply(t, objs)
		for _, o := range objs {
			names = append(names, o.GetName())
		}
	}
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	for _, name := range names {
		waitFor(t, 30*time.Second, name+" to be established", func() error {
			crd, err := cp.dyn.Resource(crds).Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
			for _, c := range conds {
				if m, ok := c.(map[string]any); ok && m["type"] == "Established" && m["status"] == "True" {
					return nil
				}
			}
			return fmt.Errorf("not established: %v", conds)
		})
	}
	cp.mapper.Reset()
}

// TestOnAPIServer applies every overlay, server-side, to a real API server
// with the controllers and the scheduler that act on what they hold, and
// checks what those make of it: the Deployment's replica set and pods, the
// autoscaler owning the replica count (an apply does not reset it), the
// disruption budget counting the pods, the replicas spread over zones and
// nodes, a rollout keeping them all ready, a node drain taking one pod at
// a time, the network policy selecting the service's pods and no other
// while letting the recall-eval Job's pod reach the service port, the
// ServiceMonitor and alert rules accepted by the operator's CRDs and the
// monitor selecting the Service, and the docs' Certificate accepted by
// cert-manager's CRD.
func TestOnAPIServer(t *testing.T) {
	assets := kubeAssets(t)
	cp := startControlPlane(t, assets)
	// The prometheus-operator's, for the ServiceMonitor and the alert
	// rules; cert-manager's Certificate, for the docs' example.
	cp.installCRDs(t, filepath.Join(assets, "crds", "monitoring.coreos.com_servicemonitors.yaml"),
		filepath.Join(assets, "crds", "monitoring.coreos.com_prometheusrules.yaml"),
		filepath.Join(assets, "cert-manager", "cert-manager.io_certificates.yaml"))
	ctx := context.Background()
	const ns = "tools"
	if _, err := cp.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cp.addNodes(t, clusterNodes)
	cp.apply(t, objects(t, "overlays/example"))
	alerts := yamlObjects(t, "ci/alerts.yaml")
	for _, o := range alerts {
		o.SetNamespace(ns)
	}
	cp.apply(t, alerts)

	hpa, err := cp.kube.AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "toolsearch", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := *hpa.Spec.MinReplicas
	deployment := func() *appsv1.Deployment {
		d, err := cp.kube.AppsV1().Deployments(ns).Get(ctx, "toolsearch", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	// Created without a count (1), then raised to the autoscaler's minimum.
	waitFor(t, 60*time.Second, "the autoscaler to set the Deployment's replicas", func() error {
		if r := *deployment().Spec.Replicas; r != want {
			return fmt.Errorf("replicas %d, want the autoscaler's minimum %d", r, want)
		}
		return nil
	})
	servicePods := func() []corev1.Pod {
		d := deployment()
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil {
			t.Fatal(err)
		}
		pods, err := cp.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
		if err != nil {
			t.Fatal(err)
		}
		return pods.Items
	}
	waitFor(t, 60*time.Second, "the Deployment's replica set to make its pods", func() error {
		sets, err := cp.kube.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		owned := 0
		for _, rs := range sets.Items {
			if len(rs.OwnerReferences) == 1 && rs.OwnerReferences[0].Name == "toolsearch" && rs.OwnerReferences[0].Kind == "Deployment" {
				owned++
			}
		}
		if owned != 1 {
			return fmt.Errorf("%d replica sets owned by the Deployment, want 1", owned)
		}
		if n := len(servicePods()); n != int(want) {
			return fmt.Errorf("%d pods, want %d", n, want)
		}
		return nil
	})
	// Applying again must leave the count to the autoscaler.
	cp.apply(t, objects(t, "overlays/example"))
	d := deployment()
	if r := *d.Spec.Replicas; r != want {
		t.Errorf("after a second apply the Deployment has %d replicas, want the autoscaler's %d: the manifests fight it", r, want)
	}
	for _, mf := range d.ManagedFields {
		if mf.Manager == fieldManager && mf.FieldsV1 != nil && strings.Contains(mf.FieldsV1.GetRawString(), `"f:replicas"`) {
			t.Error("the manifests own the Deployment's spec.replicas; the autoscaler should")
		}
	}

	waitFor(t, 60*time.Second, "the disruption budget to count the pods", func() error {
		pdb, err := cp.kube.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "toolsearch", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if pdb.Status.ExpectedPods != want {
			return fmt.Errorf("expected pods %d, want %d (status %+v)", pdb.Status.ExpectedPods, want, pdb.Status)
		}
		return nil
	})

	checkSpreadAndDrain(t, cp, ns, servicePods)

	// The recall-eval Job, beside the deployment.
	cp.apply(t, objects(t, "overlays/example-eval"))
	var evalPod corev1.Pod
	waitFor(t, 60*time.Second, "the recall-eval Job's pod", func() error {
		pods, err := cp.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=toolsearch-recall-eval"})
		if err != nil {
			return err
		}
		if len(pods.Items) != 1 {
			return fmt.Errorf("%d pods", len(pods.Items))
		}
		evalPod = pods.Items[0]
		return nil
	})

	policies, err := cp.kube.NetworkingV1().NetworkPolicies(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	all, err := cp.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	service := servicePods()
	var names []string
	for _, p := range service {
		names = append(names, p.Name)
	}
	for _, np := range policies.Items {
		sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		if err != nil {
			t.Fatal(err)
		}
		var selected []string
		for _, p := range all.Items {
			if sel.Matches(labels.Set(p.Labels)) {
				selected = append(selected, p.Name)
			}
		}
		slices.Sort(selected)
		slices.Sort(names)
		if !slices.Equal(selected, names) {
			t.Errorf("network policy %s selects %v, want exactly the service's pods %v", np.Name, selected, names)
		}
	}
	svc, err := cp.kube.CoreV1().Services(ns).Get(ctx, "toolsearch", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var svcPort *corev1.ServicePort
	for i, p := range svc.Spec.Ports {
		if p.Port == 8080 {
			svcPort = &svc.Spec.Ports[i]
		}
	}
	if svcPort == nil {
		t.Fatalf("the Service has no port 8080, which the Job calls")
	}
	// As the API server stored it: a client's connections stay with the
	// pod that holds its MCP session and search ids (TestOverlays checks
	// the timeout against the config).
	if svc.Spec.SessionAffinity != corev1.ServiceAffinityClientIP || svc.Spec.SessionAffinityConfig == nil || svc.Spec.SessionAffinityConfig.ClientIP == nil {
		t.Errorf("the Service's affinity is %q %+v, want ClientIP", svc.Spec.SessionAffinity, svc.Spec.SessionAffinityConfig)
	}
	for _, dst := range service {
		if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(dst.Labels)) {
			t.Errorf("the Service does not select pod %s", dst.Name)
		}
		target, ok := containerPort(dst, svcPort.TargetPort)
		if !ok {
			t.Errorf("pod %s has no port %s, the Service's target", dst.Name, svcPort.TargetPort.String())
			continue
		}
		if why := blocked(policies.Items, evalPod, dst, target); why != "" {
			t.Errorf("the recall-eval Job's pod cannot reach %s:%d: %s", dst.Name, target, why)
		}
	}

	checkEvalDisruption(t, cp, ns, evalPod)

	// The ServiceMonitor, as the operator's CRD stores it, selects the
	// Service and scrapes one of its ports.
	sm, err := cp.dyn.Resource(schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "servicemonitors"}).Namespace(ns).Get(ctx, "toolsearch", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	matchLabels, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	if len(matchLabels) == 0 || !labels.SelectorFromSet(matchLabels).Matches(labels.Set(svc.Labels)) {
		t.Errorf("the ServiceMonitor selects %v, the Service has labels %v", matchLabels, svc.Labels)
	}
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	for _, e := range endpoints {
		name, _ := e.(map[string]any)["port"].(string)
		if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == name }) {
			t.Errorf("the ServiceMonitor scrapes port %q, which the Service does not have", name)
		}
	}

	// The example served over HTTPS (components/tls), in its own
	// namespace: the API server stores the Secret's volume and the port's
	// appProtocol, and the Deployment's pods are made with them (no
	// kubelet starts them, as none would until cert-manager wrote the
	// Secret).
	const tlsNS = "tools-tls"
	if _, err := cp.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tlsNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cp.apply(t, objects(t, "overlays/example-tls"))
	tlsSvc, err := cp.kube.CoreV1().Services(tlsNS).Get(ctx, "toolsearch", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p := tlsSvc.Spec.Ports[0].AppProtocol; p == nil || *p != "https" {
		t.Errorf("the TLS overlay's Service port has appProtocol %v as stored, want https", p)
	}
	waitFor(t, 60*time.Second, "the TLS overlay's pods", func() error {
		pods, err := cp.kube.CoreV1().Pods(tlsNS).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(tlsSvc.Spec.Selector).String()})
		if err != nil {
			return err
		}
		if len(pods.Items) == 0 {
			return errors.New("no pods the Service selects")
		}
		for _, p := range pods.Items {
			if !slices.ContainsFunc(p.Spec.Volumes, func(v corev1.Volume) bool { return v.Secret != nil && v.Secret.SecretName == "toolsearch-tls" }) {
				return fmt.Errorf("pod %s mounts no Secret toolsearch-tls", p.Name)
			}
		}
		return nil
	})

	// docs/operations.md's Certificate, from which cert-manager writes
	// that Secret: its CRD takes it, and it names the Secret and the
	// Service's names a caller in its namespace uses, the recall-eval
	// Job's among them.
	cert := docsCertificate(t, "../docs/operations.md")
	cp.apply(t, []*unstructured.Unstructured{cert})
	stored, err := cp.dyn.Resource(schema.GroupVersionResource{Group: "cert-manager.io", Version: "v1", Resource: "certificates"}).
		Namespace(cert.GetNamespace()).Get(ctx, cert.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if secret, _, _ := unstructured.NestedString(stored.Object, "spec", "secretName"); secret != "toolsearch-tls" {
		t.Errorf("the docs' Certificate writes the Secret %q; the TLS component mounts toolsearch-tls", secret)
	}
	dnsNames, _, _ := unstructured.NestedStringSlice(stored.Object, "spec", "dnsNames")
	name := tlsSvc.Name
	for _, want := range []string{name, name + "." + cert.GetNamespace() + ".svc", name + "." + cert.GetNamespace() + ".svc.cluster.local", jobHost(t, "overlays/example-eval-tls")} {
		if !slices.Contains(dnsNames, want) {
			t.Errorf("the docs' Certificate's dnsNames %v lack %s", dnsNames, want)
		}
	}
}

// clusterNodes are the nodes the scheduler places pods on: three zones,
// the first with three large nodes, the others with two small ones each.
// The scheduler's resource scoring prefers larger nodes, so replicas left
// to it crowd the first zone's nodes (six went four and two to two of
// them), and replicas spread over nodes but not zones fill that zone
// first.
var clusterNodes = []node{
	{"zone-a-1", "zone-a", "32", "128Gi"},
	{"zone-a-2", "zone-a", "16", "64Gi"},
	{"zone-a-3", "zone-a", "16", "64Gi"},
	{"zone-b-1", "zone-b", "2", "8Gi"},
	{"zone-b-2", "zone-b", "2", "8Gi"},
	{"zone-c-1", "zone-c", "2", "8Gi"},
	{"zone-c-2", "zone-c", "2", "8Gi"},
}

type node struct{ name, zone, cpu, memory string }

// addNodes registers nodes as a kubelet would: labelled with their host
// name and zone, Ready, with their capacity, untainted. No node
// controller runs, so they stay so.
func (cp *controlPlane) addNodes(t *testing.T, nodes []node) {
	t.Helper()
	ctx := context.Background()
	for _, n := range nodes {
		created, err := cp.kube.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: map[string]string{
			corev1.LabelHostname: n.name, corev1.LabelTopologyZone: n.zone, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
		}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		capacity := corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(n.cpu), corev1.ResourceMemory: resource.MustParse(n.memory), corev1.ResourcePods: resource.MustParse("110"),
		}
		created.Status = corev1.NodeStatus{Capacity: capacity, Allocatable: capacity, Phase: corev1.NodeRunning,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}}
		updated, err := cp.kube.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// The API server taints a new node not-ready; the node controller
		// would lift the taint once the node reports Ready.
		updated.Spec.Taints = nil
		if _, err := cp.kube.CoreV1().Nodes().Update(ctx, updated, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// isReady is whether a pod's Ready condition is true.
func isReady(p corev1.Pod) bool {
	return slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool {
		return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue
	})
}

// setReady does a kubelet's part once a pod is bound to its node: the
// pod runs, and its containers are ready or not.
func (cp *controlPlane) setReady(t *testing.T, ns, name string, ready bool) {
	t.Helper()
	ctx := context.Background()
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	waitFor(t, 30*time.Second, fmt.Sprintf("pod %s to be marked ready=%t", name, ready), func() error {
		p, err := cp.kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.Now()
		p.Status.Phase = corev1.PodRunning
		if p.Status.StartTime == nil {
			p.Status.StartTime = &now
		}
		p.Status.Conditions = slices.DeleteFunc(p.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type != corev1.PodScheduled })
		p.Status.Conditions = append(p.Status.Conditions,
			corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: now},
			corev1.PodCondition{Type: corev1.ContainersReady, Status: status, LastTransitionTime: now},
			corev1.PodCondition{Type: corev1.PodReady, Status: status, LastTransitionTime: now})
		_, err = cp.kube.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		return err // a conflict with the scheduler's write: read and try again
	})
}

// checkSpreadAndDrain checks, with the real scheduler, what becomes of
// replicas scaled out for load (the autoscaler's minimum raised to one
// less than the nodes): they are spread evenly over the zones, each on a
// node of its own; a rollout replaces them all with never one fewer
// ready, its own pods spread as evenly; a release that never becomes
// ready leaves every old pod serving until it is undone; a node drain
// goes one pod at a time however many there are; and a drain is not held
// up by replicas stuck unready.
func checkSpreadAndDrain(t *testing.T, cp *controlPlane, ns string, servicePods func() []corev1.Pod) {
	t.Helper()
	r := &replicas{t: t, cp: cp, ns: ns, all: servicePods, want: int32(len(clusterNodes) - 1), zoneOf: map[string]string{}, zones: map[string]bool{}}
	for _, n := range clusterNodes {
		r.zoneOf[n.name], r.zones[n.zone] = n.zone, true
	}
	patch := fmt.Appendf(nil, `{"spec":{"minReplicas":%d}}`, r.want)
	if _, err := cp.kube.AutoscalingV2().HorizontalPodAutoscalers(ns).Patch(context.Background(), "toolsearch", types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "load"}); err != nil {
		t.Fatal(err)
	}
	r.spread("the scaled-out pods")
	for _, p := range r.pods {
		cp.setReady(t, ns, p.Name, true)
	}
	waitFor(t, 60*time.Second, "the disruption budget to allow one disruption of the scaled-out replicas", r.budget(r.want, 1))
	r.rollout()
	r.badRelease()
	r.drain()
	r.stuckUnready()
}

// checkEvalDisruption plays the kubelet for the recall-eval Job's pods: one
// evicted (failed with DisruptionTarget, as eviction, preemption and a
// node's shutdown mark a pod) is run again, its failure not counted; one
// that fails on its own (the eval's exit 1: recall under the gate) fails
// the Job at once, with no other run.
func checkEvalDisruption(t *testing.T, cp *controlPlane, ns string, first corev1.Pod) {
	t.Helper()
	ctx := context.Background()
	jobs := cp.kube.BatchV1().Jobs(ns)
	fail := func(name string, evicted bool) {
		t.Helper()
		waitFor(t, 30*time.Second, "pod "+name+" to be marked failed", func() error {
			p, err := cp.kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			now := metav1.Now()
			p.Status.Phase = corev1.PodFailed
			code := int32(1)
			if evicted {
				code = 137
				p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
					Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting", LastTransitionTime: now})
			}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "eval", Image: p.Spec.Containers[0].Image,
				State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, StartedAt: now, FinishedAt: now}}}}
			_, err = cp.kube.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
			return err
		})
	}
	failed := func() (bool, error) {
		job, err := jobs.Get(ctx, "toolsearch-recall-eval", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return slices.ContainsFunc(job.Status.Conditions, func(c batchv1.JobCondition) bool {
			return c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue
		}), nil
	}
	runs := func() ([]corev1.Pod, error) {
		pods, err := cp.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=toolsearch-recall-eval"})
		if err != nil {
			return nil, err
		}
		return pods.Items, nil
	}
	fail(first.Name, true)
	var second string
	waitFor(t, 60*time.Second, "the Job to run its evicted pod again", func() error {
		if f, err := failed(); err != nil || f {
			if f {
				t.Fatal("the Job failed when its pod was evicted: a drain during the pipeline is no verdict on the release")
			}
			return err
		}
		pods, err := runs()
		if err != nil {
			return err
		}
		for _, p := range pods {
			if p.Name != first.Name {
				second = p.Name
				return nil
			}
		}
		return fmt.Errorf("%d pods", len(pods))
	})
	fail(second, false)
	waitFor(t, 60*time.Second, "the Job to fail on its pod's own failure", func() error {
		f, err := failed()
		if err == nil && !f {
			err = errors.New("not failed")
		}
		return err
	})
	if pods, err := runs(); err != nil || len(pods) != 2 {
		t.Errorf("%d pods of the Job (%v), want 2: a failure of its own is not run again (backoffLimit 0)", len(pods), err)
	}
}

// replicas is the Deployment's pods as checkSpreadAndDrain follows them:
// pods, placed (pod to node) and perNode are as spread last found them,
// and placed also records each replacement since.
type replicas struct {
	t      *testing.T
	cp     *controlPlane
	ns     string
	all    func() []corev1.Pod
	want   int32
	zoneOf map[string]string
	zones  map[string]bool

	pods    []corev1.Pod
	placed  map[string]string
	perNode map[string]int
}

// live are the pods not being deleted, once all are bound to nodes.
func (r *replicas) live() ([]corev1.Pod, error) {
	var out []corev1.Pod
	for _, p := range r.all() {
		if p.DeletionTimestamp != nil {
			continue
		}
		if p.Spec.NodeName == "" {
			return nil, fmt.Errorf("pod %s is not scheduled yet", p.Name)
		}
		out = append(out, p)
	}
	return out, nil
}

// spread waits for want pods to be placed and checks that each zone has
// as many and each node at most one.
func (r *replicas) spread(what string) {
	t := r.t
	t.Helper()
	waitFor(t, 60*time.Second, "the scheduler to place "+what, func() (err error) {
		r.pods, err = r.live()
		if err == nil && len(r.pods) != int(r.want) {
			err = fmt.Errorf("%d pods placed, want %d", len(r.pods), r.want)
		}
		return err
	})
	r.placed, r.perNode = map[string]string{}, map[string]int{}
	perZone := map[string]int{}
	for _, p := range r.pods {
		r.placed[p.Name] = p.Spec.NodeName
		r.perNode[p.Spec.NodeName]++
		perZone[r.zoneOf[p.Spec.NodeName]]++
	}
	even := int(r.want) / len(r.zones)
	for z := range r.zones {
		if perZone[z] != even {
			t.Errorf("%s: zone %s has %d of the %d replicas, want %d (placed: %v)", what, z, perZone[z], r.want, even, r.placed)
		}
	}
	if len(r.perNode) != int(r.want) {
		t.Errorf("%s: the %d replicas are on %d nodes, want one to a node (placed: %v)", what, r.want, len(r.perNode), r.placed)
	}
}

// budget checks the disruption budget's view: healthy pods, and the
// disruptions it allows.
func (r *replicas) budget(healthy, allowed int32) func() error {
	return func() error {
		pdb, err := r.cp.kube.PolicyV1().PodDisruptionBudgets(r.ns).Get(context.Background(), "toolsearch", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if pdb.Status.ObservedGeneration != pdb.Generation || pdb.Status.CurrentHealthy != healthy || pdb.Status.DisruptionsAllowed != allowed {
			return fmt.Errorf("status %+v, want %d healthy and %d disruptions allowed", pdb.Status, healthy, allowed)
		}
		return nil
	}
}

func (r *replicas) evict(p corev1.Pod) error {
	return r.cp.kube.PolicyV1().Evictions(r.ns).Evict(context.Background(), &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: r.ns}})
}

// remove does the kubelet's part once a pod is deleted: it stops it, and
// the pod is gone.
func (r *replicas) remove(name string) error {
	err := r.cp.kube.CoreV1().Pods(r.ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// rollout restarts the Deployment as kubectl rollout restart does and
// plays the kubelet until every pod is replaced: never one fewer ready
// (maxUnavailable 0), and the new replica set spread on its own.
func (r *replicas) rollout() {
	t := r.t
	t.Helper()
	ctx := context.Background()
	if _, err := r.cp.kube.AppsV1().Deployments(r.ns).Patch(ctx, "toolsearch", types.StrategicMergePatchType,
		[]byte(`{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":"2026-12-07T00:00:00Z"}}}}}`),
		metav1.PatchOptions{FieldManager: "kubectl-rollout"}); err != nil {
		t.Fatal(err)
	}
	fewest := int(r.want)
	waitFor(t, 120*time.Second, "the rollout to replace every pod", func() error {
		ready := 0
		for _, p := range r.all() {
			switch {
			case p.DeletionTimestamp != nil:
				if err := r.remove(p.Name); err != nil {
					return err
				}
			case isReady(p):
				ready++
			case p.Spec.NodeName != "": // the kubelet starts it
				r.cp.setReady(t, r.ns, p.Name, true)
			}
		}
		fewest = min(fewest, ready)
		d, err := r.cp.kube.AppsV1().Deployments(r.ns).Get(ctx, "toolsearch", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if st := d.Status; st.ObservedGeneration != d.Generation || st.UpdatedReplicas != r.want || st.ReadyReplicas != r.want || st.Replicas != r.want {
			return fmt.Errorf("status %+v", st)
		}
		return nil
	})
	if fewest < int(r.want) {
		t.Errorf("during the rollout only %d pods were ready, want %d throughout", fewest, r.want)
	}
	r.spread("the rollout's pods")
	waitFor(t, 60*time.Second, "the disruption budget to count the rollout's pods", r.budget(r.want, 1))
}

// badRelease rolls out a release whose pods never become ready (a
// catalog that does not load, a crash at start): the old pods go on
// serving, every one of them (maxUnavailable 0), beside the one surge
// pod; and undoing the release, as kubectl rollout undo does, removes
// that pod and keeps every old one.
func (r *replicas) badRelease() {
	t := r.t
	t.Helper()
	ctx := context.Background()
	old := map[string]bool{}
	for _, p := range r.pods {
		old[p.Name] = true
	}
	release := func(patch string) {
		t.Helper()
		if _, err := r.cp.kube.AppsV1().Deployments(r.ns).Patch(ctx, "toolsearch", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "release"}); err != nil {
			t.Fatal(err)
		}
	}
	// play is the kubelet: the old pods stay ready, the release's never
	// become so. It counts the fewest old pods ready, and returns the
	// release's pods and the Deployment's status once its controller has
	// seen the latest change.
	started := map[string]bool{}
	fewest := int(r.want)
	var st appsv1.DeploymentStatus
	play := func() (bad []string, err error) {
		ready := 0
		for _, p := range r.all() {
			switch {
			case p.DeletionTimestamp != nil:
				if err := r.remove(p.Name); err != nil {
					return nil, err
				}
			case old[p.Name]:
				if isReady(p) {
					ready++
				}
			default:
				bad = append(bad, p.Name)
				if p.Spec.NodeName != "" && !started[p.Name] {
					r.cp.setReady(t, r.ns, p.Name, false)
					started[p.Name] = true
				}
			}
		}
		fewest = min(fewest, ready)
		d, err := r.cp.kube.AppsV1().Deployments(r.ns).Get(ctx, "toolsearch", metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if st = d.Status; st.ObservedGeneration != d.Generation {
			return nil, fmt.Errorf("generation %d not observed yet", d.Generation)
		}
		return bad, nil
	}
	release(`{"spec":{"template":{"metadata":{"annotations":{"toolsearch.test/release":"never-ready"}}}}}`)
	waitFor(t, 60*time.Second, "the bad release's surge pod to start, unready", func() error {
		bad, err := play()
		if err == nil && (st.UpdatedReplicas == 0 || len(bad) != int(st.UpdatedReplicas) || len(started) != len(bad)) {
			err = fmt.Errorf("status %+v; the release's pods %v, %d of them started", st, bad, len(started))
		}
		return err
	})
	if st.UpdatedReplicas != 1 || st.ReadyReplicas != r.want || st.Replicas != r.want+1 {
		t.Errorf("a release that never becomes ready: status %+v, want the %d old pods ready and one surge pod of the release", st, r.want)
	}
	release(`{"spec":{"template":{"metadata":{"annotations":{"toolsearch.test/release":null}}}}}`)
	waitFor(t, 60*time.Second, "the undone release's pods to go", func() error {
		bad, err := play()
		if err == nil && (len(bad) != 0 || st.UpdatedReplicas != r.want || st.ReadyReplicas != r.want || st.Replicas != r.want) {
			err = fmt.Errorf("status %+v; the release's pods %v", st, bad)
		}
		return err
	})
	if fewest < int(r.want) {
		t.Errorf("during a release that never became ready, only %d of the old pods were ready, want %d throughout", fewest, r.want)
	}
	r.spread("the pods kept through an undone release")
	for _, p := range r.pods {
		if !old[p.Name] {
			t.Errorf("pod %s is new: undoing a release that never became ready replaced pods that were serving", p.Name)
		}
	}
}

// replacement waits for the replacement of an evicted pod to be placed.
func (r *replicas) replacement(evicted string) corev1.Pod {
	r.t.Helper()
	var found corev1.Pod
	waitFor(r.t, 60*time.Second, "the replacement of "+evicted+" to be placed", func() error {
		now, err := r.live()
		if err != nil {
			return err
		}
		for _, p := range now {
			if _, old := r.placed[p.Name]; !old {
				found = p
				return nil
			}
		}
		return errors.New("no new pod")
	})
	r.placed[found.Name] = found.Spec.NodeName
	return found
}

// drain cordons the node of the first pod and evicts as kubectl drain
// does: the budget lets that pod go and refuses the next until its
// replacement is ready, and the replacement goes to the one node with no
// replica, not back to the cordoned node.
func (r *replicas) drain() {
	t := r.t
	t.Helper()
	ctx := context.Background()
	first, second := r.pods[0], r.pods[1]
	n, err := r.cp.kube.CoreV1().Nodes().Get(ctx, first.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Spec.Unschedulable = true
	if _, err := r.cp.kube.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := r.evict(first); err != nil {
		t.Fatalf("evicting %s, the first pod of a drain: %v", first.Name, err)
	}
	if err := r.evict(second); !apierrors.IsTooManyRequests(err) {
		t.Errorf("evicting a second pod while the first's replacement is not ready: %v; want it refused by the disruption budget", err)
	}
	replacement := r.replacement(first.Name)
	if on := replacement.Spec.NodeName; r.perNode[on] > 0 {
		t.Errorf("the replacement went to %s, which holds a replica already (placed before the drain: %v); want the one node with none", on, r.placed)
	}
	// The kubelet stops the evicted pod; the replacement starts and is
	// ready; the drain may take the next pod.
	if err := r.remove(first.Name); err != nil {
		t.Fatal(err)
	}
	r.cp.setReady(t, r.ns, replacement.Name, true)
	waitFor(t, 60*time.Second, "the disruption budget to allow one disruption again", r.budget(r.want, 1))
	if err := r.evict(second); err != nil {
		t.Fatalf("evicting a second pod once the first's replacement is ready: %v", err)
	}
	if err := r.remove(second.Name); err != nil {
		t.Fatal(err)
	}
	r.cp.setReady(t, r.ns, r.replacement(second.Name).Name, true)
	waitFor(t, 60*time.Second, "the disruption budget to count the second replacement", r.budget(r.want, 1))
}

// stuckUnready marks two replicas unready: the budget is short, so no
// ready pod may be evicted, but the unready ones may (they serve no one).
func (r *replicas) stuckUnready() {
	t := r.t
	t.Helper()
	stuck, ready := r.pods[2:4], r.pods[4]
	for _, p := range stuck {
		r.cp.setReady(t, r.ns, p.Name, false)
	}
	waitFor(t, 60*time.Second, "the disruption budget to count two pods unready", r.budget(r.want-2, 0))
	if err := r.evict(ready); !apierrors.IsTooManyRequests(err) {
		t.Errorf("evicting a ready pod while two are unready: %v; want it refused by the disruption budget", err)
	}
	if err := r.evict(stuck[0]); err != nil {
		t.Errorf("evicting an unready pod while the budget is short: %v; a drain should not wait on a pod that serves no one", err)
	}
}

// docsCertificate is the cert-manager Certificate of path's YAML blocks.
func docsCertificate(t *testing.T, path string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, block := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllSubmatch(data, -1) {
		var m map[string]any
		if err := yaml.UnmarshalStrict(block[1], &m); err != nil {
			continue // a fragment, not an object
		}
		if m["kind"] == "Certificate" {
			return &unstructured.Unstructured{Object: m}
		}
	}
	t.Fatalf("%s has no YAML block of a Certificate", path)
	return nil
}

// jobHost is the host the recall-eval Job of overlay calls, named in its
// args or its environment.
func jobHost(t *testing.T, overlay string) string {
	t.Helper()
	for _, o := range objects(t, overlay) {
		if o.GetKind() != "Job" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			values, _, _ := unstructured.NestedStringSlice(c.(map[string]any), "args")
			env, _, _ := unstructured.NestedSlice(c.(map[string]any), "env")
			for _, e := range env {
				if v, ok := e.(map[string]any)["value"].(string); ok {
					values = append(values, v)
				}
			}
			for _, v := range values {
				if u, err := url.Parse(v); err == nil && u.Scheme == "https" {
					return u.Hostname()
				}
			}
		}
	}
	t.Fatalf("%s: no Job naming an https:// URL", overlay)
	return ""
}

// containerPort resolves a Service's target port on a pod.
func containerPort(p corev1.Pod, target intstr.IntOrString) (int32, bool) {
	if target.Type == intstr.Int {
		return target.IntVal, true
	}
	for _, c := range p.Spec.Containers {
		for _, cp := range c.Ports {
			if cp.Name == target.StrVal {
				return cp.ContainerPort, true
			}
		}
	}
	return 0, false
}

// blocked is why the network policies (in the pods' one namespace) keep
// src from reaching dst on port, or "" when they let it: src's egress and
// dst's ingress must each be unrestricted or allowed by a rule whose peers
// and ports admit the other, as a conforming network plugin enforces.
func blocked(policies []networkingv1.NetworkPolicy, src, dst corev1.Pod, port int32) string {
	selects := func(np networkingv1.NetworkPolicy, p corev1.Pod) bool {
		sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		return err == nil && sel.Matches(labels.Set(p.Labels))
	}
	has := func(np networkingv1.NetworkPolicy, t networkingv1.PolicyType) bool {
		if len(np.Spec.PolicyTypes) == 0 {
			return t == networkingv1.PolicyTypeIngress || len(np.Spec.Egress) > 0
		}
		return slices.Contains(np.Spec.PolicyTypes, t)
	}
	peersAdmit := func(peers []networkingv1.NetworkPolicyPeer, p corev1.Pod) bool {
		if len(peers) == 0 {
			return true
		}
		for _, peer := range peers {
			if peer.PodSelector != nil && peer.NamespaceSelector == nil && peer.IPBlock == nil {
				if sel, err := metav1.LabelSelectorAsSelector(peer.PodSelector); err == nil && sel.Matches(labels.Set(p.Labels)) {
					return true
				}
			}
			if peer.NamespaceSelector != nil && len(peer.NamespaceSelector.MatchLabels) == 0 && len(peer.NamespaceSelector.MatchExpressions) == 0 && peer.PodSelector == nil {
				return true // every namespace
			}
		}
		return false
	}
	portsAdmit := func(ports []networkingv1.NetworkPolicyPort, on corev1.Pod) bool {
		if len(ports) == 0 {
			return true
		}
		for _, pp := range ports {
			if pp.Protocol != nil && *pp.Protocol != corev1.ProtocolTCP {
				continue
			}
			if pp.Port == nil {
				return true
			}
			if n, ok := containerPort(on, *pp.Port); ok && (n == port || pp.EndPort != nil && n <= port && port <= *pp.EndPort) {
				return true
			}
		}
		return false
	}
	var egress, ingress []networkingv1.NetworkPolicy
	for _, np := range policies {
		if selects(np, src) && has(np, networkingv1.PolicyTypeEgress) {
			egress = append(egress, np)
		}
		if selects(np, dst) && has(np, networkingv1.PolicyTypeIngress) {
			ingress = append(ingress, np)
		}
	}
	if len(egress) > 0 && !slices.ContainsFunc(egress, func(np networkingv1.NetworkPolicy) bool {
		return slices.ContainsFunc(np.Spec.Egress, func(r networkingv1.NetworkPolicyEgressRule) bool {
			return peersAdmit(r.To, dst) && portsAdmit(r.Ports, dst)
		})
	}) {
		return "the egress of " + src.Name + " does not allow it (policies " + policyNames(egress) + ")"
	}
	if len(ingress) > 0 && !slices.ContainsFunc(ingress, func(np networkingv1.NetworkPolicy) bool {
		return slices.ContainsFunc(np.Spec.Ingress, func(r networkingv1.NetworkPolicyIngressRule) bool {
			return peersAdmit(r.From, src) && portsAdmit(r.Ports, dst)
		})
	}) {
		return "the ingress of " + dst.Name + " does not allow it (policies " + policyNames(ingress) + ")"
	}
	return ""
}

func policyNames(ps []networkingv1.NetworkPolicy) string {
	var names []string
	for _, p := range ps {
		names = append(names, p.Name)
	}
	return strings.Join(names, ", ")
}

// TestAlertRules checks the alert rules with promtool (Debian's prometheus
// package): that they parse, that they fire as deploy/ci/alerts_test.yaml
// says on its series, and that every metric they read is one the service
// exports (scraped from the binary, with an upstream configured so that
// the upstream families exist).
func TestAlertRules(t *testing.T) {
	promtool := os.Getenv("PROMTOOL")
	if promtool == "" {
		t.Skip("PROMTOOL is not set: make manifests installs Debian's prometheus package and sets it")
	}
	dir := t.TempDir()
	objs := yamlObjects(t, "ci/alerts.yaml")
	groups, _, err := unstructured.NestedSlice(objs[0].Object, "spec", "groups")
	if err != nil || len(groups) == 0 {
		t.Fatalf("ci/alerts.yaml: no rule groups (%v)", err)
	}
	rules, err := yaml.Marshal(map[string]any{"groups": groups})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts.rules.yaml"), rules, 0o644); err != nil {
		t.Fatal(err)
	}
	tests, err := os.ReadFile("ci/alerts_test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "alerts_test.yaml"), tests, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"check", "rules", "alerts.rules.yaml"}, {"test", "rules", "alerts_test.yaml"}} {
		cmd := exec.Command(promtool, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}

	exported := scrapeNames(t)
	for _, g := range groups {
		rs, _ := g.(map[string]any)["rules"].([]any)
		for _, r := range rs {
			rule := r.(map[string]any)
			expr, _ := rule["expr"].(string)
			for _, name := range metricNames(expr) {
				if !exported[name] {
					t.Errorf("alert %v reads %s, which the service does not export", rule["alert"], name)
				}
			}
		}
	}
}

// scrapeNames is every metric family the service exports, from a running
// binary's /metrics, with an (unreachable) upstream configured so that
// the upstream families exist.
func scrapeNames(t *testing.T) map[string]bool {
	t.Helper()
	dir := t.TempDir()
	// An upstream given a client certificate: its expiry is exported
	// whether or not the upstream answers.
	ca := testpki.MustCA(t, "cluster CA")
	caFile, certFile, keyFile, err := ca.ClientFiles(dir, "toolsearch")
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte("upstreams:\n  - name: gone\n    url: https://127.0.0.1:1/mcp\n    tls: {ca_file: "+caFile+", cert_file: "+certFile+", key_file: "+keyFile+"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Serving its API over HTTPS, whose certificate's expiry is exported.
	servingCert, servingKey, err := ca.ServerFiles(t.TempDir(), "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}}
	// Ready on both listeners, the API's answering with this server's own
	// certificate: whatever else holds a port, this server does not.
	srv, addrs := serve(t, 2, func(addrs []string) []string {
		return []string{"-addr", addrs[0], "-metrics-addr", addrs[1], "-config", cfg, "-catalog", "base/catalog.yaml",
			"-tls-cert-file", servingCert, "-tls-key-file", servingKey}
	}, func(addrs []string) error {
		if err := readyz("http://" + addrs[1] + "/readyz"); err != nil {
			return err
		}
		resp, err := client.Get("https://" + addrs[0] + "/readyz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("the API's readyz: %s", resp.Status)
		}
		return nil
	})
	addr, metrics := addrs[0], addrs[1]
	// One search, so that the families a search counts have their series.
	resp, err := client.Post("https://"+addr+"/mcp/tool-search", "application/json", strings.NewReader(`{"query":"list files"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var body []byte
	waitFor(t, 30*time.Second, "the service's /metrics", func() error {
		resp, err := http.Get("http://" + metrics + "/metrics")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		var buf bytes.Buffer
		buf.ReadFrom(resp.Body)
		if resp.StatusCode != http.StatusOK || !bytes.Contains(buf.Bytes(), []byte("toolsearch_upstream_up")) {
			return fmt.Errorf("%s, no upstream metrics yet; log:\n%s", resp.Status, srv.tail(4000))
		}
		body = buf.Bytes()
		return nil
	})
	names := map[string]bool{}
	for _, line := range strings.Split(string(body), "\n") {
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			name, kind, _ := strings.Cut(rest, " ")
			names[name] = true
			if kind == "histogram" || kind == "summary" {
				for _, s := range []string{"_bucket", "_sum", "_count"} {
					names[name+s] = true
				}
			}
		}
	}
	return names
}

// metricNames are the toolsearch_ series an alert expression reads.
func metricNames(expr string) []string {
	var out []string
	for i := 0; i < len(expr); {
		j := strings.Index(expr[i:], "toolsearch_")
		if j < 0 {
			break
		}
		start := i + j
		end := start
		for end < len(expr) && (expr[end] == '_' || expr[end] >= 'a' && expr[end] <= 'z' || expr[end] >= '0' && expr[end] <= '9') {
			end++
		}
		if !slices.Contains(out, expr[start:end]) {
			out = append(out, expr[start:end])
		}
		i = end
	}
	return out
}
