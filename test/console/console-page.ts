import { existsSync } from "node:fs";
import { join } from "node:path";
import type { Page } from "playwright-core";
import type { Fleet } from "../support/fleet.ts";

/** Debian's chromium (`apt-get install chromium`, which .ci/run does). */
export const CHROMIUM = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].find((path) => existsSync(path));
/** Where screenshots go (docs/console/ holds them), when set. */
export const SHOTS = process.env.CONSOLE_SCREENSHOTS;

export async function screenshot(page: Page, name: string): Promise<void> {
  if (SHOTS) await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

export async function signIn(page: Page, url: string, token: string): Promise<void> {
  await page.goto(`${url}/console`);
  await page.getByLabel("Operator credential").fill(token);
  await page.getByRole("button", { name: "Sign in" }).click();
}

/** An operator route's JSON, asked directly (what the page should agree with). */
export async function operatorGet(fleet: Fleet, path: string): Promise<unknown> {
  const answer = await fetch(`${fleet.pb.url}${path}`, {
    headers: { authorization: `Bearer ${await fleet.pb.operatorCredential()}` },
  });
  if (answer.status !== 200) throw new Error(`${path}: ${answer.status} ${await answer.text()}`);
  return answer.json();
}
