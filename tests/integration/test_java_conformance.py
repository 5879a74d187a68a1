"""The java kernelspec (execd-repl-kernel on jshell) against
python3-jupyter-kernel-test, the standard conformance test for Jupyter
kernels, started by jupyter_client itself (no execd): every message is
checked against the protocol's schema.  The test file's own runner
(unittest) runs inside one of ours."""
import os
import shutil
import tempfile
import unittest

import jupyter_kernel_test
from jupyter_client.manager import start_new_kernel

from test_java import install as install_java


class JavaConformance(jupyter_kernel_test.KernelTests):
    kernel_name = "java"
    language_name = "java"
    file_extension = ".jshell"
    code_hello_world = 'System.out.println("hello, world");'
    code_stderr = 'System.err.println("to stderr");'
    code_generate_error = 'throw new RuntimeException("boom");'
    code_execute_result = [{"code": "6 * 7", "result": "42"},
                           {"code": "\"ab\".length()", "result": "2"}]
    complete_code_samples = ["int a = 1;", "1 + 1",
                             'String s = "{";']
    incomplete_code_samples = ["void f() {", "for (int i = 0; i < 3; i++) {",
                               "/* open"]
    invalid_code_samples = ["f(]"]

    @classmethod
    def setUpClass(cls):
        cls.km, cls.kc = start_new_kernel(kernel_name=cls.kernel_name)
        # The first run waits for the JVM: not within the suite's 15 s
        # on a loaded machine.
        reply = cls.kc.execute_interactive("int warm = 1;", timeout=120)
        assert reply["content"]["status"] == "ok", reply


def test_java_kernel_conformance():
    top = tempfile.mkdtemp(prefix="execd-java-")
    old = os.environ.get("JUPYTER_PATH")
    try:
        install_java(top)
        os.environ["JUPYTER_PATH"] = top
        suite = unittest.defaultTestLoader.loadTestsFromTestCase(
            JavaConformance)
        res = unittest.TextTestRunner(verbosity=2).run(suite)
        assert res.wasSuccessful(), (res.failures, res.errors)
        # The checks this kernel can answer ran, not skipped.
        skipped = " ".join(str(t) for t, _ in res.skipped)
        for name in ("test_kernel_info", "test_execute_stdout",
                     "test_execute_stderr", "test_error",
                     "test_execute_result", "test_is_complete"):
            assert name + " " not in skipped, (name, skipped)
    finally:
        if old is None:
            os.environ.pop("JUPYTER_PATH", None)
        else:
            os.environ["JUPYTER_PATH"] = old
        shutil.rmtree(top, ignore_errors=True)
