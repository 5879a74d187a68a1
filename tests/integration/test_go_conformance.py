"""The go kernelspec (execd-repl-kernel's "program" mode on yaegi)
against python3-jupyter-kernel-test, the standard conformance test for
Jupyter kernels, started by jupyter_client itself (no execd): every
message is checked against the protocol's schema.  The test file's own
runner (unittest) runs inside one of ours.  A Go cell has no value, so
there are no execute_result samples."""
import os
import shutil
import tempfile
import unittest

import jupyter_kernel_test
from jupyter_client.manager import start_new_kernel

from test_go import install as install_go


class GoConformance(jupyter_kernel_test.KernelTests):
    kernel_name = "go"
    language_name = "go"
    file_extension = ".go"
    code_hello_world = 'import "fmt"\nfmt.Println("hello, world")'
    code_stderr = 'import "os"\nos.Stderr.WriteString("to stderr\\n")'
    code_generate_error = "undefinedVar++"   # a panic prints on stderr too
    complete_code_samples = ["x := 1", "func f() {}",
                             'var s = "{"', "s := `}`"]
    incomplete_code_samples = ["func f() {", "for i := 0; i < 3; i++ {",
                               "/* open", "s := `open"]

    @classmethod
    def setUpClass(cls):
        cls.km, cls.kc = start_new_kernel(kernel_name=cls.kernel_name)


def test_go_kernel_conformance():
    top = tempfile.mkdtemp(prefix="execd-go-")
    old = os.environ.get("JUPYTER_PATH")
    try:
        install_go(top)
        os.environ["JUPYTER_PATH"] = top
        suite = unittest.defaultTestLoader.loadTestsFromTestCase(
            GoConformance)
        res = unittest.TextTestRunner(verbosity=2).run(suite)
        assert res.wasSuccessful(), (res.failures, res.errors)
        # The checks this kernel can answer ran, not skipped.
        skipped = " ".join(str(t) for t, _ in res.skipped)
        for name in ("test_kernel_info", "test_execute_stdout",
                     "test_execute_stderr", "test_error",
                     "test_is_complete"):
            assert name + " " not in skipped, (name, skipped)
    finally:
        if old is None:
            os.environ.pop("JUPYTER_PATH", None)
        else:
            os.environ["JUPYTER_PATH"] = old
        shutil.rmtree(top, ignore_errors=True)
