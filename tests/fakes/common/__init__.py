"""What every loopback fake shares: its server thread, its lock, waiting, observing, faults.

The platform fakes (``tests.fakes.telegram``, ``slack``, ``feishu``, ``dingtalk``) keep only
their wire protocol (routes, payload shapes, error codes) and build on these modules.
"""
