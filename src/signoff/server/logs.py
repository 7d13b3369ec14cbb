"""Structured logs on request: one JSON object per line on stderr, for a log collector.

Each line has ``time`` (UTC, ISO 8601), ``level``, ``logger`` and ``message``, and — when the
record is about one — ``approval_id``, ``run_id``, ``thread_id`` and ``tool``: signoff's loggers
give them as ``extra`` (`fields_of`), and uvicorn's access log has them read from the request's
path. Never argument values: signoff's messages do not quote them, and the access log shows the
path without its query string.

``text`` leaves logging as it always was: warnings and errors, plain, on stderr.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from datetime import UTC, datetime
from typing import Any, Literal

from signoff.types import Approval

__all__ = ["FIELDS", "JSONFormatter", "LogFormat", "configure_logs", "fields_of"]

LogFormat = Literal["text", "json"]
FIELDS = ("approval_id", "run_id", "thread_id", "tool")
"""What a record may say it is about, as a logger's ``extra``."""
_IDS_IN_PATHS = (
    ("approval_id", re.compile(r"^/v1/approvals/([^/?]+)")),
    ("run_id", re.compile(r"^/v1/runs/([^/?]+)")),
    ("thread_id", re.compile(r"^/v1/threads/([^/?]+)")),
)
_ACCESS = "uvicorn.access"


def fields_of(approval: Approval) -> dict[str, str]:
    """What a record about `approval` gives as ``extra``: its ids and its tool."""
    fields = {"approval_id": approval.id, "tool": approval.call.name}
    if approval.run_id is not None:
        fields["run_id"] = approval.run_id
    if approval.thread_id is not None:
        fields["thread_id"] = approval.thread_id
    return fields


class JSONFormatter(logging.Formatter):
    """One JSON object per record, on one line."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
        }
        access = _access(record) if record.name == _ACCESS else None
        if access is None:
            entry["message"] = record.getMessage()
        else:
            entry |= access
        for name in FIELDS:
            value = getattr(record, name, None)
            if isinstance(value, str):
                entry[name] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def _access(record: logging.LogRecord) -> dict[str, Any] | None:
    """An access log record's request, its path without the query, and the ids in the path."""
    if not isinstance(record.args, tuple) or len(record.args) != 5:
        return None
    client, method, full_path, _, status = record.args
    path = str(full_path).split("?", 1)[0]
    found: dict[str, Any] = {
        "message": f"{method} {path} {status}",
        "method": method,
        "path": path,
        "status": status,
        "client": client,
    }
    for name, pattern in _IDS_IN_PATHS:
        match = pattern.match(path)
        if match:
            found[name] = match.group(1)
    return found


def configure_logs(log_format: LogFormat) -> dict[str, Any]:
    """Set up logging for a server in `log_format`; the keyword arguments for uvicorn's
    `Config` that go with it."""
    if log_format == "text":
        return {"log_level": "warning"}
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JSONFormatter())
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(logging.WARNING)
    logging.getLogger("signoff").setLevel(logging.INFO)
    # uvicorn's own config would put its handlers back: its loggers reach the root's instead.
    return {"log_config": None, "log_level": "info", "access_log": True}
