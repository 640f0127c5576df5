"""The reference command agent: a short standalone script on the official openai SDK (agent.py).

It runs inside the sandbox with only its interpreter and the ``openai``
package, so ``agent.py`` imports nothing from ``lab``.
"""
