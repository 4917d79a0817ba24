"""Breaks each rule the tests guard (one patch at a time), runs the tests that guard it, and reports
whether they failed, as every test here must be able to: /usr/bin/python3 python/tests/mutants/run.py [name …]"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PYTHON = Path(__file__).resolve().parents[2]
PKG = PYTHON / "pinned"

# name: (file, original, broken, tests)
MUTANTS: dict[str, tuple[str, str, str, str]] = {
    "lease margin 5%": ("lease.py", "ttl_ms / 20", "ttl_ms / 2000", "tests/unit/test_lease.py"),
    "unhealthy at 2/3": ("lease.py", "self.ttl_ms * 2 / 3", "self.ttl_ms", "tests/unit/test_lease.py"),
    "htm checked": ("attestation_guard.py", "if claims.htm != call.method:", "if False:", "tests/unit/test_attestation_guard.py"),
    "epoch claim checked": ("attestation_guard.py", "if claims.epoch != call.epoch:", "if False:", "tests/unit/test_attestation_guard.py"),
    "epoch claim required beside Pinboard-Epoch": ("attestation_guard.py", "if claims.epoch is None and is_epoch(call.epoch):", "if False:", "tests/unit/test_attestation_guard.py"),
    "jti single use": ("attestation_guard.py", "return self._o.seen.admit(claims.jti, deadline, self._o.now_seconds())", "return True", "tests/unit/test_attestation_guard.py"),
    "aud checked": ("attestation_guard.py", "if claims.aud not in self._accepted() and not await", "if False and not await", "tests/unit/test_attestation_guard.py"),
    "register wait": ("attestation_guard.py", "await asyncio.shield(registering)", "pass", "tests/unit/test_attestation_guard.py"),
    "' in the query set": ("whatwg_target.py", "_QUERY_SET = frozenset(\" \\\"#<>'\")", "_QUERY_SET = frozenset(\" \\\"#<>\")", "tests/unit/test_attestation_guard.py"),
    "stale epoch 409": ("instance_table.py", "if live is not None and value < live.epoch_value:", "if False:", "tests/unit/test_instance_table.py"),
    "ended epochs refused": ("instance_table.py", "if self._ended.ended(key, value):", "if False:", "tests/unit/test_instance_table.py"),
    "lapsed refuses residents": ("instance_table.py", "        if self._deps.lapsed():\n", "        if False:\n", "tests/unit/test_instance_table.py"),
    "capacity": ("instance_table.py", "len(self._live) >= self._deps.max_instances", "False", "tests/unit/test_instance_table.py"),
    "input gate holds": ("live_instance.py", "InputGate(not deps.gates.allow_concurrency,", "InputGate(False,", "tests/unit/test_gates.py"),
    "output gate holds": ("output_gate.py", "if not self._pending or not self._holds_output:", "if True:", "tests/unit/test_gates.py"),
    "fence in the memory store": ("memory_durability.py", "if order < 0:", "if False:", "tests/unit/test_stores_and_memory.py"),
    "wind-down from the sending": ("wind_down.py", "message.deadline * 1000 - since_sent_ms", "message.deadline * 1000", "tests/unit/test_stores_and_memory.py"),
    "renewal after a lapse retires": ("worker.py", "        for live in resident:\n            self.table.retire(live, 1012, \"lease lapsed\")", "        for live in []:\n            pass", "tests/test_lease_and_sessions.py -k lapsed"),
    "ws message after a lapse closes": ("live_instance.py", "        if not live.is_current():\n            socket.close(1012, LEASE_LAPSED_CLOSE)", "        if False:\n            socket.close(1012, LEASE_LAPSED_CLOSE)", "tests/test_lease_and_sessions.py -k lapsed"),
    "heartbeat 403 keeps the session": ("registration.py", "        raise self._calls.failure(\"heartbeat\", answer)", "        self.session_id = None\n        raise self._calls.failure(\"heartbeat\", answer)", "tests/test_lease_and_sessions.py -k 403"),
    "re-register from the heartbeat": ("registration.py", "            await self._reregister()\n            return self.interval_ms()\n        raise", "            return self.interval_ms()\n        raise", "tests/test_lease_and_sessions.py -k lost"),
    "_alarm needs the secret": ("routes.py", "if is_alarm and not d.guard.has_proxy_secret(facts):", "if False:", "tests/test_worker_calls.py -k alarm"),
    "hand-over releases": ("wind_down.py", "                released = await self._release(batch)", "                released = False", "tests/test_worker_processes.py -k sigterm"),
    "wind-down releases": ("wind_down.py", "            released = await self._release([live])", "            released = False", "tests/test_worker_processes.py -k wind"),
    "challenge needs the secret": ("routes.py", "if not (d.guard.has_proxy_secret(facts) or", "if False and not (d.guard.has_proxy_secret(facts) or", "tests/test_pinboard_register.py -k challenge"),
    "one activation per id": ("instance_table.py", "        live = self._live.get(key)\n        if live is not None and value", "        live = None\n        if live is not None and value", "tests/test_pinboard_register.py -k counter"),
    "draining refuses new activations": ("worker.py", "        if self.draining:\n            return \"draining\"", "        if False:\n            return \"draining\"", "tests/test_drain_and_targets.py -k cordon"),
    "clientId clash backs off": ("registration.py", "            if backoff > 0:\n                return backoff\n", "", "tests/test_drain_and_targets.py -k clientid"),
    "timed drain ends the worker": ("worker.py", "    def drain_deadline_passed(self) -> None:\n        asyncio.ensure_future(self._end_drained())", "    def drain_deadline_passed(self) -> None:\n        pass", "tests/test_drain_and_targets.py -k timed"),
    "stop during register deregisters": ("registration.py", "                await self._deregister()\n                await self._calls.close()\n                raise", "                await self._calls.close()\n                raise", "tests/test_pinboard_register.py -k stop_during"),
    "activation failure answers 503": ("routes.py", "        return activation_failed()", "        return internal_error()", "tests/test_worker_calls.py -k activation"),
    "websocket sends wait for writes": ("websocket.py", "                await self._sink.confirmed()", "                pass", "tests/test_worker_calls.py -k durable"),
    "refusal headers": ("responses.py", '{"Retry-After": "1", REFUSAL_HEADER: LEASE_UNHEALTHY}', '{"Retry-After": "1"}', "tests/test_worker_calls.py -k epoch_guard"),
    "redis store fence raises": ("redis_durability.py", "        if reply[0] == 0:\n            raise StaleEpochError", "        if False:\n            raise StaleEpochError", "tests/test_redis_durability.py -k lower_epoch"),
    "activation rewrites the alarm index": ("redis_durability.py", "await self._guard(asyncio.gather(host_entry, self._index_alarm(member, alarm)))", "await self._guard(asyncio.gather(host_entry))", "tests/test_redis_durability.py -k durability_index"),
    "hostname in the instances index": ("redis_durability.py", "self.client.hset(self.keys.instances, member, hostname)", "self.client.hsetnx(self.keys.instances, member, \"\")", "tests/test_redis_durability.py -k durability_index"),
    "clear_alarm unindexes": ("redis_durability.py", "        if cleared:\n", "        if False:\n", "tests/test_redis_durability.py -k durability_index"),
    "delete_all unindexes the alarm": ("redis_durability.py", "        await self._guard(self.client.zrem(self.keys.alarms, instance_member(ref.ns, ref.id)))", "        pass", "tests/test_redis_durability.py -k delete_all"),
    "list reverse": ("redis_durability.py", "\"1\" if opts.reverse else \"0\"", "\"0\"", "tests/test_redis_durability.py -k list_with_options"),
    "prefix bound 0xFF": ("redis_durability.py", "options.prefix.encode() + b\"\\xff\"", "options.prefix.encode() + b\"\\x7f\"", "tests/test_redis_durability.py -k list_with_options"),
    "commit deletes": ("redis_durability.py", "                deletes.append(key)", "                pass", "tests/test_redis_durability.py -k transaction"),
    "EVAL on NOSCRIPT": ("lua_scripts.py", "        if not is_no_script(err):", "        if True:", "tests/test_redis_durability.py -k flushed"),
    "password redacted": ("redis_connection.py", "            parts = parts._replace(netloc=f\"{user}:***@{host}\")", "            pass", "tests/test_redis_durability.py -k unreachable"),
    "index key names as JS": ("durable_keys.py", "{{pinned-index}}:alarms", "{{pinned-index}}:alarm", "tests/test_durability_cross_language.py -k byte_identical"),
    "FencedRedis fence raises": ("fenced_redis.py", "if reply[0] == 0:", "if False:", "tests/test_durability_cross_language.py -k fenced_redis"),
    "fence key in the slot": ("fenced_redis.py", "return f\"pinned-fence:{{{key}}}\"", "return f\"pinned-fence:{key}\"", "tests/test_redis_durability.py -k fenced_redis"),
    "the worker uses the given store": ("worker.py", "store=options.durability or MemoryDurabilityStore(),", "store=MemoryDurabilityStore(),", "tests/test_durable_worker.py"),
    "set_alarm indexes": ("redis_durability.py", "        await self._guard(self._index_alarm(instance_member(ref.ns, ref.id), at))", "        pass", "tests/test_durable_sweeper.py"),
    "index member as JS": ("durable_keys.py", '    return f"{ns}/{id}"', '    return f"{ns}:{id}"', "tests/test_durable_sweeper.py"),
    "data key as JS": ("durable_keys.py", 'return self._instance(ns, id, "data")', 'return self._instance(ns, id, "py-data")', "tests/test_mixed_fleet.py"),
    "last_error cleared on success": ("redis_durability.py", "        self._connection_error = None\n        return result", "        return result", "tests/test_redis_durability.py -k restarted"),
}


def run(name: str) -> bool:
    file, original, broken, tests = MUTANTS[name]
    path = PKG / file
    text = path.read_text()
    assert text.count(original) == 1, f"{name}: the original text is not in {file} exactly once"
    path.write_text(text.replace(original, broken))
    try:
        result = subprocess.run(
            ["/usr/bin/python3", "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests.split()],
            cwd=PYTHON, capture_output=True, timeout=300,
        )
    finally:
        path.write_text(text)
    return result.returncode != 0


def main() -> int:
    names = sys.argv[1:] or list(MUTANTS)
    survived = []
    for name in names:
        killed = run(name)
        print(f"{'killed  ' if killed else 'SURVIVED'} {name}", flush=True)
        if not killed:
            survived.append(name)
    print(f"{len(names) - len(survived)}/{len(names)} mutants killed")
    return 1 if survived else 0


if __name__ == "__main__":
    sys.exit(main())
