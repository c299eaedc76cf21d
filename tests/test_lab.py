"""`make lab`, the README's way to read interactively, starts where `make test` runs (root
included), answers on 127.0.0.1, and runs a chapter's first cell in a kernel; then it is stopped."""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import nbformat
import pytest
from tornado.ioloop import IOLoop
from tornado.websocket import websocket_connect

ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str, token: str, data: bytes | None = None) -> tuple[int, Any]:
    request = urllib.request.Request(url, data=data, method="POST" if data is not None else "GET",
                                     headers={"Authorization": f"token {token}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        body = response.read()
        return response.status, json.loads(body) if body[:1] in (b"{", b"[") else body


async def _run_cell(port: int, token: str, kernel_id: str, code: str) -> tuple[str, str]:
    url = f"ws://127.0.0.1:{port}/api/kernels/{kernel_id}/channels?token={token}"
    conn = await websocket_connect(url)
    msg_id = uuid.uuid4().hex
    await conn.write_message(json.dumps({
        "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "test",
                   "session": uuid.uuid4().hex, "version": "5.3", "date": ""},
        "parent_header": {}, "metadata": {}, "channel": "shell",
        "content": {"code": code, "silent": False, "store_history": True,
                    "user_expressions": {}, "allow_stdin": False, "stop_on_error": True},
    }))
    stdout, status = "", ""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not status:
        raw = await conn.read_message()
        if raw is None:
            break
        msg = json.loads(raw)
        if msg.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            stdout += msg["content"]["text"]
        elif msg["msg_type"] == "execute_reply":
            status = msg["content"]["status"]
    conn.close()
    return status, stdout


def test_make_lab_serves_and_runs_a_chapters_first_cell() -> None:
    port, token = _free_port(), secrets.token_hex(16)
    args = f"--no-browser --ip=127.0.0.1 --port={port} --ServerApp.token={token}"
    proc = subprocess.Popen(["make", "--no-print-directory", "lab", f"LAB_ARGS={args}"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        base = f"http://127.0.0.1:{port}"
        for _ in range(240):
            try:
                status, info = _get(f"{base}/api/status", token)
                break
            except OSError:
                if proc.poll() is not None:
                    pytest.fail(f"make lab exited with {proc.returncode}: {proc.stdout.read()[-3000:]}"
                                if proc.stdout else "make lab exited")
                time.sleep(0.5)
        else:
            pytest.fail("make lab did not answer on 127.0.0.1 within 120 s")
        assert status == 200 and "started" in info
        status, page = _get(f"{base}/lab", token)
        assert status == 200 and b"JupyterLab" in page

        chapter = nbformat.read(ROOT / "chapters" / "01_kernel_regression.ipynb", as_version=4)
        first = next(c.source for c in chapter.cells if c.cell_type == "code")
        status, kernel = _get(f"{base}/api/kernels", token, data=json.dumps(
            {"name": "python3", "path": "chapters"}).encode())
        assert status == 201
        reply, stdout = IOLoop.current().run_sync(
            lambda: _run_cell(port, token, kernel["id"], first + "\nimport attnlib\n"
                              "print('attnlib from', attnlib.__file__)"), timeout=180)
        assert reply == "ok", stdout
        assert str(ROOT / "attnlib") in stdout
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
