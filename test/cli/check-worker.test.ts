import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { reapOnExit } from "../../src/runtime/node/process/reap-on-exit.ts";
import { spawnCli } from "./cli-process.ts";

/**
 * `pinboard check-worker`, run as operators run it (the bin/pinboard.mjs launcher), against a real
 * worker process built with the worker library: every check passes, whether check-worker starts
 * the worker or waits for one started by hand (--listen). check-worker-faults.test.ts runs it
 * against a worker with faults.
 */

const worker = (script: string) => ["--", process.execPath, "--import", "tsx", `test/support/${script}`];
const checkWorker = (args: readonly string[]) => spawnCli(["check-worker", ...args], { launcher: true });

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** A process of the test, with its output collected and a promise of its exit status. */
function start(args: readonly string[], env: Record<string, string> = {}) {
  const child: ChildProcess = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  reapOnExit(child);
  const out = { stdout: "", stderr: "" };
  child.stdout!.on("data", (d: Buffer) => (out.stdout += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (out.stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  return { child, out, exited };
}

const PINNED_LINES = [
  "PASS challenge: the register's probe is answered with the challenge value",
  "PASS challenge: a heartbeat's probe is answered with the challenge value (the register's challenge)",
  "PASS challenge: an unknown challenge is answered 404",
  "PASS challenge: a probe without Pinboard-Proxy-Secret is refused",
  "PASS challenge: a probe with another secret is refused",
  "PASS challenge: after 409 unknown session the worker registers again and its probe is answered (with a new challenge)",
  "PASS challenge: the previous challenge is answered 404 once a new one is registered",
  "PASS attestation: a forward without Pinboard-Attestation is refused",
  "PASS attestation: an attestation signed with another secret is refused",
  "PASS attestation: an unsigned (alg none) attestation is refused",
  "PASS attestation: an attestation for another session (aud) is refused",
  "PASS attestation: an attestation naming another method (htm) is refused",
  "PASS attestation: an attestation naming another target (htu) is refused",
  "PASS attestation: an attestation naming the target percent-encoded otherwise (/a, /%61) is refused",
  "PASS attestation: an attestation naming the target without its query is refused",
  "PASS attestation: an expired attestation (exp + 30 s skew passed) is refused",
  "PASS attestation: an attestation whose epoch claim is not Pinboard-Epoch is refused",
  "PASS attestation: an attestation without an epoch claim on a call with Pinboard-Epoch is refused",
  "PASS attestation: a forward attested as Pinboard does is served",
  "PASS attestation: the same attestation sent again (jti replayed) is refused",
  "PASS epoch: a malformed Pinboard-Epoch is answered 400",
  "PASS epoch: a forward at epoch N after N+1 is answered 409",
  "PASS namespace: a forward to a namespace the worker did not register is answered 404",
  "PASS stats: stats without an attestation are refused",
  "PASS stats: attested stats are a JSON object with the fields' types",
  "PASS wake: an attested _wake is answered 200",
  "PASS wake: _wake without an attestation is refused",
  "PASS alarm: _alarm without Pinboard-Proxy-Secret is refused",
  'PASS alarm: _alarm with the secret is answered 200 {"fired": boolean}',
  "PASS wind_down: the instance to wind down is served",
  "PASS wind_down: the wind_down message is acked on a later heartbeat",
  "PASS wind_down: a request to the instance after its deadline is refused in-band",
  "PASS refusal: a new activation is refused in-band while draining",
  "PASS refusal: a new activation is refused in-band once the lease is withheld past its TTL",
  "PASS refusal: a new activation is served once the lease is renewed",
  "ok: 35 passed, 0 failed, 0 skipped",
];

describe("pinboard check-worker", () => {
  it("passes every check of a worker built with the worker library", { timeout: 45_000 }, async () => {
    const run = await checkWorker(worker("contract-worker-main.ts"));
    expect(run.stdout.trimEnd().split("\n")).toEqual(PINNED_LINES);
    expect(run.code).toBe(0);
  });

  it("passes every check of pinned for Python (python/examples/counter.py)", { timeout: 60_000 }, async () => {
    const run = await checkWorker(["--", "/usr/bin/python3", "python/examples/counter.py"]);
    const lines = run.stdout.trimEnd().split("\n");
    // Without a durability store the example mounts no _wake: its Counter answers the call itself
    // (200, its own body), which is what Pinboard reads as done.
    const wake = "PASS wake: an attested _wake is answered 200";
    expect(lines.map((line) => (line.startsWith(wake) ? wake : line))).toEqual(PINNED_LINES);
    expect(run.code).toBe(0);
  });

  it("checks a worker started by hand with --listen", { timeout: 45_000 }, async () => {
    const checker = start(["bin/pinboard.mjs", "check-worker", "--listen", "127.0.0.1:0", "--json"]);
    const announced = await new Promise<string>((resolve) => {
      const look = () => {
        const match = /PINBOARD_URL=(\S+) PINBOARD_WORKER_TOKEN=check-worker/.exec(checker.out.stderr);
        if (match) resolve(match[1]!);
      };
      checker.child.stderr!.on("data", look);
    });
    const worker = start(["--import", "tsx", "test/support/contract-worker-main.ts"], {
      PINBOARD_URL: announced,
      PINBOARD_WORKER_TOKEN: "check-worker",
    });
    try {
      expect(await checker.exited).toBe(0);
      const report = JSON.parse(checker.out.stdout) as {
        ok: boolean;
        counts: object;
        worker: { namespaces: string[] };
      };
      expect(report.ok).toBe(true);
      expect(report.counts).toEqual({ pass: 35, fail: 0, skip: 0 });
      expect(report.worker.namespaces).toEqual(["/counter", "/chat"]);
    } finally {
      worker.child.kill("SIGTERM");
      await worker.exited;
    }
  });
});
