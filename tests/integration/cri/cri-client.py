#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A small CRI v1 client for sdpod's tests and bench/cri.

    cri-client.py --socket SOCK --gen DIR METHOD [REQUEST]
    cri-client.py --socket SOCK --gen DIR wait-ready [SECONDS]
    cri-client.py --socket SOCK --gen DIR cycle --handlers A,B --rounds N ...

METHOD is a call of runtime.v1.RuntimeService or ImageService as cri.proto
(beside this file) names it (RunPodSandbox, ExecSync, ...). REQUEST is the
request message in protobuf's JSON mapping (field names as in the .proto),
inline or "@FILE"; none is an empty request. The answer is printed as JSON
(every field, defaults included, so that an exit code 0 is there to read).
A failed call prints "CRI ERROR CODE: DETAILS" on stderr and exits 3; a
test can match the code (NOT_FOUND, UNKNOWN, ...) and the message.

The Python modules are generated from cri.proto with grpc_tools.protoc into
DIR (--gen) when they are missing there: the tests generate them into their
own temporary directory, nothing generated is kept in the tree.

"cycle" is bench/cri's measurement: in one process (a Python and gRPC start
is ~100 ms, more than the steps timed), for each round and each handler in
rotating order, RunPodSandbox, CreateContainer and StartContainer of one
container, each step timed; then, untimed, StopPodSandbox and
RemovePodSandbox. It prints "HANDLER-STEP MICROSECONDS" lines.
"""

import argparse
import importlib
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def load_stubs(gen):
    """Imports cri_pb2 and cri_pb2_grpc from gen, generating them first."""
    os.makedirs(gen, exist_ok=True)
    if not (os.path.exists(os.path.join(gen, "cri_pb2.py")) and
            os.path.exists(os.path.join(gen, "cri_pb2_grpc.py"))):
        from grpc_tools import protoc
        rc = protoc.main(["grpc_tools.protoc", "-I", HERE, "--python_out=" + gen,
                          "--grpc_python_out=" + gen, os.path.join(HERE, "cri.proto")])
        if rc != 0:
            sys.exit("cri-client: protoc failed on cri.proto (%d)" % rc)
    sys.path.insert(0, gen)
    return importlib.import_module("cri_pb2"), importlib.import_module("cri_pb2_grpc")


class Client:
    def __init__(self, socket, gen, timeout):
        import grpc
        self.grpc = grpc
        self.pb, self.pb_grpc = load_stubs(gen)
        self.timeout = timeout
        # The path as given: grpc's "unix:" scheme takes an absolute or a
        # relative path.
        self.channel = grpc.insecure_channel("unix:" + socket)
        self.runtime = self.pb_grpc.RuntimeServiceStub(self.channel)
        self.image = self.pb_grpc.ImageServiceStub(self.channel)

    def method(self, name):
        """The stub's callable and the request class of a method name."""
        for svc_name, stub in (("RuntimeService", self.runtime), ("ImageService", self.image)):
            svc = self.pb.DESCRIPTOR.services_by_name[svc_name]
            m = svc.methods_by_name.get(name)
            if m is not None:
                req_class = getattr(self.pb, m.input_type.name)
                return getattr(stub, name), req_class
        sys.exit("cri-client: no method %s in cri.proto" % name)

    def call(self, name, request):
        fn, _ = self.method(name)
        return fn(request, timeout=self.timeout)

    def request(self, name, text):
        from google.protobuf import json_format
        _, req_class = self.method(name)
        req = req_class()
        if text:
            if text.startswith("@"):
                with open(text[1:], encoding="utf-8") as f:
                    text = f.read()
            json_format.Parse(text, req)
        return req


def to_json(msg):
    from google.protobuf import json_format
    # Field names as in the .proto; enums by name; bytes (ExecSync's
    # output) come out base64 in the JSON mapping, so they are also given
    # decoded, as "stdout_text" and "stderr_text".
    d = json_format.MessageToDict(msg, preserving_proto_field_name=True,
                                  including_default_value_fields=True)
    for field in ("stdout", "stderr"):
        if field in msg.DESCRIPTOR.fields_by_name and \
                msg.DESCRIPTOR.fields_by_name[field].type == msg.DESCRIPTOR.fields_by_name[field].TYPE_BYTES:
            d[field + "_text"] = getattr(msg, field).decode("utf-8", "replace")
    return json.dumps(d, sort_keys=True)


def rpc_error(e):
    code = e.code().name if hasattr(e, "code") and e.code() else "UNKNOWN"
    details = e.details() if hasattr(e, "details") else str(e)
    print("CRI ERROR %s: %s" % (code, details), file=sys.stderr)
    return 3


def cmd_wait_ready(c, seconds):
    """Until RuntimeReady and NetworkReady are both true."""
    deadline = time.monotonic() + seconds
    last = "no answer"
    while time.monotonic() < deadline:
        try:
            r = c.call("Status", c.pb.StatusRequest())
            conds = {x.type: x for x in r.status.conditions}
            missing = [t for t in ("RuntimeReady", "NetworkReady")
                       if t not in conds or not conds[t].status]
            if not missing:
                return 0
            last = "; ".join("%s: %s %s" % (t, conds[t].reason, conds[t].message) if t in conds
                             else t + ": absent" for t in missing)
        except c.grpc.RpcError as e:
            last = "%s: %s" % (e.code().name, e.details())
        time.sleep(0.1)
    print("cri-client: CRI not ready within %ss: %s" % (seconds, last), file=sys.stderr)
    return 1


def cmd_cycle(c, a):
    pb = c.pb
    handlers = [h for h in a.handlers.split(",") if h]
    out = sys.stdout
    n = len(handlers)
    for rnd in range(a.rounds):
        for i in range(n):
            h = handlers[(rnd + i) % n]
            name = "bench-%s-%d" % (h, rnd)
            sb = pb.PodSandboxConfig(
                metadata=pb.PodSandboxMetadata(name=name, uid=name, namespace="bench", attempt=0),
                hostname=name[:63], log_directory=os.path.join(a.log_dir, name))
            sb.linux.security_context.namespace_options.network = pb.POD
            t0 = time.monotonic_ns()
            sid = c.call("RunPodSandbox", pb.RunPodSandboxRequest(config=sb, runtime_handler=h)).pod_sandbox_id
            t1 = time.monotonic_ns()
            cc = pb.ContainerConfig(metadata=pb.ContainerMetadata(name="app"),
                                    image=pb.ImageSpec(image=a.image),
                                    command=["/bin/sleep", "3600"], log_path="app.log")
            cid = c.call("CreateContainer", pb.CreateContainerRequest(
                pod_sandbox_id=sid, config=cc, sandbox_config=sb)).container_id
            t2 = time.monotonic_ns()
            c.call("StartContainer", pb.StartContainerRequest(container_id=cid))
            t3 = time.monotonic_ns()
            out.write("%s-run %d\n%s-create %d\n%s-start %d\n%s-total %d\n" % (
                h, (t1 - t0) // 1000, h, (t2 - t1) // 1000, h, (t3 - t2) // 1000, h, (t3 - t0) // 1000))
            out.flush()
            c.call("StopPodSandbox", pb.StopPodSandboxRequest(pod_sandbox_id=sid))
            t4 = time.monotonic_ns()
            c.call("RemovePodSandbox", pb.RemovePodSandboxRequest(pod_sandbox_id=sid))
            t5 = time.monotonic_ns()
            out.write("%s-stop %d\n%s-remove %d\n" % (h, (t4 - t3) // 1000, h, (t5 - t4) // 1000))
            out.flush()
    return 0


def main():
    p = argparse.ArgumentParser(description="A small CRI v1 client for sdpod's tests.")
    p.add_argument("--socket", required=True, help="containerd's gRPC socket")
    p.add_argument("--gen", required=True, help="where the Python stubs are (generated if missing)")
    p.add_argument("--timeout", type=float, default=120, help="seconds per call")
    p.add_argument("method", help="a CRI method, wait-ready or cycle")
    p.add_argument("rest", nargs=argparse.REMAINDER)
    a = p.parse_args()

    c = Client(a.socket, a.gen, a.timeout)
    try:
        if a.method == "wait-ready":
            return cmd_wait_ready(c, float(a.rest[0]) if a.rest else 30)
        if a.method == "cycle":
            q = argparse.ArgumentParser(prog="cri-client.py cycle")
            q.add_argument("--handlers", required=True, help="runtime handlers, comma-separated")
            q.add_argument("--rounds", type=int, default=10)
            q.add_argument("--image", required=True)
            q.add_argument("--log-dir", required=True)
            return cmd_cycle(c, q.parse_args(a.rest))
        if len(a.rest) > 1:
            sys.exit("cri-client: one request at most")
        req = c.request(a.method, a.rest[0] if a.rest else "")
        print(to_json(c.call(a.method, req)))
        return 0
    except c.grpc.RpcError as e:
        return rpc_error(e)


if __name__ == "__main__":
    sys.exit(main())
