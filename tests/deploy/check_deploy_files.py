#!/usr/bin/env python3
"""The Dockerfile and the systemd unit under tools/deploy say what a deployment needs, and the
Dockerfile's runtime stage installs every Debian package that holds a shared library the built
loom-server or an in-tree plugin links (found with ldd and dpkg -S on this Debian 12 build).

usage: check_deploy_files.py <tools/deploy dir> <dir with loom-server and the plugins>"""
import pathlib
import re
import shutil
import subprocess
import sys

deploy = pathlib.Path(sys.argv[1])
bin_dir = pathlib.Path(sys.argv[2])
problems = []


def check(ok, what):
    if not ok:
        problems.append(what)


# Dockerfile: two Debian 12 stages; the last runs as a non-root user, checks /health, exposes
# the port the entrypoint listens on and takes the model as a volume.
docker = (deploy / "Dockerfile").read_text()
stages = re.findall(r"^FROM\s+(\S+)(?:\s+AS\s+(\S+))?", docker, re.M)
check(len(stages) == 2 and all(image.startswith("debian:12") for image, _ in stages),
      f"expected two debian:12 stages, got {stages}")
runtime = docker[docker.rindex("\nFROM "):]
check(re.search(r"^COPY --from=build /opt/loom /opt/loom$", runtime, re.M) is not None,
      "the runtime stage does not take the installed tree from the build stage")
check(not re.search(r"-dev\b|build-essential|cmake", runtime), "the runtime stage installs build packages")
user = re.search(r"^USER\s+(\S+)", runtime, re.M)
check(user is not None and not user.group(1).startswith(("root", "0")), "the runtime stage runs as root")
check(re.search(r"^HEALTHCHECK .*\n?.*CMD curl -fsS http://127\.0\.0\.1:8080/health", runtime, re.M) is not None,
      "no HEALTHCHECK on /health")
check(re.search(r"^EXPOSE 8080$", runtime, re.M) is not None, "port 8080 is not exposed")
check('"--port", "8080"' in runtime and '"--host", "0.0.0.0"' in runtime,
      "the entrypoint does not listen on 0.0.0.0:8080")
check(re.search(r'^ENTRYPOINT \["/opt/loom/bin/loom-server"', runtime, re.M) is not None,
      "the entrypoint is not loom-server")
check(re.search(r'^VOLUME \["/models"\]$', runtime, re.M) is not None, "the model is not a volume")
# The package names: the continuation lines after `apt-get install ...`, up to the next `&&`.
runtime_packages = set()
install_at = runtime.find("apt-get install")
for line in runtime[install_at:].splitlines()[1:] if install_at >= 0 else []:
    if line.strip().startswith("&&"):
        break
    runtime_packages.update(re.findall(r"[a-z0-9][a-z0-9.+-]+", line.replace("\\", "")))
check(runtime_packages, "the runtime stage installs no packages")

# Every shared library ldd resolves for the server and the plugins comes from a package the
# runtime stage installs (libc6 and the dynamic loader are in every Debian image).
if shutil.which("ldd") and shutil.which("dpkg"):
    files = [bin_dir / "loom-server", *sorted(bin_dir.glob("libloom-*.so"))]
    libs = set()
    for f in files:
        out = subprocess.run(["ldd", str(f)], capture_output=True, text=True).stdout
        libs.update(m.group(1) for m in re.finditer(r"=>\s+(/\S+)", out))
    base = {"libc6", "libgcc-s1"}
    needed = set()
    for lib in sorted(libs):
        owner = subprocess.run(["dpkg", "-S", lib], capture_output=True, text=True)
        if owner.returncode != 0:  # /lib vs /usr/lib (merged /usr): ask for the other spelling
            other = lib[4:] if lib.startswith("/usr/") else "/usr" + lib
            owner = subprocess.run(["dpkg", "-S", other], capture_output=True, text=True)
        package = owner.stdout.split(":")[0].strip() if owner.returncode == 0 else None
        check(package is not None, f"{lib}: no Debian package owns it")
        if package:
            needed.add(package)
        if package and package not in base:
            check(package in runtime_packages, f"{lib} comes from {package}, which the runtime stage lacks")
    # And nothing more: the runtime stage holds the libraries used, plus curl for the health check.
    extra = runtime_packages - needed - base - {"curl", "ca-certificates"}
    check(not extra, f"the runtime stage installs packages no binary links: {sorted(extra)}")
    print(f"{len(libs)} shared libraries of {len(files)} files map to runtime packages")
else:
    print("note: no ldd/dpkg here; the runtime package list was not compared with the binaries")

# systemd unit: restarts on failure, stops with a drain (SIGTERM, then time), runs hardened.
unit = (deploy / "systemd" / "loom.service").read_text()
settings = dict(re.findall(r"^(\w+)=(.*)$", unit, re.M))
want = {"Restart": "on-failure", "KillSignal": "SIGTERM", "KillMode": "mixed", "User": "loom",
        "NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "yes", "PrivateTmp": "yes",
        "CapabilityBoundingSet": "", "RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX"}
for key, value in want.items():
    check(settings.get(key) == value, f"loom.service: {key}={settings.get(key)!r}, expected {value!r}")
check(settings.get("ExecStart", "").startswith("/opt/loom/bin/loom-server --config "),
      "loom.service does not start the installed loom-server with a config")
check(int(settings.get("TimeoutStopSec", "0").rstrip("s")) >= 10, "TimeoutStopSec leaves no time to drain")
if shutil.which("systemd-analyze"):
    verify = subprocess.run(["systemd-analyze", "verify", str(deploy / "systemd" / "loom.service")],
                            capture_output=True, text=True)
    # The binary and user may not exist on this machine; anything else is a problem with the unit.
    for line in (verify.stdout + verify.stderr).splitlines():
        if line.strip() and "loom-server" not in line and "User" not in line and "not found" not in line:
            problems.append(f"systemd-analyze verify: {line}")

for p in problems:
    print("FAILED:", p)
print(f"deploy files checked; {len(problems)} problems")
sys.exit(1 if problems else 0)
