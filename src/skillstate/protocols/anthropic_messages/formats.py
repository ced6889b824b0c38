"""The answer's format on this wire: ``output_config.format``, ``{type: "json_schema",
schema}`` (structured outputs, generally available with no beta header), or the top-level
``output_format`` of the same shape that the API still takes from its beta.

Either is ``Params.output_format`` (a type this wire does not define is kept by name). A
request of another wire can bring what this wire has no form for, and is refused by name
(``check_foreign``): a ``json_object`` format (this wire constrains output to a schema only),
a ``json_schema`` format without a schema, any other type, and ``n`` > 1 or log probabilities
(see ``unsupported.check_choices``). ``text``, the default, needs nothing; a schema's
``name``, ``description`` and ``strict`` have no place here (the API always enforces the
schema) and are left out.
"""

from __future__ import annotations

from typing import Any

from skillstate.conversation import Json, OutputFormat, Request, Wire
from skillstate.protocols.fields import at, need_object, required_str
from skillstate.protocols.unsupported import check_choices, format_refused

WIRE = Wire.MESSAGES


def read_format(value: Any, path: str) -> OutputFormat:
    raw = need_object(value, path)
    kind = required_str(raw, "type", path)
    if kind != "json_schema":
        return OutputFormat(kind)
    schema = raw.get("schema")
    if schema is not None:
        schema = need_object(schema, at(path, "schema"))
    return OutputFormat(kind, schema=schema)


def config_format(output_config: Any) -> OutputFormat | None:
    """The format an ``output_config`` object holds, if any."""
    value = need_object(output_config, "output_config").get("format")
    return None if value is None else read_format(value, "output_config.format")


def encode_format(fmt: OutputFormat) -> Json:
    if fmt.kind != "json_schema":
        return {"type": fmt.kind}
    out: Json = {"type": "json_schema"}
    if fmt.schema is not None:
        out["schema"] = fmt.schema
    return out


def check_foreign(req: Request) -> None:
    """Refuse what a request of another wire asks that this wire cannot do."""
    check_choices(req.params, req.source, WIRE, several=False)
    fmt = req.params.output_format
    if fmt is None or fmt.kind == "text":
        return
    if fmt.kind == "json_object":
        hint = ": it constrains output to a JSON schema only; send a json_schema format"
        raise format_refused(fmt, req.source, WIRE, hint)
    if fmt.kind != "json_schema":
        raise format_refused(fmt, req.source, WIRE)
    if fmt.schema is None:
        raise format_refused(fmt, req.source, WIRE, " without a schema: give its schema")


def sent_format(fmt: OutputFormat | None) -> OutputFormat | None:
    """The format a request of another wire sends: none for ``text``, the default."""
    return None if fmt is None or fmt.kind == "text" else fmt
