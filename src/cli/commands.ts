import { OPERATOR_ROUTES } from "../operator/route-table.ts";
import type { Command, Globals } from "./args.ts";
import { OperatorClient } from "./client.ts";
import { notReadyLines } from "./explain.ts";
import { readWholeOverview } from "./overview-pages.ts";
import { renderHealth, renderOverview, renderStats, renderWorkers } from "./render.ts";
import { renderAudit } from "./render-audit.ts";
import {
  type AuditReply,
  auditReply,
  drainReply,
  healthReply,
  overviewReply,
  statsReply,
  undrainReply,
  windDownReply,
  workersReply,
} from "./replies.ts";

/** What a command prints on stdout, lines for stderr when it failed, and its exit status when it is not 0. */
export interface Output {
  text: string;
  stderr?: string[];
  exitCode?: number;
}

export interface CommandContext {
  env: Record<string, string | undefined>;
  /** Local clock in ms, for relative times. */
  now(): number;
  fetch?: typeof fetch;
}

const json = (value: unknown): Output => ({ text: JSON.stringify(value, null, 2) });

/**
 * Runs one command. Read commands print the server's answer as it came with --json; otherwise
 * the answer is validated (zod) and rendered. Errors (HTTP, unreachable, unexpected answers,
 * usage errors of sweep-now) propagate to main, which maps them to messages and exit statuses.
 */
export async function runCommand(command: Command, globals: Globals, ctx: CommandContext): Promise<Output> {
  if (command.name === "sweep-now") {
    // Loaded on demand: it pulls in the whole server core (Redis clients, scripts, sweeper).
    const { renderSweepReport, sweepNow } = await import("./sweep-now.ts");
    const outcome = await sweepNow(ctx.env);
    const out = globals.json ? json(outcome.report) : { text: renderSweepReport(outcome) };
    return outcome.report.ran ? out : { ...out, exitCode: 1 };
  }

  const client = operatorClient(globals, ctx);
  const check = OperatorClient.check;
  switch (command.name) {
    case "workers": {
      const answer = await client.get(OPERATOR_ROUTES.workers.path);
      return globals.json
        ? json(answer)
        : { text: renderWorkers(check(OPERATOR_ROUTES.workers.path, workersReply, answer), ctx.now()) };
    }
    case "overview": {
      const answer = await readWholeOverview(client, { ns: command.ns, prefix: command.prefix, tag: command.tag });
      return globals.json
        ? json(answer)
        : { text: renderOverview(check(OPERATOR_ROUTES.overview.path, overviewReply, answer), ctx.now()) };
    }
    case "stats": {
      const answer = await client.get(OPERATOR_ROUTES.stats.path);
      return globals.json ? json(answer) : { text: renderStats(check(OPERATOR_ROUTES.stats.path, statsReply, answer)) };
    }
    case "health": {
      // /registry/health answers even without Redis; only /readyz says whether its numbers hold.
      const answer = await client.get(OPERATOR_ROUTES.health.path);
      const ready = await client.ready();
      const out = globals.json
        ? json(answer)
        : { text: renderHealth(check(OPERATOR_ROUTES.health.path, healthReply, answer), ready) };
      return ready ? out : { ...out, stderr: notReadyLines(`${client.base}/readyz`), exitCode: 1 };
    }
    case "wind-down": {
      const body = {
        namespace: command.namespace,
        ...(command.id !== undefined ? { id: command.id } : {}),
        deadline: command.deadline,
        ...(command.env !== undefined ? { env: command.env } : {}),
      };
      const answer = await client.post(OPERATOR_ROUTES.windDown.path, body);
      if (globals.json) return json(answer);
      const { queued } = check(OPERATOR_ROUTES.windDown.path, windDownReply, answer);
      return { text: describeWindDown(command, queued) };
    }
    case "drain": {
      const answer = await client.post(OPERATOR_ROUTES.drain.path, {
        clientId: command.clientId,
        deadline: command.deadline,
      });
      if (globals.json) return json(answer);
      check(OPERATOR_ROUTES.drain.path, drainReply, answer);
      return {
        text:
          command.deadline === null
            ? `client ${command.clientId} cordoned: no new placements, nothing forced (undrain to revoke)`
            : `client ${command.clientId} draining: ` +
              `its placements are released after max(${command.deadline}s, one lease)`,
      };
    }
    case "audit":
      return auditCommand(client, command, globals);
    case "undrain": {
      const answer = await client.post(OPERATOR_ROUTES.undrain.path, { clientId: command.clientId });
      if (globals.json) return json(answer);
      const { revoked } = check(OPERATOR_ROUTES.undrain.path, undrainReply, answer);
      return {
        text: revoked
          ? `client ${command.clientId} undrained`
          : `client ${command.clientId} was not drained: nothing revoked`,
      };
    }
  }
}

function operatorClient(globals: Globals, ctx: CommandContext): OperatorClient {
  return new OperatorClient({
    url: globals.url,
    token: globals.token ?? "",
    ...(ctx.fetch ? { fetch: ctx.fetch } : {}),
  });
}

/** Requests one `pinboard audit` makes at most to fill its page (20 × 500 entries looked at). */
const AUDIT_REQUESTS = 20;

/**
 * A page of the audit trail: --limit entries (the server's default 100), of --kind, older than
 * --before. The server looks at a bounded part of the trail per request and may answer fewer
 * with a cursor (a narrow credential); the page follows it, up to AUDIT_REQUESTS requests.
 */
async function auditCommand(
  client: OperatorClient,
  command: Extract<Command, { name: "audit" }>,
  globals: Globals,
): Promise<Output> {
  const limit = command.limit ?? 100;
  const page: AuditReply = { entries: [] };
  let before = command.before;
  for (let request = 0; request < AUDIT_REQUESTS; request++) {
    const raw = await client.get(OPERATOR_ROUTES.audit.path, {
      limit: String(limit - page.entries.length),
      kind: command.kind,
      before,
    });
    const answer = OperatorClient.check(OPERATOR_ROUTES.audit.path, auditReply, raw);
    page.entries.push(...answer.entries);
    before = answer.cursor;
    if (before === undefined || page.entries.length >= limit) break;
  }
  if (before !== undefined) page.cursor = before;
  return globals.json ? json(page) : { text: renderAudit(page) };
}

function describeWindDown(command: Extract<Command, { name: "wind-down" }>, queued: boolean | number): string {
  const where = `${command.namespace}${command.env !== undefined ? ` (env ${command.env})` : ""}`;
  const what =
    command.deadline === null
      ? "wind-down fence cleared"
      : `wind-down fence set at max(${command.deadline}s, one lease)`;
  if (typeof queued === "number") {
    return queued === 0
      ? `no live placements in ${where}: nothing queued`
      : `${what} for ${queued} placement(s) in ${where}; owners notified`;
  }
  if (!queued) return `no placement ${command.id ?? ""} in ${where}: nothing queued`;
  return `${what} for ${command.id ?? ""} in ${where}; owner notified`;
}
