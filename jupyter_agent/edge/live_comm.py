"""The kernel's end of the live notebook comm (``labextension/src/liveCells.ts`` is the other).

A running cell keeps the kernel's shell channel busy, so the kernel cannot ask the front end
for the notebook and wait; instead the JupyterLab extension pushes the notebook's cells on this
comm before each execute request (docs/notebook-tools.md). At ``%load_ext jupyter_agent`` the
kernel registers :data:`TARGET` (for a front end that finds the kernel already set up, e.g.
after a page reload) and opens a comm to the same target name (which the extension registers
on every kernel connection).

This module is imported at ``%load_ext``, which must stay cheap: it imports only ``comm``; the
snapshot's validation (:mod:`jupyter_agent.tools.notebook.live_cells`, pydantic) loads with the first
message.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..base.jsontypes import object_field

if TYPE_CHECKING:
    from comm.base_comm import BaseComm

__all__ = ["TARGET", "attach"]

log = logging.getLogger(__name__)

TARGET = "jupyter_agent.live_cells"
"""The comm target name, the same on both sides."""


def attach(shell: object) -> bool:
    """Let this kernel receive live cells: register :data:`TARGET`, open a comm to it.

    Does nothing (returns False) outside an ipykernel kernel or without the ``comm`` package.
    """
    if getattr(shell, "kernel", None) is None:
        return False
    try:
        from comm import create_comm, get_comm_manager
    except ImportError:  # not a Jupyter kernel: the tools read the file
        return False
    try:
        get_comm_manager().register_target(TARGET, lambda comm, _msg: _listen(comm))
        _listen(create_comm(target_name=TARGET, data={"version": 1}))
    except Exception as exc:  # noqa: BLE001 - the tools still read the file
        log.warning("jupyter-agent: live cells unavailable: %s", str(exc)[:200])
        return False
    return True


def _on_msg(comm: BaseComm, msg: Mapping[str, object]) -> None:
    from ..tools.notebook.live_cells import LIVE

    client = str(object_field(msg, "header").get("session") or "")
    data = object_field(msg, "content").get("data")
    error = LIVE.receive(client, data)
    if error:
        try:
            comm.send({"error": error})
        except Exception:  # noqa: BLE001 - a closed comm: the refusal stays in the log
            log.warning("%s", error)


def _listen(comm: BaseComm) -> None:
    comm.on_msg(lambda msg: _on_msg(comm, msg))
