/**
 * `pinboard mint-credential` (and `npm run mint-credential` in a clone): prints an HS256 Passport
 * credential (a JWT) for the registry routes. Offline: it needs the secret, not a server.
 *   PINBOARD_PASSPORT_SECRET=… npx pinboard mint-credential --scope pinboard:worker --namespaces /threads
 *   npx pinboard mint-credential --secret-file .pinboard/dev-passport-secret --scope pinboard:operator
 * Exit status: 0 on success, 2 on bad arguments (usage on stderr).
 */
import { readFileSync } from "node:fs";
import process from "node:process";
import { parseArgs } from "node:util";
import { pinboardClaimSchema } from "../auth/claims.ts";
import { DEFAULT_CREDENTIAL_TTL_S, type MintOptions, mintCredential } from "../auth/mint.ts";
import { isProcessEntry } from "../runtime/node/process/process-entry.ts";

const USAGE = `usage: pinboard mint-credential [--secret-file <path>] [options]

Prints an HS256 Passport credential to stdout. The HMAC secret (at least 32 characters) is read
from PINBOARD_PASSPORT_SECRET, or from --secret-file; --secret puts it on the command line, where
other users of the machine see it (ps).

  --secret-file <path> read the secret from this file (e.g. .pinboard/dev-passport-secret)
  --secret <s>         the secret itself
  --sub <id>           subject (default worker-1)
  --account <acct>     owning account (default: the subject)
  --scope <scope>      pinboard:worker or pinboard:operator, repeatable (default pinboard:worker)
  --namespaces <list>  comma-separated namespaces such as /a,/b, or * (default *)
  --hosts <list>       allowed backend hosts such as 127.0.0.1, or * (default *)
  --ports <list>       allowed advertise ports such as 8080,8081 (default: any)
  --hostnames <list>   allowed hostnames (default: any)
  --envs <list>        allowed envs (default: any)
  --ttl <seconds>      lifetime, 0 for no exp (default ${DEFAULT_CREDENTIAL_TTL_S})
  --issuer <iss>       iss claim
  --audience <aud>     aud claim
  --help               show this help
`;

const SCOPES = new Set(["pinboard:worker", "pinboard:operator"]);

class UsageError extends Error {}

function list(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  return value
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
}

function integer(flag: string, value: string): number {
  if (!/^\d+$/.test(value.trim())) throw new UsageError(`${flag}: expected an integer, got ${JSON.stringify(value)}`);
  return Number(value);
}

/** --secret, else --secret-file's contents (trimmed), else PINBOARD_PASSPORT_SECRET. */
function secretOf(given: string | undefined, file: string | undefined, env: NodeJS.ProcessEnv): string {
  if (given !== undefined && file !== undefined) throw new UsageError("--secret and --secret-file: give one");
  if (file !== undefined) {
    try {
      return readFileSync(file, "utf8").trim();
    } catch (err) {
      throw new UsageError(
        `--secret-file: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? String(err)})`,
      );
    }
  }
  const secret = given ?? env.PINBOARD_PASSPORT_SECRET;
  if (!secret) throw new UsageError("--secret-file or PINBOARD_PASSPORT_SECRET is required");
  return secret;
}

function parse(argv: string[], env: NodeJS.ProcessEnv): MintOptions | "help" {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: false,
    options: {
      secret: { type: "string" },
      "secret-file": { type: "string" },
      sub: { type: "string", default: "worker-1" },
      account: { type: "string" },
      scope: { type: "string", multiple: true },
      namespaces: { type: "string", default: "*" },
      hosts: { type: "string", default: "*" },
      ports: { type: "string" },
      hostnames: { type: "string" },
      envs: { type: "string" },
      ttl: { type: "string", default: String(DEFAULT_CREDENTIAL_TTL_S) },
      issuer: { type: "string" },
      audience: { type: "string" },
      help: { type: "boolean", default: false },
    },
  });
  if (values.help) return "help";

  const secret = secretOf(values.secret, values["secret-file"], env);
  if (secret.length < 32) throw new UsageError("--secret: expected at least 32 characters");
  if (values.sub.trim() === "") throw new UsageError("--sub: must not be empty");

  const scopes = values.scope ?? ["pinboard:worker"];
  for (const scope of scopes) {
    if (!SCOPES.has(scope))
      throw new UsageError(`--scope: expected pinboard:worker or pinboard:operator, got ${scope}`);
  }

  const ports = list(values.ports)?.map((p) => integer("--ports", p));
  const claim = pinboardClaimSchema.safeParse({
    namespaces: list(values.namespaces),
    allowedBackendHosts: list(values.hosts),
    ...(ports !== undefined && { allowedPorts: ports }),
    ...(values.hostnames !== undefined && { hostnames: list(values.hostnames) }),
    ...(values.envs !== undefined && { envs: list(values.envs) }),
  });
  if (!claim.success) {
    const issue = claim.error.issues[0];
    const flag = { namespaces: "--namespaces", allowedBackendHosts: "--hosts", allowedPorts: "--ports" }[
      String(issue?.path[0])
    ];
    throw new UsageError(`${flag ?? `--${String(issue?.path[0])}`}: ${issue?.message ?? "invalid"}`);
  }

  return {
    secret,
    sub: values.sub,
    ...(values.account !== undefined && { account: values.account }),
    scopes: [...new Set(scopes)],
    pinboard: claim.data,
    ttlSeconds: integer("--ttl", values.ttl),
    ...(values.issuer !== undefined && { issuer: values.issuer }),
    ...(values.audience !== undefined && { audience: values.audience }),
  };
}

async function main(): Promise<number> {
  let options: MintOptions | "help";
  try {
    options = parse(process.argv.slice(2), process.env);
  } catch (err) {
    // parseArgs reports unknown flags and missing values as TypeErrors with a code.
    const message = err instanceof Error ? err.message : String(err);
    process.stderr.write(`mint-credential: ${message}\n\n${USAGE}`);
    return 2;
  }
  if (options === "help") {
    process.stdout.write(USAGE);
    return 0;
  }
  process.stdout.write(`${await mintCredential(options)}\n`);
  return 0;
}

if (isProcessEntry(import.meta.url)) process.exitCode = await main();
