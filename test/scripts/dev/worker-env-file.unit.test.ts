import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { unstable_getVarsForDev } from "wrangler";
import { EnvFileError, envFileText, writeWorkerEnvFile } from "../../../scripts/dev/worker-env-file.ts";

/**
 * The env file `npm run dev` hands wrangler instead of `--var` arguments (scripts/dev/worker-env-file.ts),
 * read back by wrangler's own loader (dotenv, then dotenv-expand): every value must arrive as it was.
 */

const scratch = await mkdtemp(join(tmpdir(), "pinboard-env-file-test-"));
afterAll(() => rm(scratch, { recursive: true, force: true }));

/** What the Worker's env gets from `wrangler dev --env-file <file>`. */
async function readBack(text: string): Promise<Record<string, string>> {
  const file = join(scratch, `vars-${Math.random().toString(36).slice(2)}.env`);
  await writeFile(file, text);
  const bindings = unstable_getVarsForDev(undefined, [file], {}, undefined, true) as Record<
    string,
    { type: string; value: string }
  >;
  return Object.fromEntries(Object.entries(bindings).map(([name, binding]) => [name, binding.value]));
}

describe("the Worker's env file", () => {
  it("reaches wrangler byte for byte, whatever the value holds", async () => {
    const vars: Record<string, string> = {
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a literal ${PATH} that dotenv-expand must leave alone is the point
      PINBOARD_PASSPORT_SECRET: "s3cret-$HOME-${PATH}-$-\\$-\\\\$-end\\",
      UPSTASH_REDIS_REST_TOKEN: "tok'en with `ticks` and 'quotes'",
      PINBOARD_PASSPORT_ISSUER: 'it\'s "quoted"',
      PINBOARD_PASSPORT_AUDIENCE: " spaced # not a comment ",
      PINBOARD_DATA_PLANE_RULES: '{"/threads": {"scopes": ["threads:write"]}, "*": {"scopes": []}}',
      PINBOARD_BASE_PATH: "\\n stays two characters",
      PINBOARD_PREFIX: "日本語:=:",
      PINBOARD_LOG_LEVEL: "",
    };
    expect(await readBack(envFileText(vars))).toEqual(vars);
  });

  it("refuses a value it cannot write faithfully, naming the variable", () => {
    expect(() => envFileText({ PINBOARD_PASSPORT_JWKS: "{\n}" })).toThrow(
      new EnvFileError("PINBOARD_PASSPORT_JWKS", "with a line break; put it on one line"),
    );
    expect(() => envFileText({ PINBOARD_PASSPORT_ISSUER: "a'b\"c`d" })).toThrow(
      /^PINBOARD_PASSPORT_ISSUER: npm run dev cannot hand wrangler dev a value holding all three quote characters/,
    );
  });

  it("is written 0600 in a private directory and removed with it", async () => {
    const file = await writeWorkerEnvFile({ PINBOARD_PASSPORT_SECRET: "x".repeat(32) });
    expect((await stat(file.path)).mode & 0o777).toBe(0o600);
    expect((await stat(dirname(file.path))).mode & 0o777).toBe(0o700);
    expect(await readFile(file.path, "utf8")).toBe(`PINBOARD_PASSPORT_SECRET='${"x".repeat(32)}'\n`);
    await file.remove();
    await file.remove();
    await expect(stat(dirname(file.path))).rejects.toThrow(/ENOENT/);
  });
});
