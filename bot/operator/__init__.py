"""What an operator does and sees, once, below the surfaces that offer it.

The command line (``bot.cli``), the browser console (``bot.console``) and the chat admin
commands (``bot.commands``) are three ways in to the same actions (``actions``: approve or deny
a pairing, allow or block a user, retry or purge outbox rows, cancel a schedule) and to the
same views of the store (``labels``, ``trace``, ``schedules``: table cells, JSON and trace
text). Neither surface imports another: what two of them share lives here (design §23).
"""
