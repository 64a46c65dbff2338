"""tools/teach/lab.py (make lab): the learner's workspace is filled once and never overwritten."""

import json
import os
import socket

import pytest

from tools.teach import lab


def versions(text="v1"):
    return {"00_setup.ipynb": json.dumps({"cells": [], "v": text}),
            "01_autograd.ipynb": json.dumps({"cells": [], "v": "a"})}


def test_first_run_copies_every_chapter_and_later_runs_write_nothing_over_it(tmp_path):
    folder = tmp_path / "ws"
    first = lab.fill_workspace(folder, versions())
    assert first.copied == ["00_setup.ipynb", "01_autograd.ipynb"] and not first.newer
    (folder / "00_setup.ipynb").write_text('{"cells": [], "mine": true}')
    again = lab.fill_workspace(folder, versions())
    assert again.copied == [] and again.newer == []
    assert (folder / "00_setup.ipynb").read_text() == '{"cells": [], "mine": true}'


def test_a_changed_chapter_arrives_beside_the_learners_copy(tmp_path):
    folder = tmp_path / "ws"
    lab.fill_workspace(folder, versions("v1"))
    (folder / "00_setup.ipynb").write_text('{"cells": [], "mine": true}')
    refresh = lab.fill_workspace(folder, versions("v2"))
    new_name = f"00_setup.book-{lab.version_of(versions('v2')['00_setup.ipynb'])}.ipynb"
    assert refresh.newer == [("00_setup.ipynb", new_name)]
    assert (folder / "00_setup.ipynb").read_text() == '{"cells": [], "mine": true}'
    assert (folder / new_name).read_text() == versions("v2")["00_setup.ipynb"]
    lines = lab.report(refresh, folder)
    assert any("00_setup.ipynb changed since your copy was made" in line and new_name in line
               for line in lines)
    (folder / "01_autograd.ipynb").unlink()  # a deleted copy comes back: nothing is lost
    assert lab.fill_workspace(folder, versions("v2")).copied == ["01_autograd.ipynb"]


def test_workspace_that_is_a_file_or_read_only_gets_a_clear_message(tmp_path):
    as_file = tmp_path / "ws"
    as_file.write_text("my notes")
    with pytest.raises(lab.WorkspaceError, match="is a file, not a folder"):
        lab.fill_workspace(as_file, versions())
    assert as_file.read_text() == "my notes"
    read_only = tmp_path / "ro"
    read_only.mkdir()
    read_only.chmod(0o500)
    try:
        if os.geteuid() == 0:  # root writes anyway: make the write fail as it would for a user
            with pytest.MonkeyPatch.context() as patch:
                def refuse(self, *args, **kwargs):
                    raise PermissionError(13, "Permission denied")
                patch.setattr(lab.Path, "write_text", refuse)
                with pytest.raises(lab.WorkspaceError, match="cannot write in"):
                    lab.fill_workspace(read_only, versions())
        else:
            with pytest.raises(lab.WorkspaceError, match="cannot write in"):
                lab.fill_workspace(read_only, versions())
    finally:
        read_only.chmod(0o700)
    assert list(read_only.iterdir()) == []


def test_a_notebook_that_is_not_json_is_named_and_left(tmp_path):
    folder = tmp_path / "ws"
    lab.fill_workspace(folder, versions())
    (folder / "broken.ipynb").write_text("{not json")
    refresh = lab.fill_workspace(folder, versions())
    assert [u.split(" ")[0] for u in refresh.unreadable] == ["broken.ipynb"]
    assert (folder / "broken.ipynb").read_text() == "{not json"
    assert any("not a readable notebook" in line for line in lab.report(refresh, folder))


def test_editions_and_languages_have_their_own_folders(tmp_path):
    assert lab.workspace_for("en", "book", tmp_path) == tmp_path
    assert lab.workspace_for("zh", "book", tmp_path) == tmp_path / "zh"
    assert lab.workspace_for("zh", "student", tmp_path) == tmp_path / "student" / "zh"
    with pytest.raises(lab.WorkspaceError, match="BOOK_LANG is en or zh"):
        lab.workspace_for("fr", "book", tmp_path)
    student = lab.book_versions("en", "student")
    assert "# Your answer to" in student["01_autograd.ipynb"]
    assert "# Your answer to" not in lab.book_versions("en", "book")["01_autograd.ipynb"]
    assert set(lab.book_versions("zh")) == set(student)


def test_a_port_in_use_gives_the_next_free_one():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert lab.free_port(port) > port


def test_the_command_binds_localhost_with_a_token_and_fetches_nothing(tmp_path):
    command = lab.lab_command(tmp_path, 8899, "secret")
    assert "--ServerApp.ip=127.0.0.1" in command and "--IdentityProvider.token=secret" in command
    assert "--ServerApp.port=8899" in command and "--ServerApp.port_retries=0" in command
    assert any("NeverCheckForUpdate" in part for part in command)
    settings_dir = lab.ROOT / "tools" / "teach" / "lab-settings"
    settings = json.loads((settings_dir / "overrides.json").read_text())
    assert settings["@jupyterlab/apputils-extension:notification"]["fetchNews"] == "false"


def test_a_second_lab_on_the_same_workspace_says_where_the_first_runs(tmp_path):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        record = {"pid": os.getpid(), "port": port, "url": f"http://127.0.0.1:{port}/lab"}
        (tmp_path / lab.RUNNING).write_text(json.dumps(record))
        with pytest.raises(lab.WorkspaceError, match=f"already running .*127.0.0.1:{port}"):
            lab.start(tmp_path)
    assert lab.already_running(tmp_path) is None  # nothing listens now: a stale record


@pytest.mark.parametrize("lang,edition", [("en", "book"), ("en", "student"), ("zh", "book"),
                                          ("zh", "student")])
def test_the_first_screen_names_the_edition_open_and_how_to_get_the_others(lang, edition):
    lines = lab.edition_lines(lang, edition)
    assert lines[0].startswith("  open:") and len(lines) == 4
    assert ("student edition" in lines[0]) == (edition == "student")
    assert ("Chinese" in lines[0]) == (lang == "zh")
    commands = [line.split(": ", 2)[-1] for line in lines[1:]]
    wanted = {"make lab", "make lab EDITION=student", "make lab BOOK_LANG=zh",
              "make lab BOOK_LANG=zh EDITION=student"}
    this = ("make lab" + (" BOOK_LANG=zh" if lang == "zh" else "")
            + (" EDITION=student" if edition == "student" else ""))
    assert set(commands) == wanted - {this}
