"""The suite's commands run with a user data folder of their own (tests/conftest.py): a demo the
user runs beside ``make test`` (``make demo``) is found by none of them."""

from __future__ import annotations

import os

import pytest

from signoff.demo.folder import default_data_dir
from tests.cli.test_decide_cli import signoff


def test_every_test_has_a_user_data_folder_of_the_suite_s_own(
    tmp_path_factory: pytest.TempPathFactory,
):
    assert default_data_dir().is_relative_to(tmp_path_factory.getbasetemp())
    assert "SIGNOFF_SERVER" not in os.environ and "SIGNOFF_DATABASE_URL" not in os.environ


def test_a_command_a_test_runs_finds_no_demo_the_user_runs():
    code, out, err = signoff("grants", "list")
    assert (code, out) == (2, "")
    assert "no server given and no demo running here" in err
