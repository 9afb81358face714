"""Process exit statuses (design §13), from ``sysexits.h``."""

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
"""``switchboard check --online``: the configuration is valid but a probe failed."""
EXIT_TEMPFAIL = 75
"""A temporary failure; systemd restarts the unit."""
EXIT_CONFIG = 78
"""A configuration error; ``RestartPreventExitStatus=78`` keeps systemd from looping."""
