"""Model providers: everything speaks OpenAI chat-completions JSON.

A provider turns a request body into an *exchange* (the raw response as it
came off the wire); ``lab.providers.wire.parse_exchange`` turns an exchange
into a ``Completion``. Cassettes record and replay exchanges, so replay runs
the same parsing code as a live call. A new provider is a module here
implementing ``base.Provider``, registered by short name in ``registry``.
``usage`` reads token usage from every place providers put it and merges it
over the chunks of a stream.
``preflight`` checks a provider's key and endpoint before the first run.
``encode`` turns a ``Completion`` back into wire data (scripted answers);
``client`` builds httpx options from the injected environment (CA files,
proxies) and keeps the process's pooled clients; ``faults`` classifies failures by kind whatever their shape (status, error
object, mid-stream error) and decides what is retried; ``transfer`` reads
an answer under the call's overall deadline and ``max_response_bytes``.

May import: lab.errors and the standard library (httpx, httpx-sse).
"""

import sys

# httpx's package imports its command-line client (click, rich, pygments) when those are
# installed: about 60 ms of CPU per lab process for a program the lab never runs. A None
# entry makes that one import fail, which httpx expects (its ``httpx.main`` then only says
# the CLI is unavailable); the ``httpx`` console script, a process of its own, is unaffected.
if "httpx" not in sys.modules:
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
