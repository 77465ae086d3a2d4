#!/usr/bin/env python3
"""A duetime worker in Python, written against proto/duetime/v1/worker.proto
alone: its stubs are generated from the .proto at start (protoc and the gRPC
Python plugin; Debian: protobuf-compiler, protobuf-compiler-grpc,
python3-grpcio), and it imports nothing of duetime's.

It leases executions of a pool, heartbeats each once, then completes it with
{"doubled": payload["n"] * 2}, or fails it (permanent) when the payload says
{"fail": true}. It stops after --jobs executions (0: run until interrupted).

    python3 examples/python-worker/worker.py --address 127.0.0.1:9090 \
        --key "$DUETIME_KEY" --pool py --jobs 0
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import grpc

HERE = os.path.dirname(os.path.abspath(__file__))
PROTO_DIR = os.path.normpath(os.path.join(HERE, "..", "..", "proto"))


def load_stubs():
    """Generates the Python stubs of worker.proto into a temporary directory and imports them."""
    out = tempfile.mkdtemp(prefix="duetime-stubs-")
    subprocess.run(
        [
            "protoc",
            f"-I{PROTO_DIR}",
            f"--python_out={out}",
            f"--grpc_python_out={out}",
            "--plugin=protoc-gen-grpc_python=" + os.environ.get("GRPC_PYTHON_PLUGIN", "/usr/bin/grpc_python_plugin"),
            os.path.join(PROTO_DIR, "duetime", "v1", "worker.proto"),
        ],
        check=True,
    )
    sys.path.insert(0, out)
    from duetime.v1 import worker_pb2, worker_pb2_grpc  # noqa: E402  (generated just now)

    return worker_pb2, worker_pb2_grpc


def handle(pb, stub, metadata, execution):
    """Runs one execution: a heartbeat, then complete or fail, each fenced by its attempt."""
    stub.Heartbeat(pb.HeartbeatRequest(execution_id=execution.execution_id, attempt=execution.attempt, lease_seconds=60), metadata=metadata)
    payload = json.loads(execution.payload_json) or {}
    if payload.get("fail"):
        error = pb.AttemptError(message="the payload asked to fail", **{"class": pb.ERROR_CLASS_PERMANENT})
        answer = stub.Fail(pb.FailRequest(execution_id=execution.execution_id, attempt=execution.attempt, error=error), metadata=metadata)
    else:
        result = json.dumps({"doubled": payload.get("n", 0) * 2})
        answer = stub.Complete(pb.CompleteRequest(execution_id=execution.execution_id, attempt=execution.attempt, result_json=result), metadata=metadata)
    print(f"{execution.execution_id} attempt {execution.attempt}: {answer.state}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--address", required=True, help="host:port of duetime serve --grpc-port")
    parser.add_argument("--key", default=os.environ.get("DUETIME_KEY"), help="a worker API key (default $DUETIME_KEY)")
    parser.add_argument("--pool", required=True)
    parser.add_argument("--jobs", type=int, default=0, help="stop after this many executions (0: never)")
    args = parser.parse_args()

    pb, rpc = load_stubs()
    metadata = [("authorization", f"Bearer {args.key}")] if args.key else []
    handled = 0
    with grpc.insecure_channel(args.address) as channel:
        stub = rpc.WorkerServiceStub(channel)
        while args.jobs == 0 or handled < args.jobs:
            try:
                leased = stub.Lease(pb.LeaseRequest(pool=args.pool, worker_id="python-example", max=10, wait_seconds=5), metadata=metadata)
            except grpc.RpcError as error:
                print(f"lease failed: {error.code().name}: {error.details()}", file=sys.stderr)
                return 1
            for execution in leased.executions:
                handle(pb, stub, metadata, execution)
                handled += 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
