import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { decodeJwt, decodeProtectedHeader } from "jose";
import { describe, it } from "vitest";
import { createPassport } from "../../src/auth/passport.ts";

const root = fileURLToPath(new URL("../../", import.meta.url));
const secret = "mint-secret-mint-secret-mint-0001";

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function mint(args: readonly string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ["--import", "tsx", "src/cli/mint-credential.ts", ...args],
      { cwd: root, env: { ...process.env, PINBOARD_PASSPORT_SECRET: "", ...env } },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === "number" ? err.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

// Each case spawns its own process; running them side by side keeps the file fast.
describe.concurrent("pinboard mint-credential", () => {
  it("prints a credential that Passport accepts, with the defaults", async ({ expect }) => {
    const run = await mint(["--secret", secret]);
    expect(run.code).toBe(0);
    const token = run.stdout.trim();
    expect(decodeProtectedHeader(token).alg).toBe("HS256");
    const claims = decodeJwt(token);
    expect(claims).toMatchObject({
      sub: "worker-1",
      scopes: ["pinboard:worker"],
      pinboard: { namespaces: ["*"], allowedBackendHosts: ["*"] },
    });
    expect(claims.account).toBeUndefined();
    expect(claims.exp! - claims.iat!).toBe(3600);
    const principal = await createPassport({ secret }).authenticate(`Bearer ${token}`, "pinboard:worker");
    expect(principal.account).toBe("worker-1");
  });

  it("encodes every flag", async ({ expect }) => {
    const run = await mint([
      "--secret",
      secret,
      "--sub",
      "ops-1",
      "--account",
      "acct",
      "--scope",
      "pinboard:operator",
      "--scope",
      "pinboard:worker",
      "--namespaces",
      "/a, /b",
      "--hosts",
      "127.0.0.1,worker.local",
      "--ports",
      "8080,8081",
      "--hostnames",
      "eu-1,us-2",
      "--envs",
      "prod",
      "--ttl",
      "0",
      "--issuer",
      "https://idp",
      "--audience",
      "pinboard",
    ]);
    expect(run.code).toBe(0);
    const claims = decodeJwt(run.stdout.trim());
    expect(claims).toMatchObject({
      sub: "ops-1",
      account: "acct",
      scopes: ["pinboard:operator", "pinboard:worker"],
      iss: "https://idp",
      aud: "pinboard",
      pinboard: {
        namespaces: ["/a", "/b"],
        allowedBackendHosts: ["127.0.0.1", "worker.local"],
        allowedPorts: [8080, 8081],
        hostnames: ["eu-1", "us-2"],
        envs: ["prod"],
      },
    });
    expect(claims.exp).toBeUndefined();
  });

  it("reads the secret from PINBOARD_PASSPORT_SECRET", async ({ expect }) => {
    const run = await mint(["--ttl", "60"], { PINBOARD_PASSPORT_SECRET: secret });
    expect(run.code).toBe(0);
    const token = run.stdout.trim();
    await expect(createPassport({ secret }).authenticate(`Bearer ${token}`, "pinboard:worker")).resolves.toBeDefined();
  });

  const secretFile = () => {
    const file = join(mkdtempSync(join(tmpdir(), "pinboard-mint-")), "dev-passport-secret");
    writeFileSync(file, `${secret}\n`, { mode: 0o600 });
    return file;
  };

  it("reads the secret from --secret-file (as .pinboard/dev-passport-secret holds it), before PINBOARD_PASSPORT_SECRET", async ({
    expect,
  }) => {
    const run = await mint(["--secret-file", secretFile(), "--scope", "pinboard:operator"], {
      PINBOARD_PASSPORT_SECRET: "another-secret-another-secret-another",
    });
    expect(run.code).toBe(0);
    const token = run.stdout.trim();
    await expect(
      createPassport({ secret }).authenticate(`Bearer ${token}`, "pinboard:operator"),
    ).resolves.toBeDefined();
  });

  it.for([
    [
      "an unreadable --secret-file",
      (file: string) => ["--secret-file", `${file}.absent`],
      (file: string) => `--secret-file: cannot read ${file}.absent (ENOENT)`,
    ],
    [
      "both --secret and --secret-file",
      (file: string) => ["--secret-file", file, "--secret", secret],
      () => "--secret and --secret-file: give one",
    ],
  ] as const)("exits 2 naming the problem for %s", async ([, args, message], { expect }) => {
    const file = secretFile();
    const run = await mint(args(file));
    expect(run.code).toBe(2);
    expect(run.stdout).toBe("");
    expect(run.stderr).toContain(`mint-credential: ${message(file)}\n`);
  });

  it("prints usage on --help", async ({ expect }) => {
    const run = await mint(["--help"]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^usage: pinboard mint-credential/);
  });

  it.for([
    ["an unknown flag", ["--secret", secret, "--bogus"]],
    ["no secret", []],
    ["a short secret", ["--secret", "short"]],
    ["an unknown scope", ["--secret", secret, "--scope", "admin"]],
    ["a namespace without slash", ["--secret", secret, "--namespaces", "threads"]],
    ["a port out of range", ["--secret", secret, "--ports", "70000"]],
    ["a port that is not a number", ["--secret", secret, "--ports", "http"]],
    ["a negative ttl", ["--secret", secret, "--ttl", "-5"]],
    ["a positional argument", ["--secret", secret, "extra"]],
  ] as const)("exits 2 with usage on stderr for %s", async ([, args], { expect }) => {
    const run = await mint(args);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe("");
    expect(run.stderr).toContain("usage: pinboard mint-credential");
  });
});
