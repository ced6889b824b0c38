"""Refusals shared by the adapters: what a request of one wire asks that the upstream's wire
cannot do, or whose result the gateway could not carry back to the client. Each is a 400 that
names the client's own field, never a silent omission."""

from __future__ import annotations

from skillstate.conversation import OutputFormat, Params, ProtocolError, Wire

#: Where each wire's client sets the output format and asks for log probabilities.
FORMAT_FIELD = {
    Wire.CHAT: "response_format",
    Wire.RESPONSES: "text.format",
    Wire.MESSAGES: "output_config.format",
}
LOGPROBS_FIELD = {
    Wire.CHAT: "logprobs",
    Wire.RESPONSES: "top_logprobs",
    Wire.MESSAGES: "logprobs",
}


def check_choices(params: Params, source: Wire, target: Wire, *, several: bool) -> None:
    """Refuse ``n`` > 1 where ``target`` gives one answer per request (``several`` False), and
    log probabilities on any translation: no canonical reply holds them, so the client's wire
    would never get them back."""
    if not several and params.candidates is not None and params.candidates > 1:
        raise ProtocolError(
            f"n={params.candidates} asks for several choices, which the {target.value} wire of"
            " this upstream cannot give (one answer per request); send n=1 or leave it out",
            param="n",
        )
    if params.logprobs is not None:
        field = LOGPROBS_FIELD[source]
        raise ProtocolError(
            f"{field} cannot be translated: the reply of the {target.value} upstream would"
            f" not carry log probabilities back to a {source.value} client",
            param=field,
        )


def format_refused(fmt: OutputFormat, source: Wire, target: Wire, hint: str = "") -> ProtocolError:
    """The refusal of an output format ``target`` has no form for."""
    field = FORMAT_FIELD[source]
    return ProtocolError(
        f"{field} of type {fmt.kind!r} has no equivalent on the {target.value} wire of this"
        f" upstream{hint}",
        param=field,
    )
