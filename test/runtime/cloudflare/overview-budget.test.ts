import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OVERVIEW_BUDGET } from "../../../src/operator/overview-walk.ts";
import { type ChallengeServer, startChallengeServer } from "../../support/challenge-server.ts";
import { credential } from "../../support/pinboard-app.ts";
import { startTestRedis, type TestRedis } from "../../support/redis.ts";
import { registerBody } from "../../support/registration.ts";
import { putRows } from "../../support/rows.ts";
import { startWorkersEntry, type WorkersEntry } from "../../support/workerd-entry.ts";

/**
 * GET /registry/overview on the Workers entry over 60,000 placements: each request stays within
 * its budget of Redis round trips (each one REST request, a subrequest of the Worker, of which the
 * Free plan allows 50) whatever the filters match, answers a `cursor` where it stopped, and the
 * requests that follow the cursors see every placement exactly once.
 */

const ROWS = 60_000;
/** The walk's round trips, plus what every overview reads besides: records, spent headroom, fleet check. */
const MAX_SUBREQUESTS = OVERVIEW_BUDGET.roundTrips + 6;

let t: TestRedis, wk: WorkersEntry, worker: ChallengeServer, op: string, sessionId: string;

beforeAll(async () => {
  t = await startTestRedis();
  // A lease longer than the file, so the worker stays live without heartbeats.
  [wk, worker, op] = await Promise.all([
    startWorkersEntry({ redis: t, env: { PINBOARD_LEASE_TTL_MS: "600000" } }),
    startChallengeServer(),
    credential("pinboard:operator"),
  ]);
  const token = await credential("pinboard:worker");
  const res = await fetch(`${wk.url}/registry/register`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(registerBody(worker, { namespaces: ["/budget", "/other"] })),
  });
  expect(res.status).toBe(200);
  sessionId = ((await res.json()) as { sessionId: string }).sessionId;
  const rows = Array.from({ length: ROWS }, (_, i) => ({
    id: `row-${String(i).padStart(6, "0")}`,
    row: { sessionId, epoch: "1", tag: i === ROWS - 7 ? "needle" : "" },
  }));
  await putRows(t, "/budget", rows);
});
afterAll(async () => {
  await wk?.stop();
  await worker?.close();
  await t?.stop();
});

interface Answer {
  namespaces: Array<{ namespace: string; entries: Array<{ id: string; tag?: string }> }>;
  cursor?: string;
}

/** Every request of a walk from `query` to the answer without a cursor, with the REST requests each made. */
async function walk(query: string): Promise<Array<{ answer: Answer; subrequests: number }>> {
  const pages: Array<{ answer: Answer; subrequests: number }> = [];
  let cursor: string | undefined;
  do {
    const before = wk.bridge.requests();
    const sep = query ? "&" : "";
    const res = await fetch(`${wk.url}/registry/overview?${query}${cursor ? `${sep}cursor=${cursor}` : ""}`, {
      headers: { authorization: `Bearer ${op}` },
    });
    expect(res.status).toBe(200);
    const answer = (await res.json()) as Answer;
    pages.push({ answer, subrequests: wk.bridge.requests() - before });
    cursor = answer.cursor;
    expect(pages.length).toBeLessThan(100);
  } while (cursor !== undefined);
  return pages;
}

const entriesOf = (pages: Array<{ answer: Answer }>) =>
  pages.flatMap((p) => p.answer.namespaces.flatMap((n) => n.entries));

describe("GET /registry/overview over 60,000 placements", () => {
  it("with a tag that matches one row: every request within its budget, a cursor to go on, the row found once", async () => {
    const pages = await walk("tag=needle");
    expect(pages.length).toBeGreaterThan(1);
    for (const { subrequests } of pages) expect(subrequests).toBeLessThanOrEqual(MAX_SUBREQUESTS);
    expect(pages.slice(0, -1).every((p) => typeof p.answer.cursor === "string")).toBe(true);
    expect(entriesOf(pages)).toEqual([{ id: `row-${String(ROWS - 7).padStart(6, "0")}`, sessionId, tag: "needle" }]);
  });

  it("without filters: every placement exactly once across the requests, each within its budget", async () => {
    const pages = await walk("");
    for (const { subrequests } of pages) expect(subrequests).toBeLessThanOrEqual(MAX_SUBREQUESTS);
    const ids = entriesOf(pages).map((e) => e.id);
    expect(ids.length).toBe(ROWS);
    expect(new Set(ids).size).toBe(ROWS);
  });

  it("paged with limit: pages of at most `limit`, within the budget, the prefix's rows exactly once", async () => {
    const pages = await walk("limit=1000&ns=/budget&prefix=row-01");
    for (const { answer, subrequests } of pages) {
      expect(subrequests).toBeLessThanOrEqual(MAX_SUBREQUESTS);
      expect(entriesOf([{ answer }]).length).toBeLessThanOrEqual(1000);
    }
    const ids = entriesOf(pages).map((e) => e.id);
    expect(ids.length).toBe(10_000);
    expect(new Set(ids).size).toBe(10_000);
  });
});
