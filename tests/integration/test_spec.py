"""specs/execd-api.yaml describes exactly the routes execd serves."""
import json
import re
import subprocess

import yaml

from lib import EXECD, ROOT, Execd

METHODS = ("get", "post", "put", "delete", "patch", "head", "options")


def spec_routes():
    """(METHOD, path) pairs of the spec's paths."""
    with open(ROOT + "/specs/execd-api.yaml") as f:
        spec = yaml.safe_load(f)
    assert spec["openapi"].startswith("3."), spec["openapi"]
    return {(m.upper(), path) for path, ops in spec["paths"].items()
            for m in ops if m in METHODS}


def served_routes():
    out = subprocess.run([EXECD, "--routes"], capture_output=True,
                         text=True, timeout=10, check=True).stdout
    routes = set()
    for line in out.splitlines():
        if not line:
            continue
        method, path = line.split()[:2]
        # "*" takes any method: the spec lists each standard one.
        for m in ([x.upper() for x in METHODS] if method == "*"
                  else [method]):
            routes.add((m, path))
    return routes


def test_spec_and_route_table_agree():
    spec, served = spec_routes(), served_routes()
    assert served, "execd --routes printed nothing"
    assert spec - served == set(), "in the spec, not served: %s" % (
        spec - served)
    assert served - spec == set(), "served, not in the spec: %s" % (
        served - spec)


def test_every_served_route_answers_with_its_method():
    # A route printed by --routes is really routed: never 405, and a 404
    # is about a missing resource, not the unknown-path NOT_FOUND.
    with Execd() as d:
        for method, path in sorted(served_routes()):
            if path.endswith("/watch"):
                continue  # a stream; covered in test_metrics
            path = re.sub(r"\{[^}]+\}", "x", path)
            st, _, body = d.request(method, path, body="{}" if method in (
                "POST", "PUT") else None)
            assert st != 405, (method, path, st)
            if st == 404:
                # OpenSandbox's {"code"} or Jupyter's {"message"} shape.
                v = json.loads(body)
                assert v.get("code") != "NOT_FOUND" and not v.get(
                    "message", "").startswith("no such endpoint"), (
                    method, path, body)
