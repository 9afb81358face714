"""The operator console in the browser (design §23): server-rendered pages under ``/console``
on the daemon's HTTP server, with the same views and actions as the operator CLI.

``app`` mounts it; ``auth`` and ``login_links`` let operators in; ``pages_*`` render the
views; every action goes through ``bot.cli.operator.operations`` (what the CLI runs).
"""
