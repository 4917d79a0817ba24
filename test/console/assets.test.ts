import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { consoleAssets } from "../../scripts/console-assets.ts";
import { CONSOLE_CSP, CONSOLE_HTML } from "../../src/console/assets.generated.ts";
import { startTestPinboard, type TestPinboard } from "../support/pinboard-app.ts";
import { type PinboardProcess, startPinboardProcess } from "../support/pinboard-process.ts";
import { startTestRedis, type TestRedis } from "../support/redis.ts";

/**
 * The console page as served: the committed bundle is what `npm run build:console` makes of
 * src/console/page/ today, its CSP allows exactly its inline script and style, and both the
 * in-process app (under a base path) and the Node entry serve it at {basePath}/console without a
 * credential, never taking it for a data-plane path.
 */

let t: TestRedis, pb: TestPinboard, node: PinboardProcess;

beforeAll(async () => {
  t = await startTestRedis();
  pb = await startTestPinboard(t, { PINBOARD_BASE_PATH: "/pb" });
  node = await startPinboardProcess({ redis: t, env: { PINBOARD_PREFIX: "node:" } });
});
afterAll(async () => {
  await node?.stop();
  await pb?.close();
  await t?.stop();
});

const hashOf = (text: string) => `'sha256-${createHash("sha256").update(text, "utf8").digest("base64")}'`;
const between = (html: string, open: string, close: string) =>
  html.slice(html.indexOf(open) + open.length, html.indexOf(close));

describe("the console's assets", () => {
  it("are current: src/console/assets.generated.ts is what npm run build:console writes", async () => {
    const committed = readFileSync(new URL("../../src/console/assets.generated.ts", import.meta.url), "utf8");
    expect(await consoleAssets()).toBe(committed);
  });

  it("stay under 100 KiB gzip, the page with its script and style", () => {
    const gzipped = gzipSync(CONSOLE_HTML, { level: 9 }).length;
    expect(gzipped).toBeLessThan(100 * 1024);
    // The budget is one page load on a slow link; the page is far from it (docs/console.md).
    expect(gzipped).toBeGreaterThan(5 * 1024);
  });

  it("carry a CSP that allows the inline script and style by hash, this origin, and nothing else", () => {
    const script = between(CONSOLE_HTML, "<script>", "</script>");
    const style = between(CONSOLE_HTML, "<style>", "</style>");
    expect(script.length).toBeGreaterThan(1000);
    expect(CONSOLE_CSP).toBe(
      `default-src 'none'; script-src ${hashOf(script)}; style-src ${hashOf(style)}; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'`,
    );
    // One script and one style: nothing the CSP would block, nothing fetched from elsewhere.
    expect(CONSOLE_HTML.match(/<script/g)).toHaveLength(1);
    expect(CONSOLE_HTML).not.toMatch(/<(link|img|iframe|object|embed)\b|\b(src|href)=/i);
  });

  it("is served at {basePath}/console by the app and by the Node entry, with its headers", async () => {
    for (const res of [await pb.call("GET", "/pb/console"), await fetch(`${node.url}/console`)]) {
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
      expect(res.headers.get("content-security-policy")).toBe(CONSOLE_CSP);
      expect(res.headers.get("x-content-type-options")).toBe("nosniff");
      expect(await res.text()).toBe(CONSOLE_HTML);
    }
    // Below /console is the data plane's, as before: namespace /console, id x.
    const below = await fetch(`${node.url}/console/x`);
    expect(below.status).toBe(404);
    expect(await below.json()).toEqual({ error: "unknown namespace" });
  });
});
