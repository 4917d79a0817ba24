import { type CheckContext, detailText, INVALID_ATTESTATION, INVALID_PROXY_SECRET, isDetail } from "./context.ts";
import { type Answer, describeAnswer } from "./worker-client.ts";

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * The fields of a stats answer Pinboard and the CLI read, each checked only when present (any JSON
 * object is a valid answer): what is wrong with them, or [] when nothing is.
 */
export function statsProblems(stats: Record<string, unknown>): string[] {
  const problems: string[] = [];
  const typed = (key: string, type: "number" | "boolean") => {
    if (key in stats && typeof stats[key] !== type) problems.push(`${key} is not a ${type}`);
  };
  typed("headroom", "number");
  typed("draining", "boolean");
  typed("degraded", "boolean");
  typed("leaseHealthy", "boolean");
  if ("namespaces" in stats && !isObject(stats.namespaces)) problems.push("namespaces is not an object");
  if ("process" in stats) {
    const p = stats.process;
    if (!isObject(p)) problems.push("process is not an object");
    else
      for (const key of ["uptimeMs", "rssBytes"] as const)
        if (key in p && typeof p[key] !== "number") problems.push(`process.${key} is not a number`);
  }
  if ("instances" in stats) {
    const list = stats.instances;
    if (!Array.isArray(list)) problems.push("instances is not an array");
    else if (!list.every((item) => isObject(item) && typeof item.ns === "string"))
      problems.push("an item of instances is not an object with its ns");
    else if (!list.every((item) => ["inflight", "sockets"].every((k) => !(k in item) || typeof item[k] === "number")))
      problems.push("an item's inflight or sockets is not a number");
  }
  return problems;
}

/** GET /_pinned/stats: refused without an attestation; with one, a JSON object of the right shape. */
export async function statsChecks(ctx: CheckContext): Promise<void> {
  const target = "/_pinned/stats";
  const bare = await ctx.client.call({ method: "GET", target, attestation: null });
  ctx.expect(
    "stats",
    "stats without an attestation are refused",
    bare,
    isDetail(bare, 403, INVALID_ATTESTATION),
    detailText(403, INVALID_ATTESTATION),
  );
  const answer = await ctx.client.call({ method: "GET", target, attestation: "valid" });
  const expected =
    "200 with a JSON object (headroom number, draining boolean, instances [{ns, …}], process {uptimeMs, rssBytes})";
  if (answer.kind !== "answered" || answer.status !== 200 || !isObject(answer.json)) {
    ctx.fail("stats", "attested stats are a JSON object", describeAnswer(answer), expected);
    return;
  }
  const problems = statsProblems(answer.json);
  if (problems.length > 0)
    ctx.fail(
      "stats",
      "attested stats have the fields' types",
      `${describeAnswer(answer)}: ${problems.join("; ")}`,
      expected,
    );
  else ctx.pass("stats", "attested stats are a JSON object with the fields' types");
}

type Answered = Extract<Answer, { kind: "answered" }>;

/** 200 {"ok":true} (or any 200) or 202: the wake took; anything else says the route is not mounted. */
function wakeTook(answer: Answer): answer is Answered {
  return answer.kind === "answered" && (answer.status === 200 || answer.status === 202);
}

/**
 * POST {ns}/{id}/_wake, mounted only on workers with a durability store: answered 200
 * {"ok":true} or 202 {"activating":true} when mounted; any other answer is reported as not
 * mounted. A mounted one must still refuse a call without an attestation.
 */
export async function wakeChecks(ctx: CheckContext): Promise<void> {
  const target = ctx.target(ctx.nextId(), "/_wake");
  const epoch = ctx.nextEpoch();
  const bare = await ctx.client.call({ method: "POST", target, epoch, attestation: null });
  const answer = await ctx.client.call({ method: "POST", target, epoch, attestation: "valid" });
  if (!wakeTook(answer)) {
    ctx.skip("wake", "_wake", `not mounted: answered ${describeAnswer(answer)}`);
    return;
  }
  const { status, json: body } = answer;
  const pinnedBody = isObject(body) && (status === 200 ? body.ok === true : body.activating === true);
  ctx.pass(
    "wake",
    `an attested _wake is answered ${status}`,
    pinnedBody ? undefined : `body ${describeAnswer(answer)}`,
  );
  ctx.expect(
    "wake",
    "_wake without an attestation is refused",
    bare,
    isDetail(bare, 403, INVALID_ATTESTATION),
    detailText(403, INVALID_ATTESTATION),
  );
}

/** 200 {"fired": boolean} or 202 {"fired": false, "running": true}. */
function alarmAnswered(answer: Answer): boolean {
  if (answer.kind !== "answered" || !isObject(answer.json)) return false;
  const body = answer.json;
  if (answer.status === 200) return typeof body.fired === "boolean";
  return answer.status === 202 && body.fired === false && body.running === true;
}

/**
 * POST {ns}/{id}/_alarm, which only pinned-js mounts: with the secret 200 {"fired": …} (or 202
 * {"fired":false,"running":true}); without it 403 {"detail":"invalid proxy secret"}. A worker that
 * answers neither is reported as not mounting it.
 */
export async function alarmChecks(ctx: CheckContext): Promise<void> {
  const target = ctx.target(ctx.nextId(), "/_alarm");
  const epoch = ctx.nextEpoch();
  const bare = await ctx.client.call({ method: "POST", target, epoch, attestation: "valid" });
  const answer = await ctx.client.call({ method: "POST", target, epoch, attestation: "valid", proxySecret: "own" });
  const guarded = isDetail(bare, 403, INVALID_PROXY_SECRET);
  if (!alarmAnswered(answer) && !guarded) {
    ctx.skip("alarm", "_alarm", `not mounted: answered ${describeAnswer(answer)}`);
    return;
  }
  ctx.expect(
    "alarm",
    "_alarm without Pinboard-Proxy-Secret is refused",
    bare,
    guarded,
    detailText(403, INVALID_PROXY_SECRET),
  );
  ctx.expect(
    "alarm",
    '_alarm with the secret is answered 200 {"fired": boolean}',
    answer,
    alarmAnswered(answer),
    '200 {"fired": boolean} or 202 {"fired":false,"running":true}',
  );
}
