#!/usr/bin/env python3
"""A rank of a `launcher: tensorflow` job, checking TF_CONFIG as TensorFlow reads it.

TensorFlow cannot be installed where Ringmaster's tests run, so this reimplements the rules of
its own sources, in the order a tf.distribute strategy applies them:
  - tensorflow/python/distribute/cluster_resolver/tfconfig_cluster_resolver.py:
    _load_tf_config (json.loads of TF_CONFIG, '{}' when unset), task_type (str(task['type'])),
    task_id (int(task['index'])), cluster_spec (ClusterSpec(tf_config['cluster'])), rpc_layer;
  - tensorflow/python/training/server_lib.py ClusterSpec: each job a list (index = position) or
    a dict {int: address}; _make_cluster_def: job names and addresses must be strings;
  - tensorflow/python/distribute/multi_worker_util.py: _validate_cluster_spec, is_chief,
    worker_count, id_in_cluster, collective_leader.
Then it does what a task's gRPC server does with its entry: binds its own host:port and reaches
every other task at its address, each answering with its own (type, index), so the cluster every
rank holds is shown to lead to the right tasks. It prints one line, "CONTRACT <json>", and exits
non-zero naming the rule that failed.
"""
import json
import os
import socket
import sys
import threading
import time


def fail(message):
    print("CONTRACT-FAILED " + message, flush=True)
    sys.exit(1)


# --- tfconfig_cluster_resolver.py ---
def load_tf_config():
    return json.loads(os.environ.get("TF_CONFIG", "{}"))


def get_value_in_tfconfig(key, default=None):
    tf_config = load_tf_config()
    return tf_config[key] if key in tf_config else default


def resolver_task_type():
    task_info = get_value_in_tfconfig("task", {})
    return str(task_info["type"]) if "type" in task_info else None


def resolver_task_id():
    task_info = get_value_in_tfconfig("task", {})
    return int(task_info["index"]) if "index" in task_info else None


# --- server_lib.py ClusterSpec ---
def cluster_spec_from(cluster):
    if not isinstance(cluster, dict):
        raise TypeError("`cluster` must be a dictionary mapping one or more job names to lists")
    spec = {}
    for job_name, tasks in cluster.items():
        if isinstance(tasks, (list, tuple)):
            job_tasks = {i: task for i, task in enumerate(tasks)}
        elif isinstance(tasks, dict):
            job_tasks = {int(i): task for i, task in tasks.items()}
        else:
            raise TypeError("The tasks for job %r must be a list or a dictionary from integers "
                            "to strings." % job_name)
        spec[job_name] = job_tasks
    # _make_cluster_def
    for job_name, tasks in sorted(spec.items()):
        if not isinstance(job_name, str):
            raise TypeError("Job name %r must be bytes or unicode" % job_name)
        for _, address in sorted(tasks.items()):
            if not isinstance(address, str):
                raise TypeError("Task address %r must be bytes or unicode" % address)
    return spec


def as_dict(spec):
    out = {}
    for job, tasks in spec.items():
        indices = sorted(tasks)
        if not indices:
            out[job] = {}
        elif max(indices) + 1 == len(indices):
            out[job] = [tasks[i] for i in indices]
        else:
            out[job] = {i: tasks[i] for i in indices}
    return out


# --- multi_worker_util.py ---
def validate_cluster_spec(cluster, task_type, task_id):
    if task_type not in ("chief", "worker", "evaluator", "ps"):
        raise ValueError("Unrecognized task_type: %r" % task_type)
    if task_type and task_type not in cluster:
        raise ValueError("`task_type` %r not found in cluster_spec." % task_type)
    if len(cluster.get("chief", [])) > 1:
        raise ValueError("There must be at most one 'chief' job.")
    if len(cluster.get("evaluator", [])) > 1:
        raise ValueError("There must be at most one 'evaluator' job.")
    if task_id >= len(cluster[task_type]):
        raise ValueError("The `task_id` %d exceeds the maximum id of %s." % (task_id, task_type))


def is_chief(cluster, task_type, task_id):
    validate_cluster_spec(cluster, task_type, task_id)
    if task_type in ("chief", "evaluator"):
        return True
    return "chief" not in cluster and task_type == "worker" and task_id == 0


def worker_count(cluster, task_type):
    validate_cluster_spec(cluster, task_type, task_id=0)
    if task_type not in ("chief", "worker", "evaluator"):
        return None  # TensorFlow raises: ps tasks have no worker count
    return len(cluster.get("chief", [])) + len(cluster.get("worker", []))


def id_in_cluster(cluster, task_type, task_id):
    validate_cluster_spec(cluster, task_type, task_id)
    if task_type == "chief":
        return 0
    if task_type == "worker":
        return task_id + len(cluster.get("chief", []))
    return None  # TensorFlow raises: no id for ps


def collective_leader(cluster, task_type, task_id):
    validate_cluster_spec(cluster, task_type, task_id)
    return "/job:chief/replica:0/task:0" if "chief" in cluster else "/job:worker/replica:0/task:0"


# --- what the task's server does with its address ---
def split_address(address):
    host, _, port = address.rpartition(":")
    return host.strip("[]"), int(port)


def serve(listener, me, expected, served):
    listener.settimeout(1.0)
    deadline = time.time() + 90
    while served[0] < expected and time.time() < deadline:
        try:
            conn, _ = listener.accept()
        except socket.timeout:
            continue
        with conn:
            conn.recv(64)
            conn.sendall(me.encode())
        served[0] += 1


def reach(address, deadline):
    host, port = split_address(address)
    while True:
        try:
            with socket.create_connection((host, port), timeout=2) as conn:
                conn.sendall(b"hello")
                return conn.recv(64).decode()
        except OSError:
            if time.time() > deadline:
                raise
            time.sleep(0.1)


def main():
    if "TF_CONFIG" not in os.environ:
        fail("TF_CONFIG is not set")
    try:
        task_type = resolver_task_type()
        task_id = resolver_task_id()
        tf_config = load_tf_config()
        if "cluster" not in tf_config:
            fail("TF_CONFIG has no cluster (ClusterSpec({}) would run locally)")
        spec = cluster_spec_from(tf_config["cluster"])
        cluster = as_dict(spec)
        if task_type is None or task_id is None:
            fail("TF_CONFIG's task has no type or index")
        chief = is_chief(cluster, task_type, task_id)
        workers = worker_count(cluster, task_type)
        cluster_id = id_in_cluster(cluster, task_type, task_id)
        leader = collective_leader(cluster, task_type, task_id)
    except (TypeError, ValueError, KeyError) as error:
        fail("TensorFlow would refuse TF_CONFIG: %s: %s" % (type(error).__name__, error))
    rpc_layer = get_value_in_tfconfig("rpc_layer")
    own = spec[task_type][task_id]
    me = "%s:%d" % (task_type, task_id)
    everyone = [(job, i, address) for job, tasks in spec.items() for i, address in tasks.items()]
    listener = socket.socket(socket.AF_INET6 if ":" in split_address(own)[0] else socket.AF_INET)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(split_address(own))
    except OSError as error:
        fail("cannot bind this task's address %s: %s" % (own, error))
    listener.listen(len(everyone))
    served = [0]
    server = threading.Thread(target=serve, args=(listener, me, len(everyone) - 1, served))
    server.start()
    deadline = time.time() + 60
    for job, i, address in everyone:
        if (job, i) == (task_type, task_id):
            continue
        try:
            answer = reach(address, deadline)
        except OSError as error:
            fail("task %s:%d at %s cannot be reached: %s" % (job, i, address, error))
        if answer != "%s:%d" % (job, i):
            fail("%s leads to task %s, not %s:%d" % (address, answer, job, i))
    server.join()
    if served[0] != len(everyone) - 1:
        fail("only %d of the other %d tasks reached this one" % (served[0], len(everyone) - 1))
    print("CONTRACT " + json.dumps({
        "type": task_type, "index": task_id, "is_chief": chief, "worker_count": workers,
        "id_in_cluster": cluster_id, "collective_leader": leader, "rpc_layer": rpc_layer,
        "address": own, "cluster": cluster, "rank": int(os.environ["RANK"]),
        "tasks_reached": len(everyone) - 1}, sort_keys=True), flush=True)


if __name__ == "__main__":
    main()
