import pytest

from plan_helpers import SPEC, resolve_text


@pytest.fixture
def spec_cfg(tmp_path):
    return resolve_text(tmp_path, SPEC)
