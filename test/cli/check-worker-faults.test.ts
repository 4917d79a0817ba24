import { describe, expect, it } from "vitest";
import { spawnCli } from "./cli-process.ts";

/**
 * `pinboard check-worker` (through the bin/pinboard.mjs launcher) against a worker written by hand
 * with faults on purpose (test/support/broken-worker-main.ts), a worker-library worker without a
 * durability store and with requireBoundAttestation, one that never registers, and a command line
 * it cannot run. check-worker.test.ts runs it against workers that keep the contract.
 */

const worker = (script: string) => ["--", process.execPath, "--import", "tsx", `test/support/${script}`];
const checkWorker = (args: readonly string[], env: Record<string, string> = {}) =>
  spawnCli(["check-worker", ...args], { launcher: true, env });

const INVALID_ATTESTATION = 'got 200 {"served":true}; the contract says 403 {"detail":"invalid attestation"}';
const NOT_REFUSED = 'got 200 {"served":true}; the contract says 503 + Pinned-Refusal: lease-unhealthy';

const BROKEN_LINES = [
  `FAIL attestation: an attestation naming another method (htm) is refused: ${INVALID_ATTESTATION}`,
  `FAIL attestation: an attestation naming another target (htu) is refused: ${INVALID_ATTESTATION}`,
  `FAIL attestation: an attestation naming the target percent-encoded otherwise (/a, /%61) is refused: ${INVALID_ATTESTATION}`,
  `FAIL attestation: an attestation naming the target without its query is refused: ${INVALID_ATTESTATION}`,
  `FAIL attestation: an attestation whose epoch claim is not Pinboard-Epoch is refused: ${INVALID_ATTESTATION}`,
  `FAIL attestation: an attestation without an epoch claim on a call with Pinboard-Epoch is refused: ${INVALID_ATTESTATION}`,
  `FAIL attestation: the same attestation sent again (jti replayed) is refused: ${INVALID_ATTESTATION}`,
  'FAIL epoch: a forward at epoch N after N+1 is answered 409: got 200 {"served":true}; the contract says 409 {"detail":"stale placement epoch"}',
  'FAIL stats: attested stats have the fields\' types: got 200 {"headroom":"lots","instances":[]}: headroom is not a number; the contract says 200 with a JSON object (headroom number, draining boolean, instances [{ns, …}], process {uptimeMs, rssBytes})',
  'SKIP wake: _wake (not mounted: answered 404 {"error":"no such route"})',
  'SKIP alarm: _alarm (not mounted: answered 404 {"error":"no such route"})',
  'FAIL wind_down: the wind_down message is acked on a later heartbeat: got no ack; the contract says acks: ["check-worker-wind-down"] within 5000 ms',
  `FAIL wind_down: a request to the instance after its deadline is refused in-band: ${NOT_REFUSED}`,
  `FAIL refusal: a new activation is refused in-band while draining: ${NOT_REFUSED}`,
  `FAIL refusal: a new activation is refused in-band once the lease is withheld past its TTL: ${NOT_REFUSED}`,
  "FAILED: 17 passed, 13 failed, 2 skipped",
];

describe("pinboard check-worker finds faults", () => {
  it("skips _wake on a worker without a durability store, and takes a stricter refusal of a malformed epoch", {
    timeout: 45_000,
  }, async () => {
    const run = await checkWorker(worker("contract-worker-main.ts"), { NO_DURABILITY: "1", REQUIRE_BOUND: "1" });
    const lines = run.stdout.trimEnd().split("\n");
    expect(lines.filter((line) => !line.startsWith("PASS "))).toEqual([
      'SKIP wake: _wake (not mounted: answered 404 {"error":"no route POST /_wake"})',
      "ok: 33 passed, 0 failed, 1 skipped",
    ]);
    expect(lines).toContain(
      "PASS epoch: a malformed Pinboard-Epoch is refused (403 invalid attestation: this worker requires bound attestations)",
    );
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

  it("stops checking a worker that exits midway, and says so", { timeout: 20_000 }, async () => {
    const run = await checkWorker(worker("broken-worker-main.ts"), { EXIT_AFTER_MS: "300" });
    const lines = run.stdout.trimEnd().split("\n");
    expect(lines.at(-2)).toBe(
      "FAIL process: the worker runs through the checks: got the worker exited (status 4); the contract says a worker that keeps running until stopped",
    );
    expect(run.stderr).toMatch(/^the worker's last output lines:\n {2}ready http:\/\/127\.0\.0\.1:\d+\n$/);
    expect(run.code).toBe(1);
  });

  it("prints its usage for --help and pinboard help check-worker, launcher or not", async () => {
    const [help, topic, direct] = await Promise.all([
      checkWorker(["--help"]),
      spawnCli(["help", "check-worker"], { launcher: true }),
      spawnCli(["help", "check-worker"]),
    ]);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^usage: pinboard check-worker \[options\] -- <worker command> \[args…\]\n/);
    expect(topic.stdout).toBe(help.stdout);
    expect(direct.stdout).toBe(help.stdout);
  });

  it("refuses a command line without a worker command or --listen (exit 2)", async () => {
    const run = await checkWorker([]);
    expect(run.code).toBe(2);
    expect(run.stderr).toBe(
      'pinboard check-worker: give the worker command after --, or --listen <host:port> to wait for a worker\nRun "pinboard check-worker --help" for usage.\n',
    );
  });
});
