#!/usr/bin/env python3
"""The Kubernetes manifests under tools/deploy/kubernetes: every built-in resource passes
kubernetes-validate --strict (offline, against the schemas the package bundles); the KEDA
ScaledObject, a custom resource it has no schema for, is checked field by field here; and the
pieces refer to each other correctly (Service -> pods, probes -> /health on the named port,
Deployment -> ConfigMap holding a TOML config, HPA/KEDA -> the Deployment).

usage: check_manifests.py <tools/deploy dir>. Exit 77 (ctest: skipped) only when
kubernetes-validate is not installed, with a message saying so."""
import pathlib
import subprocess
import sys
import tomllib

try:
    import kubernetes_validate  # noqa: F401
    import yaml
except ImportError:
    print("SKIPPED: kubernetes-validate is not installed and could not be installed from PyPI "
          "(tools/test.sh runs: python3 -m pip install kubernetes-validate)")
    sys.exit(77)

problems = []


def check(ok, what):
    if not ok:
        problems.append(what)


deploy = pathlib.Path(sys.argv[1])
files = sorted((deploy / "kubernetes").rglob("*.yaml"))
docs = {}
for f in files:
    for doc in yaml.safe_load_all(f.read_text()):
        docs[(doc["kind"], doc["metadata"]["name"])] = (f, doc)

run = subprocess.run([sys.executable, "-m", "kubernetes_validate", "--strict", *map(str, files)],
                     capture_output=True, text=True)
print(run.stdout + run.stderr)
check(run.returncode == 0, f"kubernetes-validate exited {run.returncode}")
for (kind, name), (f, doc) in docs.items():
    custom = not doc["apiVersion"].startswith(("v1", "apps/", "autoscaling/"))
    verdict = f"{f.relative_to(deploy)} passed for resource {kind.lower()}/{name}"
    if custom:
        check(verdict not in run.stdout, f"{f}: a custom resource was expected to have no bundled schema")
    else:
        check(verdict in run.stdout, f"{f}: no 'passed' verdict for {kind}/{name}")

deployment = docs[("Deployment", "loom")][1]
pod = deployment["spec"]["template"]
container = pod["spec"]["containers"][0]
port_names = {p["name"]: p["containerPort"] for p in container["ports"]}
for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
    get = container[probe]["httpGet"]
    check(get["path"] == "/health" and get["port"] in port_names, f"{probe} is not /health on a named port")
check("cpu" in container["resources"]["requests"] and "memory" in container["resources"]["limits"],
      "the container has no cpu request or memory limit")
check(pod["spec"]["securityContext"]["runAsNonRoot"] is True, "the pod may run as root")

service = docs[("Service", "loom")][1]
check(all(pod["metadata"]["labels"].get(k) == v for k, v in service["spec"]["selector"].items()),
      "the Service selector does not match the pod labels")
check(service["spec"]["ports"][0]["targetPort"] in port_names, "the Service targets an unknown port")

volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
config_name = volumes["config"]["configMap"]["name"]
config_map = docs[("ConfigMap", config_name)][1]
toml = tomllib.loads(config_map["data"]["loom.toml"])
check(container["args"] == ["--config", "/etc/loom/loom.toml"], "the server is not given the mounted config")
check(toml["server"]["port"] == port_names["http"] and toml["server"]["host"] == "0.0.0.0",
      "the TOML does not listen on the container port on every interface")
check(toml["model"]["path"].startswith("/models/"), "the model is not read from the /models volume")

hpa = docs[("HorizontalPodAutoscaler", "loom")][1]
check(hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "loom"},
      "the HPA does not scale the Deployment")
check(hpa["spec"]["metrics"][0]["pods"]["metric"]["name"] == "loom:num_requests_waiting",
      "the HPA does not scale on loom:num_requests_waiting")

scaled = docs[("ScaledObject", "loom")][1]
check(scaled["apiVersion"] == "keda.sh/v1alpha1", "the ScaledObject is not keda.sh/v1alpha1")
check(scaled["spec"]["scaleTargetRef"]["name"] == deployment["metadata"]["name"], "KEDA scales something else")
trigger = scaled["spec"]["triggers"][0]
check(trigger["type"] == "prometheus" and "loom:num_requests_waiting" in trigger["metadata"]["query"],
      "the KEDA trigger is not a Prometheus query on loom:num_requests_waiting")
check(float(trigger["metadata"]["threshold"]) > 0, "the KEDA threshold is not a positive number")
check(scaled["spec"]["minReplicaCount"] <= scaled["spec"]["maxReplicaCount"], "KEDA min > max replicas")

adapter = yaml.safe_load(docs[("ConfigMap", "prometheus-adapter-loom")][1]["data"]["config.yaml"])
rule = adapter["rules"][0]
check(rule["name"]["as"] == "loom:num_requests_waiting", "the adapter rule does not serve the HPA's metric")

for p in problems:
    print("FAILED:", p)
print(f"{len(docs)} resources in {len(files)} files checked; {len(problems)} problems")
sys.exit(1 if problems else 0)
