"""Model providers: everything speaks OpenAI chat-completions JSON.

A provider turns a request body into an *exchange* (the raw response as it
came off the wire); ``lab.providers.wire.parse_exchange`` turns an exchange
into a ``Completion``. Cassettes record and replay exchanges, so replay runs
the same parsing code as a live call.
"""
