"""The operator console in the browser (design §23): server-rendered pages under ``/console``
on the daemon's HTTP server, with the same views and actions as the operator CLI.

``app`` mounts it; ``auth`` and ``login_links`` let operators in; ``pages_*`` render the
views from ``bot.operator`` and act through ``bot.operator.actions``, what the CLI and the
chat commands run too. The console never imports the CLI (tests/test_layering.py).
"""
