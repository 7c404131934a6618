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
    f.kill_all()
    assert not left, f"server process groups left running: {left}"
