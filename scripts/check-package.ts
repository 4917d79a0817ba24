/**
 * `npm run check:package`: what a user gets from `npm install pinboard`, checked end to end.
 *
 *   1. `npm pack` (prepack builds dist/) holds LICENSE, README.md and the `pinboard` bin, then the
 *      tarball is installed into a fresh temporary project, with nothing of this clone on its module path;
 *   2. a TypeScript user of `pinboard`, `pinboard/pinned` and `pinboard/node` type-checks with
 *      moduleResolution node16, with bundler, and with the tsconfig `tsc --init` writes (nodenext,
 *      exactOptionalPropertyTypes: options filled from process.env, which may be undefined);
 *   3. `npx pinboard serve` starts (embedded redis-server, development key), the README's worker
 *      snippet (the block after `<!-- package-check: worker.mjs -->`) runs with plain `node` with
 *      what `.pinboard/dev.env` holds (the workers' own Redis user among them), and
 *      a request through Pinboard reaches it; `npx pinboard mint-credential` mints an operator
 *      credential with the key `serve` kept, and `npx pinboard health` answers with it;
 *   4. the Workers entry: wrangler bundles the README's wrangler.toml for the package, and that
 *      bundle in workerd (Miniflare), on the same Redis over REST, forwards to the same placement.
 *
 * Every process it starts is stopped by pid; the temporary project is removed unless --keep.
 */
import { type ChildProcess, execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "../src/runtime/node/process/free-port.ts";
import { checkWorkersEntry } from "./check-package/workers-entry.ts";
import { type GroupProcess, spawnGroup } from "./spawn-group.ts";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const TSC = join(ROOT, "node_modules", ".bin", "tsc");
const keep = process.argv.includes("--keep");

function step(text: string): void {
  console.log(`check:package: ${text}`);
}

/** Runs a command to completion; on failure the error carries what it printed on stdout too (tsc's diagnostics). */
function run(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): string {
  try {
    const options = { cwd, env: { ...process.env, ...env }, encoding: "utf8" as const };
    return execFileSync(command, args, { ...options, stdio: ["ignore", "pipe", "inherit"] });
  } catch (err) {
    const stdout = (err as { stdout?: string }).stdout ?? "";
    throw new Error(`${command} ${args.join(" ")} failed:\n${stdout}`);
  }
}

/** The README's block of `lang` after `<!-- package-check: name -->`: what the check runs as the user would. */
export function readmeBlock(readme: string, name: string, lang: string): string {
  const mark = `<!-- package-check: ${name} -->`;
  const fence = "```";
  const block = new RegExp(`${fence}${lang}\\n([\\s\\S]*?)${fence}`).exec(readme.slice(readme.indexOf(mark)));
  if (!readme.includes(mark) || !block?.[1]) throw new Error(`README.md has no ${fence}${lang} block after ${mark}`);
  return block[1];
}

/** Files `package.json` promises a user (its `files`, `bin`, the license it names) that the tarball must hold. */
const REQUIRED_IN_TARBALL = ["LICENSE", "README.md", "package.json", "bin/pinboard.mjs"];

function missingFromTarball(packedPaths: readonly string[]): string[] {
  return REQUIRED_IN_TARBALL.filter((path) => !packedPaths.includes(path));
}

function packInto(dir: string): string {
  const [packed] = JSON.parse(run("npm", ["pack", "--json", "--pack-destination", dir], ROOT)) as [
    { filename: string; files: { path: string }[] },
  ];
  const missing = missingFromTarball(packed.files.map((file) => file.path));
  if (missing.length > 0) throw new Error(`the npm pack tarball lacks ${missing.join(", ")}`);
  return join(dir, packed.filename);
}

function installProject(dir: string, tarball: string): void {
  const manifest = { name: "pinboard-user", private: true, type: "module" };
  writeFileSync(join(dir, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  const typesNode = JSON.parse(readFileSync(join(ROOT, "node_modules/@types/node/package.json"), "utf8")).version;
  run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", tarball, `@types/node@${typesNode}`], dir);
}

const TYPESCRIPT_USER = `import { createWorker, type Instance, type RequestContext, RedisDurabilityStore } from "pinboard/pinned";
import { parseConfig, type Config } from "pinboard";
import { startNode, type RunningPinboard } from "pinboard/node";

class Counter implements Instance {
  async fetch(_request: Request, ctx: RequestContext): Promise<Response> {
    return Response.json({ epoch: ctx.epoch });
  }
}
export const worker = createWorker({
  pinboardUrl: "http://127.0.0.1:8787",
  credential: "token",
  clientId: process.env.CLIENT_ID,
  namespaces: { "/counter": Counter },
  durability: new RedisDurabilityStore({ redis: "redis://127.0.0.1:6379" }),
});
export const config: Config = parseConfig({});
export const start: (env: Record<string, string | undefined>) => Promise<RunningPinboard> = startNode;
`;

function typeCheck(dir: string): void {
  writeFileSync(join(dir, "user.ts"), TYPESCRIPT_USER);
  const variants = [
    { name: "node16", module: "node16", moduleResolution: "node16" },
    { name: "bundler", module: "esnext", moduleResolution: "bundler" },
    // The strict options `npx tsc --init` (TypeScript 7) turns on besides nodenext.
    {
      name: "nodenext",
      module: "nodenext",
      moduleResolution: "nodenext",
      extra: { exactOptionalPropertyTypes: true, noUncheckedIndexedAccess: true, verbatimModuleSyntax: true },
    },
  ];
  for (const variant of variants) {
    const compilerOptions = {
      ...variant.extra,
      module: variant.module,
      moduleResolution: variant.moduleResolution,
      target: "es2022",
      lib: ["es2023", "dom"],
      types: ["node"],
      strict: true,
      noEmit: true,
      skipLibCheck: false,
    };
    const file = `tsconfig.${variant.name}.json`;
    writeFileSync(join(dir, file), JSON.stringify({ compilerOptions, files: ["user.ts"] }, null, 2));
    run(TSC, ["-p", file], dir);
    step(`a TypeScript user type-checks (moduleResolution ${variant.name})`);
  }
}

type Started = GroupProcess;

/** `npx` and the launcher run Pinboard as grandchildren: their group, so that stop() ends them all. */
function startLogged(command: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Started {
  return spawnGroup(command, args, { cwd, env: { ...process.env, ...env } });
}

async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  started: Started[],
  ms = 60_000,
): Promise<T> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const found = await probe().catch(() => undefined);
    if (found !== undefined) return found;
    for (const s of started) {
      if (s.child.exitCode !== null) throw new Error(`${what}: a process exited early:\n${s.output()}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${what}: not within ${ms} ms\n${started.map((s) => s.output()).join("\n---\n")}`);
}

/** A value of `.pinboard/dev.env`, where `pinboard serve` writes the credentials and the workers' Redis URL. */
function devEnvValue(dir: string, name: string): string | undefined {
  const text = readFileSync(join(dir, ".pinboard", "dev.env"), "utf8");
  return new RegExp(`^export ${name}='([^']*)'$`, "m").exec(text)?.[1];
}

/** Pinboard's own URL of the dev store (its default user), for the Workers entry on the same Redis. */
function devStoreAdminUrl(dir: string): string {
  const store = join(dir, ".pinboard", "redis");
  const port = readFileSync(join(store, "port"), "utf8").trim();
  const password = readFileSync(join(store, "default.password"), "utf8").trim();
  return `redis://:${password}@127.0.0.1:${port}`;
}

async function serveAndForward(dir: string): Promise<void> {
  const started: Started[] = [];
  try {
    const port = await freePort();
    const pinboard = startLogged("npx", ["pinboard", "serve"], dir, { PORT: String(port), HOST: "127.0.0.1" });
    started.push(pinboard);
    const base = `http://127.0.0.1:${port}`;
    await waitFor("pinboard serve", async () => ((await fetch(`${base}/healthz`)).ok ? true : undefined), started);
    await waitFor("the start banner", async () => (/^Try:$/m.test(pinboard.output()) ? true : undefined), started);
    if (/eyJ/.test(pinboard.output())) throw new Error(`the start banner prints a credential:\n${pinboard.output()}`);
    const workersRedisUrl = devEnvValue(dir, "DURABLE_REDIS_URL");
    if (!workersRedisUrl?.startsWith("redis://pinned:"))
      throw new Error(`.pinboard/dev.env names no workers' Redis user: ${workersRedisUrl}`);
    step("`npx pinboard serve` is listening with an embedded redis-server; credentials in .pinboard/dev.env");
    writeFileSync(
      join(dir, "worker.mjs"),
      readmeBlock(readFileSync(join(ROOT, "README.md"), "utf8"), "worker.mjs", "js"),
    );
    const worker = startLogged(process.execPath, ["worker.mjs"], dir, {
      PINBOARD_URL: base,
      PINBOARD_WORKER_TOKEN: devEnvValue(dir, "PINBOARD_WORKER_TOKEN"),
      DURABLE_REDIS_URL: workersRedisUrl,
      PORT: String(await freePort()),
    });
    started.push(worker);
    const refusals: string[] = [];
    const body = await waitFor(
      "a request through Pinboard to the README's worker",
      async () => {
        const answer = await fetch(`${base}/counter/package-check/increment`, { method: "POST" });
        if (answer.status === 200) return (await answer.json()) as { count: number; epoch: string };
        refusals.push(`${answer.status} ${await answer.text()}`);
        return undefined;
      },
      started,
    );
    if (body.count !== 1 || typeof body.epoch !== "string")
      throw new Error(`unexpected answer ${JSON.stringify(body)}`);
    // A store this Pinboard created has no cold-start window: nothing was placed before it existed.
    const coldStarts = refusals.filter((r) => r.includes("registry cold start, retry"));
    if (coldStarts.length > 0) throw new Error(`a brand-new dev store refused with a cold start: ${coldStarts[0]}`);
    step(`POST /counter/package-check/increment → 200 ${JSON.stringify(body)} from \`node worker.mjs\``);
    // An operator credential minted by the installed package with the development key `serve` kept.
    const secret = readFileSync(join(dir, ".pinboard", "dev-passport-secret"), "utf8").trim();
    const mint = [
      "pinboard",
      "mint-credential",
      "--secret-file",
      ".pinboard/dev-passport-secret",
      "--scope",
      "pinboard:operator",
    ];
    const operatorToken = run("npx", mint, dir).trim();
    const health = run("npx", ["pinboard", "health"], dir, {
      PINBOARD_URL: base,
      PINBOARD_OPERATOR_TOKEN: operatorToken,
    });
    step(`\`npx pinboard health\` answers from the installed CLI:\n${health.trimEnd()}`);
    const readme = readFileSync(join(ROOT, "README.md"), "utf8");
    const forwarded = await checkWorkersEntry({
      dir,
      wranglerToml: readmeBlock(readme, "wrangler.toml", "toml"),
      redisUrl: devStoreAdminUrl(dir),
      passportSecret: secret,
      operatorToken,
      placed: { path: "/counter/package-check", count: 1 },
    });
    step(`the Workers entry, bundled by wrangler from the README's wrangler.toml, in workerd: ${forwarded}`);
  } finally {
    for (const s of started.reverse()) await stop(s.child);
  }
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-(child.pid as number), signal);
  } catch {
    // The group is gone already.
  }
}

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) {
    signalGroup(child, "SIGKILL");
    return Promise.resolve();
  }
  return new Promise((resolve) => {
    const kill = setTimeout(() => signalGroup(child, "SIGKILL"), 10_000);
    child.once("exit", () => {
      clearTimeout(kill);
      signalGroup(child, "SIGKILL");
      resolve();
    });
    signalGroup(child, "SIGTERM");
  });
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "pinboard-package-"));
  try {
    const tarball = packInto(dir);
    step(`packed ${tarball}`);
    installProject(dir, tarball);
    step(`installed into ${dir}`);
    typeCheck(dir);
    await serveAndForward(dir);
    step("passed");
  } finally {
    if (keep) step(`kept ${dir}`);
    else rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().catch((err: unknown) => {
    console.error(`check:package: FAILED: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(1);
  });
}
