/**
 * The CLI's help texts: one overview and one page per command (`pinboard <command> --help`).
 */

export const COMMANDS = [
  "workers",
  "overview",
  "stats",
  "health",
  "wind-down",
  "drain",
  "undrain",
  "audit",
  "sweep-now",
] as const;
export type CommandName = (typeof COMMANDS)[number];

export function isCommand(value: string): value is CommandName {
  return (COMMANDS as readonly string[]).includes(value);
}

const GLOBALS = `Global options:
  --url <url>      Pinboard's URL with its base path (default $PINBOARD_URL or http://127.0.0.1:8787)
  --token <jwt>    operator credential, scope pinboard:operator (default $PINBOARD_OPERATOR_TOKEN)
  --json           print the server's answer as JSON instead of a table
  -h, --help       show help`;

const SUMMARY = `usage: pinboard <command> [arguments] [options]

Operate a Pinboard fleet through its operator endpoints.

Commands:
  serve                            run Pinboard itself (the Node entry, as \`npm start\`), configured by
                                   PORT, HOST, REDIS_URL and the PINBOARD_* variables
  mint-credential [--secret-file <path>] [--scope pinboard:operator] [--namespaces /a,/b]
                                   print a credential signed with PINBOARD_PASSPORT_SECRET or the
                                   file's secret (offline; --help lists flags)
  check-worker [--listen <host:port>] [--json] -- <worker command> [args…]
                                   check a worker against the worker contract, acting as its
                                   Pinboard: a line per check, exit 1 on a failure (--help lists flags)
  workers                          live workers, sorted by hostname then session
  overview [--ns /x] [--prefix p] [--tag t]
                                   workers, bindings and live placements (filters ANDed)
  stats                            each live worker's own /_pinned/stats
  health                           this node's readiness, resolutions, connections and cold start
  wind-down <namespace> [id] --deadline <seconds|none> [--env e]
                                   fence a placement (or a whole namespace) and notify its owner
  drain <clientId> [--deadline <seconds>]
                                   cordon a client, or force its release after the deadline
  undrain <clientId>               revoke a client's drain
  audit [--limit N] [--kind action|event] [--before <cursor>]
                                   the audit trail: operator actions and fleet events, newest first
  sweep-now                        run one sweeper pass against Redis now (self-hosting)

${GLOBALS}

Exit status: 0 on success, 1 when the server refuses or cannot be reached (or, for health, the
node is not ready), 2 on a usage error. Refusals print the server's error, then hint lines.
Run "pinboard help <command>" or "pinboard <command> --help" for a command's details.
`;

const PAGES: Record<CommandName, string> = {
  workers: `usage: pinboard workers [--json]

GET /registry/workers: the live workers the credential may see (namespaces filtered to its
claims), as SESSION CLIENT HOSTNAME NAMESPACES HEADROOM DRAINING DEGRADED EXPIRES-IN.
Times are relative to now in seconds.`,
  overview: `usage: pinboard overview [--ns <namespace>] [--prefix <id prefix>] [--tag <owner tag>] [--json]

GET /registry/overview: workers, hostname/env bindings (hostname-aware mode) and live placements
grouped by namespace. Filters are ANDed: --ns keeps one namespace, --prefix and --tag filter
placements (untagged placements never match --tag). Placements name their owner by CLIENT (its
clientId); --json keeps the session ids.

  pinboard overview --ns /threads --prefix H~ --tag ws:W`,
  stats: `usage: pinboard stats [--json]

GET /registry/stats: each live worker's /_pinned/stats (instances, inflight, sockets, headroom,
uptime), or "unreachable" when the worker did not answer within 3 s.`,
  health: `usage: pinboard health [--json]

GET /registry/health and GET /readyz: whether the node that answers is ready, its resolutions by
outcome, open connections, the remaining cold-start window, uptime and memory. A node that is not
ready (it cannot reach Redis, does not hold the fleet license, or is draining) still answers, but
its cold start is unknown: health then says why on stderr and exits with status 1.`,
  "wind-down": `usage: pinboard wind-down <namespace> [id] --deadline <seconds|none> [--env <env>] [--json]

POST /registry/wind_down: stamps the placement's wind-down fence at now + max(deadline, lease)
and queues a wind_down message to its owner; without an id, every placement of the namespace
(in that env). --deadline none clears the fence. --env is required in hostname-aware mode and
refused otherwise.

  pinboard wind-down /threads t-42 --deadline 60
  pinboard wind-down /threads --deadline none --env prod`,
  drain: `usage: pinboard drain <clientId> [--deadline <seconds>] [--json]

POST /registry/drain: without a deadline the client is cordoned (no new placements, nothing
forced); with one its placements are released at now + max(deadline, lease). The worker learns
it at its next heartbeat.`,
  undrain: `usage: pinboard undrain <clientId> [--json]

POST /registry/undrain: revokes the client's drain (a cordon or a timed drain).`,
  audit: `usage: pinboard audit [--limit <1-500>] [--kind action|event] [--before <cursor>] [--json]

GET /registry/audit: the audit trail, newest first (--limit, default 100): operator actions
(wind_down, clear_fence, drain, undrain, sweep) with who did them and how (api, console, cli),
and fleet events (worker registered, died, drained, deregistered, ejected, re-admitted), within
the credential's claims. Times are local. The server looks at a bounded part of the trail per
request; the CLI follows its cursor (up to 20 requests) to fill --limit, and names the cursor
of older entries: --before <cursor> lists them. --json prints the entries with that cursor.

  pinboard audit --kind action --limit 20`,
  "sweep-now": `usage: pinboard sweep-now [--json]

Runs one sweeper pass (GC, resurrection, orphan scan, durability wakes, due alarms) directly
against Redis and prints its report. It reads the server's configuration from the environment
(REDIS_URL, REDIS_CLUSTER_NODES or UPSTASH_REDIS_REST_URL/TOKEN, PINBOARD_PREFIX,
PINBOARD_SHARDS, PINBOARD_HOSTNAME_AWARE, PINBOARD_FLEET_EPOCH, PINBOARD_LEASE_TTL_MS,
PINBOARD_DURABLE_*, …); one of the three Redis settings is required, and a configuration that
differs from the serving fleet's is refused. A pass takes the sweeper lease like every node;
while another sweeper holds it, sweep-now waits 5 s and then gives up (exit status 1).`,
};

const LOCAL_OPTIONS = `Options:
  --json           print the report as JSON
  -h, --help       show help`;

/** The overview page, or one command's page with the options it takes appended. */
export function usage(command?: CommandName): string {
  if (command === undefined) return SUMMARY;
  return `${PAGES[command]}\n\n${command === "sweep-now" ? LOCAL_OPTIONS : GLOBALS}\n`;
}
