import pytest

from faults_helpers import Folder


@pytest.fixture(scope="session")
def fault_envs(tmp_path_factory):
    """One environment root for the suite: the stack is built once (about 2 s), reused after."""
    return tmp_path_factory.mktemp("fault-envs")


@pytest.fixture
def folder(tmp_path, fault_envs):
    f = Folder(tmp_path, fault_envs)
    yield f
    left = f.groups_alive()
    others = [] if left else wait_gone(f)
    f.kill_all()
    assert not left, f"server process groups left running: {left}"
    assert not others, f"processes left running: {others}"


def wait_gone(f, seconds: float = 5.0):
    """Processes naming the folder, once given a moment to end (a killed
    apply's benchmark script, a gate that sees its apply gone)."""
    import time

    deadline = time.monotonic() + seconds
    while (left := f.leftovers()) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left
