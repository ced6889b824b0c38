"""The names OpenTelemetry's GenAI semantic conventions give a model call's usage, and the
gateway's own beside them: the vocabulary of the trace a tracing backend reads
(``server.genai_spans``), kept with the other wires' names."""

INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
CACHE_READ_TOKENS = "gen_ai.usage.cache_read.input_tokens"
CACHE_WRITE_TOKENS = "gen_ai.usage.cache_write.input_tokens"
FINISH_REASON = "finish_reason"
"""A captured output message's field: why the model stopped."""
PASSTHROUGH_INPUT_TOKENS = "skillstate.passthrough.input_tokens"
"""The input tokens a pass-through of the request would have sent (the ledger's estimate)."""
SAVED_INPUT_TOKENS = "skillstate.saved.input_tokens"
"""The pass-through's input tokens less those the request's rounds sent."""
