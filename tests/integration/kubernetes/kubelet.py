#!/usr/bin/env python3
"""The test cluster's stand-in for a kubelet's container runtime.

KWOK plays the kubelets of the test cluster: it moves pods through their
phases, but runs nothing. This program runs what a real kubelet would run
for each pod of one namespace that KWOK has made Running on a GPU node:
the pod's one container, from the pod spec that the real Job controller
wrote, with the files of the Secret volume it mounts, the environment it
declares (values, and the downward API fields: annotations, the node's
name), and its command. When the container exits, its exit code is put
on the pod as the annotation navette.test/exit-code, which KWOK's stage
(tests/stack/k8s/stages.yaml) turns into the container's termination. A
pod that is being deleted has its container stopped (SIGTERM), as a
kubelet does; one that KWOK ended from outside (a disruption: the stage
of navette.test/disrupt) has it killed.

Two ways to run a container:
  --host    the command on this machine, with the pod's paths
            (/navette/secret, /navette/work) moved under --root: fast,
            for the tests of navette's job cycle;
  --podman  the pod's image, pulled by digest, in podman, the volumes
            mounted where the pod spec says: what a kubelet does.

Usage: kubelet.py --kubectl "KUBECTL ARGS" --namespace NS --root DIR
                  (--host | --podman) [--podman-args "ARGS"]
Runs until it is killed (SIGTERM); each container's output goes to
DIR/<pod>/output.
"""
import argparse
import base64
import json
import os
import shlex
import signal
import subprocess
import sys
import time

ANNOTATION = "navette.test/exit-code"
POD_PATHS = ("/navette/secret", "/navette/work")


def kubectl(args, base, stdin=None):
    return subprocess.run(base + args, input=stdin, capture_output=True,
                          text=True, timeout=60)


def field_value(pod, path):
    """The value of a downward API fieldPath of pod, or ''."""
    if path == "spec.nodeName":
        return pod["spec"].get("nodeName", "")
    if path == "metadata.name":
        return pod["metadata"]["name"]
    if path == "metadata.namespace":
        return pod["metadata"]["namespace"]
    if path.startswith("metadata.annotations['") and path.endswith("']"):
        key = path[len("metadata.annotations['"):-2]
        return (pod["metadata"].get("annotations") or {}).get(key, "")
    if path.startswith("metadata.labels['") and path.endswith("']"):
        key = path[len("metadata.labels['"):-2]
        return (pod["metadata"].get("labels") or {}).get(key, "")
    raise SystemExit("kubelet.py: fieldPath %r is not handled" % path)


def write_secret_volume(pod, volume, base, target):
    """The files of a Secret volume (its items) under target."""
    secret = volume["secret"]
    got = kubectl(["get", "secret", secret["secretName"], "-o", "json"], base)
    if got.returncode != 0:
        return "secret %s: %s" % (secret["secretName"], got.stderr.strip())
    data = json.loads(got.stdout).get("data") or {}
    items = secret.get("items") or [{"key": k, "path": k} for k in data]
    for item in items:
        if item["key"] not in data:
            return "secret %s has no key %s" % (secret["secretName"],
                                                item["key"])
        path = os.path.join(target, item["path"])
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(base64.b64decode(data[item["key"]]))
        os.chmod(path, secret.get("defaultMode", 0o644) | 0o400)
    return None


def start(pod, args, base):
    """Starts the pod's container; returns (process, error)."""
    name = pod["metadata"]["name"]
    root = os.path.join(args.root, name)
    os.makedirs(root, exist_ok=True)
    spec = pod["spec"]
    (container,) = spec["containers"]
    mounts = {}
    for volume in spec.get("volumes") or []:
        where = os.path.join(root, "vol-" + volume["name"])
        os.makedirs(where, exist_ok=True)
        if "secret" in volume:
            err = write_secret_volume(pod, volume, base, where)
            if err:
                return None, err
        elif "emptyDir" not in volume:
            return None, "volume %s is neither a Secret nor an emptyDir" % (
                volume["name"])
        mounts[volume["name"]] = where
    env = {}
    for e in container.get("env") or []:
        if "value" in e:
            env[e["name"]] = e["value"]
        else:
            env[e["name"]] = field_value(pod, e["valueFrom"]["fieldRef"][
                "fieldPath"])
    command = container.get("command", []) + container.get("args", [])
    out = open(os.path.join(root, "output"), "ab")
    if args.podman:
        cmd = ["podman", "run", "--rm", "--network", "host",
               "--name", "kubelet-" + name, "--pull", "missing"]
        cmd += shlex.split(args.podman_args or "")
        for m in container.get("volumeMounts") or []:
            opt = ":ro" if m.get("readOnly") else ""
            cmd += ["-v", mounts[m["name"]] + ":" + m["mountPath"] + opt]
        for k, v in env.items():
            cmd += ["-e", k + "=" + v]
        cmd += ["--entrypoint", command[0], container["image"]] + command[1:]
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT,
                                start_new_session=True)
        return proc, None
    # --host: the pod's paths moved under root
    moved = {}
    for m in container.get("volumeMounts") or []:
        moved[m["mountPath"]] = mounts[m["name"]]

    def move(value):
        for path, there in moved.items():
            if value == path or value.startswith(path + "/"):
                return there + value[len(path):]
        return value

    home = os.path.join(root, "home")
    os.makedirs(home, exist_ok=True)
    run_env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": home,
               "HOSTNAME": name}
    for k, v in env.items():
        run_env[k] = move(v)
    proc = subprocess.Popen([move(c) for c in command], env=run_env,
                            cwd=moved.get("/navette/work", root),
                            stdin=subprocess.DEVNULL, stdout=out,
                            stderr=subprocess.STDOUT, start_new_session=True)
    return proc, None


def stop(args, name, proc, sig):
    """Stops a container: podman's own kill first (killing the client
    alone would leave the container running), then its process group."""
    if proc.poll() is not None:
        return
    if args.podman:
        subprocess.run(["podman", "kill", "--signal", str(int(sig)),
                        "kubelet-" + name], capture_output=True, timeout=60)
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--kubectl", required=True)
    p.add_argument("--namespace", required=True)
    p.add_argument("--root", required=True)
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--host", action="store_true")
    mode.add_argument("--podman", action="store_true")
    p.add_argument("--podman-args")
    args = p.parse_args()
    if not os.path.isabs(args.root) or not os.path.isdir(args.root):
        raise SystemExit("kubelet.py: --root must be an existing absolute "
                         "folder")
    base = shlex.split(args.kubectl) + ["-n", args.namespace]
    running = {}  # pod uid -> (name, process)
    done = set()
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    while not stopping:
        got = kubectl(["get", "pods", "-o", "json"], base)
        try:
            pods = json.loads(got.stdout)["items"] \
                if got.returncode == 0 else None
        except (ValueError, KeyError):
            pods = None
        if pods is None:
            # the API server does not answer (restarted by a test): the
            # containers go on, as on a kubelet, until it answers again
            time.sleep(0.5)
            continue
        seen = set()
        for pod in pods:
            uid = pod["metadata"]["uid"]
            seen.add(uid)
            name = pod["metadata"]["name"]
            ann = pod["metadata"].get("annotations") or {}
            if uid in running and pod["metadata"].get("deletionTimestamp"):
                stop(args, name, running[uid][1], signal.SIGTERM)
                continue
            if uid in running and pod.get("status", {}).get("phase") in (
                    "Failed", "Succeeded") and ANNOTATION not in ann:
                # ended from outside (a disruption): its container is gone
                stop(args, name, running[uid][1], signal.SIGKILL)
                continue
            if (uid in running or uid in done or ANNOTATION in ann
                    or pod["metadata"].get("deletionTimestamp")
                    or pod.get("status", {}).get("phase") != "Running"
                    or not pod["spec"].get("nodeName", "").startswith(
                        "kwok-gpu")):
                continue
            proc, err = start(pod, args, base)
            if err:
                sys.stderr.write("kubelet.py: pod %s: %s\n" % (name, err))
                kubectl(["annotate", "pod", name, ANNOTATION + "=128",
                         "--overwrite"], base)
                done.add(uid)
                continue
            running[uid] = (name, proc)
        for uid, (name, proc) in list(running.items()):
            rc = proc.poll()
            if rc is None:
                if uid not in seen:  # the pod is gone: stopped
                    stop(args, name, proc, signal.SIGKILL)
                continue
            del running[uid]
            done.add(uid)
            rc = 128 - rc if rc < 0 else rc  # a signal: 128+N
            if uid in seen:
                kubectl(["annotate", "pod", name, "%s=%d" % (ANNOTATION, rc),
                         "--overwrite"], base)
        time.sleep(0.5)
    for uid, (name, proc) in running.items():
        stop(args, name, proc, signal.SIGKILL)


if __name__ == "__main__":
    main()
