"""Leader duties: each a pure decision over frozen dataclasses (`*_rules.py`, no Session, no
clock) and a thin I/O step that loads rows, asks it, and applies the answer. workers/leader.py
wires the steps on APScheduler.

| duty | I/O step | decision |
|---|---|---|
| heartbeat expiry | heartbeat_expiry.expire | silence_rules.went_silent (which nodes expired: SQL) |
| disconnect windows ending | disconnect.expire_unknown, settle_disconnected | SQL (sql/queries/disconnect.sql) |
| drain | drain.advance | drain_rules.next_step |
| all three, each second | node_lifecycle.node_lifecycle | — |
| deployment watcher | deployment_watch.watch | deployment_rules.decide |
| periodic launches | periodic_launch.launch_due | launch_rules.due_launches (app/values/cron.py) |
| blocked-eval sweeps | eval_sweeps | SQL (sql/queries/broker.sql) |
| GC scheduling | gc_schedule | app/gc |
"""
