import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { reapOnExit } from "../../src/runtime/node/process/reap-on-exit.ts";
import { spawnCli } from "./cli-process.ts";

/**
 * `pinboard check-worker`, run as operators run it (the bin/pinboard.mjs launcher), against real
 * worker processes: one built with the worker library, whose every check passes, and one written
 * by hand with faults on purpose (test/support/broken-worker-main.ts), whose faults it names.
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
  "ok: 33 passed, 0 failed, 0 skipped",
];

const INVALID_ATTESTATION = 'got 200 {"served":true}; the contract says 403 {"detail":"invalid attestation"}';
const NOT_REFUSED = 'got 200 {"served":true}; the contract says 503 + Pinned-Refusal: lease-unhealthy';

const BROKEN_LINES = [
  `FAIL attestation: an attestation naming another method (htm) is refused: ${INVALID_ATTESTATION}`,
  `FAIL attestation: an attestation naming another target (htu) is refused: ${INVALID_ATTESTATION}`,
  `FAIL attestation: an attestation whose epoch claim is not Pinboard-Epoch is refused: ${INVALID_ATTESTATION}`,
  `FAIL attestation: an attestation without an epoch claim on a call with Pinboard-Epoch is refused: ${INVALID_ATTESTATION}`,
  `FAIL attestation: the same attestation sent again (jti replayed) is refused: ${INVALID_ATTESTATION}`,
  'FAIL epoch: a forward at epoch N after N+1 is answered 409: got 200 {"served":true}; the contract says 409 {"detail":"stale placement epoch"}',
  "FAIL stats: attested stats have the fields' types: got headroom is not a number; the contract says 200 with a JSON object (headroom number, draining boolean, instances [{ns, …}], process {uptimeMs, rssBytes})",
  'SKIP wake: _wake (not mounted: answered 404 {"error":"no such route"})',
  'SKIP alarm: _alarm (not mounted: answered 404 {"error":"no such route"})',
  'FAIL wind_down: the wind_down message is acked on a later heartbeat: got no ack; the contract says acks: ["check-worker-wind-down"] within 5000 ms',
  `FAIL wind_down: a request to the instance after its deadline is refused in-band: ${NOT_REFUSED}`,
  `FAIL refusal: a new activation is refused in-band while draining: ${NOT_REFUSED}`,
  `FAIL refusal: a new activation is refused in-band once the lease is withheld past its TTL: ${NOT_REFUSED}`,
  "FAILED: 17 passed, 11 failed, 2 skipped",
];

describe("pinboard check-worker", () => {
  it("passes every check of a worker built with the worker library", { timeout: 45_000 }, async () => {
    const run = await checkWorker(worker("contract-worker-main.ts"));
    expect(run.stdout.trimEnd().split("\n")).toEqual(PINNED_LINES);
    expect(run.code).toBe(0);
  });

  it("names each fault of a worker written by hand and exits 1", { timeout: 45_000 }, async () => {
    const run = await checkWorker(worker("broken-worker-main.ts"));
    const lines = run.stdout.trimEnd().split("\n");
    expect(lines.filter((line) => !line.startsWith("PASS "))).toEqual(BROKEN_LINES);
    // What it does right passes: the probe, the signature, aud and exp, the malformed epoch.
    expect(lines).toContain("PASS attestation: an attestation signed with another secret is refused");
    expect(lines).toContain("PASS epoch: a malformed Pinboard-Epoch is answered 400");
    expect(run.code).toBe(1);
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
      expect(report.counts).toEqual({ pass: 33, fail: 0, skip: 0 });
      expect(report.worker.namespaces).toEqual(["/counter", "/chat"]);
    } finally {
      worker.child.kill("SIGTERM");
      await worker.exited;
    }
  });

  it("reports a worker that never registers, as JSON with --json", { timeout: 20_000 }, async () => {
    const run = await checkWorker([
      "--json",
      "--",
      process.execPath,
      "-e",
      "console.log('\\u001b[2Jbye'); process.exit(3)",
    ]);
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout)).toEqual({
      ok: false,
      worker: {},
      counts: { pass: 0, fail: 1, skip: 0 },
      checks: [
        {
          status: "fail",
          group: "register",
          title: "the worker registers and answers the register's challenge probe",
          got: "the worker exited (status 3) without registering",
          expected:
            'POST /registry/register with the protocol\'s body, and the probe answered 200 {"value": challengeValue}',
        },
      ],
    });
    // The worker's output is shown, its control codes escaped.
    expect(run.stderr).toContain("  \\u001b[2Jbye");
    expect(run.stderr).not.toContain("\u001b");
  });

  it("refuses a command line without a worker command or --listen (exit 2)", async () => {
    const run = await checkWorker([]);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(
      'pinboard check-worker: give the worker command after --, or --listen <host:port> to wait for a worker\nRun "pinboard check-worker --help" for usage.\n',
    );
  });
});
